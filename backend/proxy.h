#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "backend.pb.h"
#include "proxy_config.pb.h"

namespace tessera {

// What the backend needs of a running proxy: run batches, drain, stop, and
// (emulated devices) learn its neighbours' slowdown. ProxyHandle is the
// process-backed one; tests use in-memory fakes.
// One query's part of an operator group (see ProxyHandle::ExecuteGroup).
struct GroupMemberRequest {
  uint64_t query_id = 0;
  int start_op = 0;
  int end_op = 0;
  // The query as the frontend sent it: its model, and its inputs, which
  // are staged for its first range (start_op 0). Must outlive the call.
  const BatchRequest* query = nullptr;
  // end_op is the model's last operator: the query's outputs come back.
  bool last = false;
};

struct GroupResponse {
  absl::Status status;
  // Outputs of the members that ran their last range, by query id (their
  // batch_id is the query's).
  std::map<uint64_t, BatchResponse> finished;
  int64_t exec_time_us = 0;
  int64_t proxy_time_us = 0;
};

class Proxy {
 public:
  using DoneCallback = std::function<void(BatchResponse)>;
  using GroupDoneCallback = std::function<void(GroupResponse)>;
  virtual ~Proxy() = default;

  // Runs `batch`; `done` is called exactly once, possibly on another
  // thread, with the outputs or a failure status. Never blocks on the
  // device.
  virtual void Execute(BatchRequest batch, DoneCallback done) = 0;
  // Runs an operator group on the whole device (devices with a group
  // runner: the emulated A100); `done` is called exactly once, possibly on
  // another thread. Groups run one at a time and never beside batches: the
  // caller (OverlapProxy) sends the next only after `done`. Default:
  // UNIMPLEMENTED.
  virtual void ExecuteGroup(std::vector<GroupMemberRequest> members,
                            GroupDoneCallback done) {
    (void)members;
    GroupResponse response;
    response.status =
        absl::UnimplementedError("this proxy runs no operator groups");
    done(std::move(response));
  }
  // Waits up to `timeout` for in-flight and queued batches to finish.
  virtual bool Drain(absl::Duration timeout) = 0;
  // The gpulet no longer serves `models` (unloaded): the proxy frees them
  // and serves the others on; batches of them sent from now on fail.
  // Batches already sent still run. Default: nothing (kept in memory).
  virtual void DropModels(const std::vector<std::string>& models) {
    (void)models;
  }
  // Stops the proxy; batches still pending fail with UNAVAILABLE.
  // Idempotent.
  virtual void Stop(absl::Duration grace = absl::Seconds(5)) = 0;
  virtual bool alive() const = 0;
  virtual pid_t pid() const = 0;
  // What the proxy reported it runs with (models' configs left out).
  virtual const ProxyConfig& config() const = 0;
  // Per-model latencies measured while warming up.
  virtual const std::vector<MeasuredLatency>& warmup() const = 0;
  // Models the proxy could not load, with why (it serves the others).
  virtual std::map<std::string, absl::Status> failed_models() const {
    return {};
  }
  // Emulated devices: the slowdown each model suffers from what runs on
  // the other partitions of its device.
  virtual void SetInterferenceFactors(
      std::map<std::string, double> factors) = 0;
};

}  // namespace tessera
