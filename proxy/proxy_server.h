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
#include "proxy/model_runner.h"

namespace tessera {

// The proxy's control loop: receives ExecuteCommands from the backend,
// runs them on the ModelRunner over tensors in the shared region, and
// answers with ExecuteResults. One batch at a time, in arrival order.
class ProxyServer {
 public:
  // Borrows everything; all must outlive the server.
  ProxyServer(SeqPacketChannel* channel, SharedMemoryRegion* region,
              ModelRunner* runner, std::map<std::string, ModelConfig> configs)
      : channel_(channel),
        region_(region),
        runner_(runner),
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

  SeqPacketChannel* channel_;
  SharedMemoryRegion* region_;
  ModelRunner* runner_;
  std::map<std::string, ModelConfig> configs_;
};

}  // namespace tessera
