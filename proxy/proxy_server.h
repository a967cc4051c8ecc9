#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "backend.pb.h"
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
  // it polls the channel for `poll_for` (see SeqPacketChannel::Receive): a
  // command that comes within that time is taken without a wake-up. It
  // polls only while commands keep coming within `poll_for` of the last
  // one's result: after a longer idle gap it sleeps at once, until a
  // command comes within the window again.
  absl::Status Serve(absl::Duration poll_for = absl::ZeroDuration());

 private:
  absl::StatusOr<absl::Duration> RunZeros(const ModelConfig& config,
                                          int batch_size);

  SeqPacketChannel* channel_;
  SharedMemoryRegion* region_;
  ModelRunner* runner_;
  std::map<std::string, ModelConfig> configs_;
};

}  // namespace tessera
