#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backend/gpulet_spec.h"
#include "backend/gpulet_table.h"
#include "common/model_repository.h"
#include "common/poll_governor.h"
#include "config.pb.h"
#include "perfmodel/interference_model.h"
#include "perfmodel/latency_model.h"
#include "plan.pb.h"
#include "proxy_config.pb.h"

namespace tessera {

// What one backend node has, validated once at start-up: its devices, its
// model repository and, for emulated devices, the latency profiles and the
// interference model that drive them. Resolves the plan's gpulets for this
// node. Immutable after Load; thread-safe.
class BackendNode {
 public:
  // Validates `config` (ids, device kinds, gpu indices, emulated settings;
  // a cpu device without cores gets this process's) and loads the
  // repository and, when a device is emulated, the profiles under the
  // config's profile_dir.
  static absl::StatusOr<std::unique_ptr<BackendNode>> Load(
      BackendConfig config, const std::string& model_repository);

  const BackendConfig& config() const { return config_; }
  const std::string& id() const { return config_.id(); }
  const ModelRepository& repo() const { return *repo_; }
  // nullptr if the node has no such device.
  const DeviceConfig* FindDevice(const std::string& id) const;
  // Each device's memory size (0: not limited).
  std::map<std::string, int64_t> MemoryCapacities() const;
  // What GetNodeInfo answers: this node's id and devices.
  NodeInfo Describe() const;

  // This node's gpulets of `plan` (standby shadows included), by id, with
  // cores assigned on cpu devices. Fails, naming the gpulet, on a device
  // the node lacks, shares over 100 % or outside (0, 100], a model missing
  // from the repository or (emulated) its profiles, a TorchScript-less
  // model on a real device, or models that overflow a device's memory.
  absl::StatusOr<std::map<std::string, GpuletSpec>> Resolve(
      const Plan& plan) const;

  // What the proxy of `g` is told: its models' configs, device, cores and
  // threads (cpu: one per core; cuda: one), polling (cpu and cuda; emulated
  // proxies never poll), and an emulated GPU's share, time scale, noise and
  // a seed from the gpulet id.
  ProxyConfig ProxyConfigFor(const GpuletSpec& g,
                             const std::string& model_repository,
                             const PollOptions& poll) const;

  // The slowdown each model of each live gpulet suffers from its device's
  // other residents (gpulet's rule: the slowest neighbour dominates), in
  // `live`'s order; nullopt for gpulets not on an emulated device.
  std::vector<std::optional<std::map<std::string, double>>> InterferenceFactors(
      const std::vector<GpuletEntry>& live) const;

 private:
  BackendNode(BackendConfig config, std::unique_ptr<ModelRepository> repo,
              std::map<std::string, LatencyModel> emulated_latency,
              std::unique_ptr<InterferenceModel> interference);
  absl::Status ResolveDevice(const DevicePlan& dp,
                             std::map<std::string, GpuletSpec>* wanted) const;
  absl::Status CheckGpulet(const GpuletPlan& g, bool emulated) const;
  // Memory the models of `g` need on an emulated device (0 elsewhere).
  int64_t MemoryBytes(const GpuletPlan& g) const;

  const BackendConfig config_;
  const std::unique_ptr<ModelRepository> repo_;
  // Emulated devices: latency models by model (from the profiles), and how
  // co-located models interfere (none when no profile says).
  const std::map<std::string, LatencyModel> emulated_latency_;
  const std::unique_ptr<InterferenceModel> interference_;
};

}  // namespace tessera
