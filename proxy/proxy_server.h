#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "backend.pb.h"
#include "common/poll_governor.h"
#include "common/seqpacket_channel.h"
#include "common/shared_memory_region.h"
#include "proxy.pb.h"
#include "proxy/group_runner.h"
#include "proxy/model_runner.h"

namespace tessera {

// The proxy's control loop: receives ExecuteCommands (batches) and
// GroupCommands (operator groups) from the backend, runs them on the
// ModelRunner or the GroupRunner over tensors in the shared region, and
// answers with ExecuteResults and GroupResults. One at a time, in arrival
// order.
class ProxyServer {
 public:
  // Borrows everything; all must outlive the server.
  // `group_runner` may be null: the proxy then answers group commands
  // FAILED_PRECONDITION.
  ProxyServer(SeqPacketChannel* channel, SharedMemoryRegion* region,
              ModelRunner* runner, std::map<std::string, ModelConfig> configs,
              GroupRunner* group_runner = nullptr)
      : channel_(channel),
        region_(region),
        runner_(runner),
        group_runner_(group_runner),
        configs_(std::move(configs)) {}

  // Runs each model at batch 1 and at its max batch (one untimed run, then
  // `timed_runs` timed) with zero inputs placed at the start of the region;
  // returns the median execution times.
  absl::StatusOr<std::vector<MeasuredLatency>> Warmup(int timed_runs);

  // Serves until a shutdown command or the backend closes the channel
  // (both OK), or the channel fails. Before it sleeps for the next command
  // it may poll the channel (see SeqPacketChannel::Receive), as a
  // `PollGovernor` with `poll` allows: a command that comes while it polls
  // is taken without a wake-up.
  absl::Status Serve(const PollOptions& poll = PollOptions());

 private:
  absl::StatusOr<absl::Duration> RunZeros(const ModelConfig& config,
                                          int batch_size);
  absl::Status Execute(const ExecuteCommand& cmd, ExecuteResult* result);
  absl::Status RunGroup(const GroupCommand& cmd, GroupResult* result);
  // Views of tensors in the region (INVALID_ARGUMENT if one lies outside).
  absl::StatusOr<std::vector<TensorView>> InputViews(
      const google::protobuf::RepeatedPtrField<ShmTensor>& tensors) const;
  absl::Status CheckOutputArea(uint64_t offset, uint64_t capacity) const;
  void DescribeOutputs(
      const std::vector<TensorView>& outputs,
      google::protobuf::RepeatedPtrField<ShmTensor>* described) const;

  SeqPacketChannel* channel_;
  SharedMemoryRegion* region_;
  ModelRunner* runner_;
  GroupRunner* group_runner_;
  std::map<std::string, ModelConfig> configs_;
};

}  // namespace tessera
