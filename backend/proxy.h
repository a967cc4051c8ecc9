#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "backend.pb.h"
#include "proxy_config.pb.h"

namespace tessera {

// What the backend needs of a running proxy: run batches, drain, stop, and
// (emulated devices) learn its neighbours' slowdown. ProxyHandle is the
// process-backed one; tests use in-memory fakes.
class Proxy {
 public:
  using DoneCallback = std::function<void(BatchResponse)>;
  virtual ~Proxy() = default;

  // Runs `batch`; `done` is called exactly once, possibly on another
  // thread, with the outputs or a failure status. Never blocks on the
  // device.
  virtual void Execute(BatchRequest batch, DoneCallback done) = 0;
  // Waits up to `timeout` for in-flight and queued batches to finish.
  virtual bool Drain(absl::Duration timeout) = 0;
  // Stops the proxy; batches still pending fail with UNAVAILABLE.
  // Idempotent.
  virtual void Stop(absl::Duration grace = absl::Seconds(5)) = 0;
  virtual bool alive() const = 0;
  virtual pid_t pid() const = 0;
  // What the proxy reported it runs with (models' configs left out).
  virtual const ProxyConfig& config() const = 0;
  // Per-model latencies measured while warming up.
  virtual const std::vector<MeasuredLatency>& warmup() const = 0;
  // Emulated devices: the slowdown each model suffers from what runs on
  // the other partitions of its device.
  virtual void SetInterferenceFactors(
      std::map<std::string, double> factors) = 0;
};

}  // namespace tessera
