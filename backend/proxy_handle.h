#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "backend.pb.h"
#include "backend/proxy.h"
#include "common/poll_governor.h"
#include "common/seqpacket_channel.h"
#include "common/shared_memory_region.h"
#include "common/subprocess.h"
#include "proxy.pb.h"

namespace tessera {

// The backend's side of one proxy process: spawns it, owns its control
// channel and shared-memory region, and runs batches on it. Batch inputs are
// copied once into a free slot of the region; the proxy reads them in place
// and writes its outputs after them; the handle copies the outputs into the
// response. Thread-safe.
class ProxyHandle final : public Proxy {
 public:
  struct Options {
    std::string proxy_binary;
    // Sent to the proxy as its first command: what it serves and how.
    ProxyConfig config;
    // Batches that may sit in the proxy at once (each needs a slot).
    int num_slots = 4;
    absl::Duration startup_timeout = absl::Seconds(120);
    std::map<std::string, std::string> extra_env;
  };

  // Starts the proxy and waits until it reports ready (models loaded and
  // warmed up) or fails.
  static absl::StatusOr<std::unique_ptr<ProxyHandle>> Start(
      const Options& options);
  // Stops the proxy (see Stop()).
  ~ProxyHandle() override;

  // Runs `batch` on the proxy; `done` is called exactly once, from another
  // thread, with the outputs or a failure status. Never blocks on the
  // device: batches beyond the free slots wait in a queue. Pass the batch
  // by move: an image batch is hundreds of kilobytes.
  void Execute(BatchRequest batch, DoneCallback done) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Stages each first range's inputs in a slot of its own and sends one
  // GroupCommand; RESOURCE_EXHAUSTED if fewer slots are free than members.
  void ExecuteGroup(std::vector<GroupMemberRequest> members,
                    GroupDoneCallback done) override ABSL_LOCKS_EXCLUDED(mu_);
  // Execute() for callers that run one batch at a time (the profiler, the
  // benchmarks): waits up to `timeout` for the response. DEADLINE_EXCEEDED
  // after that (the batch still completes, unobserved).
  absl::StatusOr<BatchResponse> ExecuteAndWait(BatchRequest batch,
                                               absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Waits up to `timeout` for in-flight and queued batches to finish.
  bool Drain(absl::Duration timeout) override ABSL_LOCKS_EXCLUDED(mu_);
  // Sends the proxy a DropModelsCommand (after every batch already sent);
  // batches of these models launched later fail with UNAVAILABLE.
  void DropModels(const std::vector<std::string>& models) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the proxy to exit, then kills it if it has not after `grace`;
  // fails batches still pending with UNAVAILABLE.
  void Stop(absl::Duration grace = absl::Seconds(5)) override
      ABSL_LOCKS_EXCLUDED(mu_);

  pid_t pid() const override { return process_->pid(); }
  const Options& options() const { return options_; }
  const ProxyConfig& config() const override { return running_config_; }
  std::map<std::string, absl::Status> failed_models() const override {
    return failed_models_;
  }
  const std::vector<MeasuredLatency>& warmup() const override {
    return warmup_;
  }
  bool alive() const override ABSL_LOCKS_EXCLUDED(mu_);

  // Emulated devices: the slowdown each model suffers from what runs on
  // the other partitions of its device, sent with every batch.
  void SetInterferenceFactors(std::map<std::string, double> factors) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Pending {
    BatchRequest batch;
    DoneCallback done;
    absl::Time received;
  };
  struct Running {
    DoneCallback done;
    int slot;
    absl::Time received;
    uint64_t batch_id;
    absl::Time launched;
  };

  struct RunningGroup {
    GroupDoneCallback done;
    std::vector<int> slots;
    std::map<uint64_t, uint64_t> batch_ids;  // query id → its batch id
  };
  ProxyHandle(Options options, std::unique_ptr<Subprocess> process,
              std::unique_ptr<SeqPacketChannel> channel,
              std::unique_ptr<SharedMemoryRegion> region, size_t slot_bytes,
              std::vector<MeasuredLatency> warmup, ProxyConfig running_config,
              std::map<std::string, absl::Status> failed_models);

  // Copies `p`'s inputs into `slot` and sends the command. On failure calls
  // the callback with the error and frees the slot.
  void Launch(Pending p, int slot) ABSL_LOCKS_EXCLUDED(mu_);
  // Copies the batch's inputs into `slot` and describes them (and the
  // slot's output area) in `cmd`.
  absl::Status StageInputs(const BatchRequest& batch, int slot,
                           ExecuteCommand* cmd);
  // Answers `p` with `status` and gives its slot to the next waiting batch.
  void FailLaunch(Pending p, int slot, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Builds the group's command in `slots` (one per member).
  absl::Status StageGroup(const std::vector<GroupMemberRequest>& members,
                          const std::vector<int>& slots, GroupCommand* cmd);
  void OnGroupResult(const GroupResult& result) ABSL_LOCKS_EXCLUDED(mu_);
  // Copies outputs the proxy wrote in the region into `response`.
  absl::Status CopyOutputs(
      const google::protobuf::RepeatedPtrField<ShmTensor>& outputs,
      BatchResponse* response) const;
  // Returns `slots` to the free list, or to waiting batches.
  void ReleaseSlots(const std::vector<int>& slots) ABSL_LOCKS_EXCLUDED(mu_);
  void ReaderLoop();
  void FailAll(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  std::unique_ptr<Subprocess> process_;
  std::unique_ptr<SeqPacketChannel> channel_;
  std::unique_ptr<SharedMemoryRegion> region_;
  const size_t slot_bytes_;
  const std::vector<MeasuredLatency> warmup_;
  const ProxyConfig running_config_;
  const std::map<std::string, absl::Status> failed_models_;
  std::map<std::string, ModelConfig> configs_;

  mutable absl::Mutex mu_;
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> free_slots_ ABSL_GUARDED_BY(mu_);
  std::deque<Pending> waiting_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Running> running_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, RunningGroup> running_groups_ ABSL_GUARDED_BY(mu_);
  uint64_t next_request_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, double> interference_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dropped_ ABSL_GUARDED_BY(mu_);
  // Serialises Stop(); taken before mu_ (FailAll takes mu_ under it).
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // When the proxy last finished a batch: a batch launched earlier started
  // executing only then (the proxy runs one batch at a time).
  absl::Time last_completion_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::thread reader_;
};

// Sets `config`'s polling from `poll`.
void SetProxyPoll(const PollOptions& poll, ProxyConfig* config);

// Bytes one slot needs for the largest batch of any of `models`: inputs and
// outputs at max batch size, each 64-byte aligned.
size_t SlotBytesFor(const std::vector<ModelConfig>& models);

}  // namespace tessera
