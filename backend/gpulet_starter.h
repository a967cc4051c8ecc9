#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "backend/backend_metrics.h"
#include "backend/backend_node.h"
#include "backend/gpulet_table.h"
#include "backend/mps_daemon_manager.h"
#include "backend/proxy_launcher.h"
#include "common/poll_governor.h"
#include "overlap.pb.h"

namespace tessera {

// Starts and stops the proxies of a node's gpulets: each gpulet's proxy
// configuration for its device (cpu cores, a CUDA device's MPS share with
// its control daemon, an emulated GPU's ground truth), operator-group
// gpulets behind their node-local controller (OverlapProxy), the parallel
// start-up of a plan's new gpulets, and their drain and stop. Holds no plan
// state. Thread-safe.
class GpuletStarter {
 public:
  struct Options {
    std::string proxy_binary;
    // Proxy for emulated devices (no LibTorch; starts in milliseconds).
    std::string emulated_proxy_binary;
    int proxy_slots = 4;
    // How cpu and cuda proxies poll for the next batch before they sleep
    // (emulated proxies never poll: they share cores by design).
    PollOptions proxy_poll;
    absl::Duration proxy_startup_timeout = absl::Seconds(120);
    absl::Duration drain_timeout = absl::Seconds(30);
    // CUDA devices: MPS control daemons (see MpsDaemonManager).
    MpsDaemonManager::Options mps;
    // Operator-group gpulets (plan scheduler ABACUS, FCFS, SJF, EDF): the
    // learned group-latency predictor of this node's devices (null: such
    // gpulets fail to start).
    std::shared_ptr<const GroupPredictorProto> group_predictor;
    // Starts the proxies; null: spawn proxy processes.
    std::shared_ptr<ProxyLauncher> launcher;
  };

  // `node` and `metrics` (operator groups record into it) must outlive the
  // starter.
  GpuletStarter(Options options, const BackendNode* node,
                BackendMetrics* metrics);

  // Starts the proxies of `ids` in parallel (each loads and warms up on its
  // own); on any failure stops those that started and returns the first
  // error.
  absl::StatusOr<std::vector<GpuletEntry>> StartAll(
      const std::vector<std::string>& ids,
      const std::map<std::string, GpuletSpec>& wanted) const;
  // One gpulet's proxy, loaded and warm.
  absl::StatusOr<std::shared_ptr<Proxy>> Start(const GpuletSpec& g) const;
  // Drains `gpulets` together (up to the drain timeout), then stops them.
  void DrainAndStop(const std::vector<GpuletEntry>& gpulets) const;

 private:
  // Start() for operator-group gpulets: the proxy behind an OverlapProxy.
  absl::StatusOr<std::shared_ptr<Proxy>> StartOverlapProxy(
      const GpuletSpec& g, const ProxyHandle::Options& po) const;

  const Options options_;
  const BackendNode* const node_;
  BackendMetrics* const metrics_;
  const std::shared_ptr<ProxyLauncher> launcher_;
  // Thread-safe; mutable: starting a daemon does not change the starter.
  mutable MpsDaemonManager mps_;
};

}  // namespace tessera
