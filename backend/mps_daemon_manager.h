#pragma once

#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace tessera {

// The NVIDIA MPS control daemons of the GPUs a backend manages: one per
// GPU, each with its own pipe and log directories
// (<base>/gpu<i>/{pipe,log}), started on first use when not already
// running. Proxies reach their GPU's daemon through the environment
// ProxyEnv() returns, which also carries the proxy's own
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: a share is set per process at spawn,
// never by changing the daemon's default (set_default_active_thread_
// percentage would race between proxies starting at once). Thread-safe.
class MpsDaemonManager {
 public:
  struct Options {
    // The control binary, looked up on PATH unless it contains a '/'.
    std::string control_binary = "nvidia-cuda-mps-control";
    std::string base_dir = "/tmp/tessera-mps";
  };

  explicit MpsDaemonManager(Options options) : options_(std::move(options)) {}

  std::string PipeDir(int gpu) const;
  std::string LogDir(int gpu) const;

  // Makes sure GPU `gpu`'s control daemon runs: asks it for its server
  // list; if it does not answer, creates the directories and starts it
  // (`nvidia-cuda-mps-control -d` with CUDA_VISIBLE_DEVICES=gpu and its
  // pipe and log directories) and checks it answers.
  absl::Status Ensure(int gpu) ABSL_LOCKS_EXCLUDED(mu_);

  // Environment of a proxy running on `gpu` with `share_percent` of it.
  std::map<std::string, std::string> ProxyEnv(int gpu,
                                              double share_percent) const;

 private:
  // Runs the control binary for `gpu` with `args`, feeding `input` on
  // stdin when not empty; returns its exit code.
  absl::StatusOr<int> Control(int gpu, const std::string& args,
                              const std::string& input) const;

  const Options options_;
  absl::Mutex mu_;
  std::set<int> running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
