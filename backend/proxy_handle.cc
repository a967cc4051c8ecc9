#include "backend/proxy_handle.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "backend/batch_layout.h"
#include "common/cpu_affinity.h"
#include "common/grpc_status_util.h"
#include "common/status_macros.h"
#include "common/status_proto.h"
#include "common/tensor_layout.h"
#include "common/thread_name.h"
#include "proxy.pb.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

constexpr int kChildControlFd = 3;
constexpr int kChildShmFd = 4;

}  // namespace

void SetProxyPoll(const PollOptions& poll, ProxyConfig* config) {
  config->set_poll_window_us(absl::ToInt64Microseconds(poll.window));
  config->set_poll_idle_percent(poll.idle_budget * 100);
}

size_t SlotBytesFor(const std::vector<ModelConfig>& models) {
  size_t slot = 4096;
  for (const ModelConfig& m : models) {
    slot = std::max(slot,
                    TensorLayoutBytes(m.input(), m.max_batch_size()) +
                        TensorLayoutBytes(m.output(), m.max_batch_size()) + 64);
  }
  return AlignUp64(slot);
}

ProxyHandle::ProxyHandle(Options options, std::unique_ptr<Subprocess> process,
                         std::unique_ptr<SeqPacketChannel> channel,
                         std::unique_ptr<SharedMemoryRegion> region,
                         size_t slot_bytes, std::vector<MeasuredLatency> warmup,
                         ProxyConfig running_config,
                         std::map<std::string, absl::Status> failed_models)
    : options_(std::move(options)),
      process_(std::move(process)),
      channel_(std::move(channel)),
      region_(std::move(region)),
      slot_bytes_(slot_bytes),
      warmup_(std::move(warmup)),
      running_config_(std::move(running_config)),
      failed_models_(std::move(failed_models)) {
  for (const ModelConfig& m : options_.config.models()) configs_[m.name()] = m;
  for (int s = options_.num_slots - 1; s >= 0; --s) free_slots_.push_back(s);
  reader_ = std::thread([this] { ReaderLoop(); });
}

ProxyHandle::~ProxyHandle() { Stop(); }

absl::StatusOr<std::unique_ptr<ProxyHandle>> ProxyHandle::Start(
    const Options& options) {
  const ProxyConfig& config = options.config;
  if (config.models().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpulet '", config.gpulet_id(), "' has no models"));
  }
  const std::vector<ModelConfig> models(config.models().begin(),
                                        config.models().end());
  const size_t slot_bytes = SlotBytesFor(models);
  ASSIGN_OR_RETURN(
      auto region,
      SharedMemoryRegion::Create(("tessera-" + config.gpulet_id()).c_str(),
                                 slot_bytes * std::max(1, options.num_slots)));
  ASSIGN_OR_RETURN(auto pair, SeqPacketChannel::CreatePair());
  std::unique_ptr<SeqPacketChannel> ours = std::move(pair.first);
  std::unique_ptr<SeqPacketChannel> theirs = std::move(pair.second);

  Subprocess::Options spawn;
  spawn.argv = {options.proxy_binary,
                absl::StrCat("--control_fd=", kChildControlFd),
                absl::StrCat("--shm_fd=", kChildShmFd),
                "--gpulet_id=" + config.gpulet_id()};
  spawn.env = options.extra_env;
  spawn.inherit_fds = {{kChildControlFd, theirs->fd()},
                       {kChildShmFd, region->fd()}};
  ASSIGN_OR_RETURN(auto process, Subprocess::Spawn(spawn));
  theirs.reset();  // the child holds its end now
  ProxyCommand configure;
  *configure.mutable_configure() = config;
  if (absl::Status sent = ours->Send(configure); !sent.ok()) {
    process->Stop(absl::Seconds(2));
    return absl::UnavailableError(absl::StrCat(
        "proxy for gpulet '", config.gpulet_id(), "': ", sent.ToString()));
  }

  ProxyEvent event;
  absl::Status status = ours->Receive(&event, options.startup_timeout);
  if (!status.ok() || !event.has_ready()) {
    process->Stop(absl::Seconds(2));
    return absl::UnavailableError(absl::StrCat(
        "proxy for gpulet '", config.gpulet_id(), "' did not become ready: ",
        status.ok() ? "unexpected message" : status.ToString()));
  }
  status = FromStatusProto(event.ready().status());
  if (!status.ok()) {
    process->Stop(absl::Seconds(2));
    return absl::Status(status.code(),
                        absl::StrCat("proxy for gpulet '", config.gpulet_id(),
                                     "' failed to start: ", status.message()));
  }
  std::vector<MeasuredLatency> warmup(event.ready().warmup().begin(),
                                      event.ready().warmup().end());
  std::map<std::string, absl::Status> failed_models;
  for (const auto& [model, why] : event.ready().failed_models()) {
    failed_models[model] = FromStatusProto(why);
    spdlog::warn("gpulet {}: model '{}' did not load: {}", config.gpulet_id(),
                 model, std::string(failed_models[model].message()));
  }
  spdlog::info("gpulet {} on {}: proxy pid {} ready", config.gpulet_id(),
               config.device_id(), process->pid());
  return std::unique_ptr<ProxyHandle>(
      new ProxyHandle(options, std::move(process), std::move(ours),
                      std::move(region), slot_bytes, std::move(warmup),
                      event.ready().config(), std::move(failed_models)));
}

void ProxyHandle::Execute(BatchRequest batch, DoneCallback done) {
  const uint64_t batch_id = batch.batch_id();
  Pending p{std::move(batch), std::move(done), absl::Now()};
  int slot = -1;
  bool dead = false;
  {
    absl::MutexLock lock(&mu_);
    dead = dead_;
    if (!dead) {
      if (free_slots_.empty()) {
        waiting_.push_back(std::move(p));
        return;
      }
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
  }
  if (dead) {
    BatchResponse response;
    response.set_batch_id(batch_id);
    ToStatusProto(
        absl::UnavailableError(absl::StrCat(
            "proxy of gpulet '", options_.config.gpulet_id(), "' is down")),
        response.mutable_status());
    p.done(std::move(response));
    return;
  }
  Launch(std::move(p), slot);
}

absl::StatusOr<BatchResponse> ProxyHandle::ExecuteAndWait(
    BatchRequest batch, absl::Duration timeout) {
  // Shared with the callback, which may outlive this call on a timeout.
  struct Result {
    absl::Notification done;
    BatchResponse response;
  };
  auto result = std::make_shared<Result>();
  Execute(std::move(batch), [result](BatchResponse r) {
    result->response = std::move(r);
    result->done.Notify();
  });
  if (!result->done.WaitForNotificationWithTimeout(timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("gpulet '", options_.config.gpulet_id(),
                     "': no response within ", absl::FormatDuration(timeout)));
  }
  return std::move(result->response);
}

absl::Status ProxyHandle::StageInputs(const BatchRequest& batch, int slot,
                                      ExecuteCommand* cmd) {
  if (configs_.find(batch.model()) == configs_.end()) {
    return absl::NotFoundError(absl::StrCat("model '", batch.model(),
                                            "' is not served by gpulet '",
                                            options_.config.gpulet_id(), "'"));
  }
  const size_t base = static_cast<size_t>(slot) * slot_bytes_;
  // Shape-only batches: an emulated device needs no data; a real one gets
  // zeros fabricated here.
  const bool fabricate = batch.shape_only() &&
                         options_.config.device_kind() != DEVICE_KIND_EMULATED;
  ASSIGN_OR_RETURN(const BatchLayout layout,
                   LayOutBatch(batch, fabricate, slot_bytes_));
  for (int i = 0; i < batch.inputs_size(); ++i) {
    const Tensor& t = batch.inputs(i);
    const BatchLayout::Input& in = layout.inputs[i];
    uint8_t* dst = region_->data() + base + in.offset;
    if (fabricate) {
      std::memset(dst, 0, in.bytes);
    } else {
      std::memcpy(dst, t.data().data(), in.bytes);
    }
    ShmTensor* st = cmd->add_inputs();
    st->set_name(t.name());
    st->set_data_type(t.data_type());
    *st->mutable_shape() = t.shape();
    st->set_offset(base + in.offset);
    st->set_size_bytes(in.bytes);
  }
  cmd->set_output_offset(base + layout.output_offset);
  cmd->set_output_capacity_bytes(slot_bytes_ - layout.output_offset);
  return absl::OkStatus();
}

void ProxyHandle::FailLaunch(Pending p, int slot, const absl::Status& status) {
  BatchResponse response;
  response.set_batch_id(p.batch.batch_id());
  ToStatusProto(status, response.mutable_status());
  p.done(std::move(response));
  ReleaseSlots({slot});
}

void ProxyHandle::DropModels(const std::vector<std::string>& models) {
  ProxyCommand command;
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& m : models) {
      dropped_.insert(m);
      command.mutable_drop_models()->add_models(m);
    }
  }
  const absl::Status sent = channel_->Send(command);
  if (!sent.ok()) {
    spdlog::warn("gpulet '{}': cannot tell its proxy to drop models: {}",
                 options_.config.gpulet_id(), sent.ToString());
  }
}

void ProxyHandle::Launch(Pending p, int slot) {
  // Queueing ends here: the copy into the slot below is the handoff's
  // work, not waiting for the device (~60 us per 600 KB image here).
  const absl::Time launched = absl::Now();
  bool dropped = false;
  {
    absl::MutexLock lock(&mu_);
    dropped = dropped_.count(p.batch.model()) > 0;
  }
  if (dropped) {
    const std::string model = p.batch.model();
    FailLaunch(std::move(p), slot,
               absl::UnavailableError(absl::StrCat(
                   "model '", model, "' was unloaded from gpulet '",
                   options_.config.gpulet_id(), "'")));
    return;
  }
  ProxyCommand command;
  ExecuteCommand* cmd = command.mutable_execute();
  cmd->set_model(p.batch.model());
  absl::Status status = StageInputs(p.batch, slot, cmd);
  if (!status.ok()) {
    FailLaunch(std::move(p), slot, status);
    return;
  }
  uint64_t id = 0;
  {
    absl::MutexLock lock(&mu_);
    id = next_request_id_++;
    cmd->set_request_id(id);
    auto fit = interference_.find(p.batch.model());
    if (fit != interference_.end()) cmd->set_interference_factor(fit->second);
    running_[id] = Running{std::move(p.done), slot, p.received,
                           p.batch.batch_id(), launched};
  }
  status = channel_->Send(command);
  if (status.ok()) return;
  if (absl::IsUnavailable(status)) {
    // The socket is broken: the proxy is gone, though the reader may not
    // have seen it yet. Say so now, as the reader would, so that the batch
    // fails as on a dead proxy (alive() false) and is routed again.
    FailAll(absl::UnavailableError(
        absl::StrCat("proxy of gpulet '", options_.config.gpulet_id(),
                     "' is down: ", status.message())));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = running_.find(id);
    if (it == running_.end()) return;  // FailAll already answered it
    p.done = std::move(it->second.done);
    running_.erase(it);
  }
  FailLaunch(std::move(p), slot, status);
}

void ProxyHandle::ReaderLoop() {
  NameThisThread("rd:" + options_.config.gpulet_id());
  // The reader shares the proxy's cores. The proxy wakes it as it goes back
  // to wait for its next command, so the result is picked up on a core that
  // is awake: on the project's VMs a wake-up that lands on an idle core
  // costs ~45 us (a hypervisor exit), on the waker's own core ~4 us. This
  // halves the backend -> proxy -> backend hop of a small request
  // (docs/benchmarks.md). Under load the reader's short work runs on the
  // gpulet's cores instead of elsewhere; lenet at 3500 and 5500 requests/s
  // showed no loss.
  if (!options_.config.cpu_cores().empty()) {
    absl::Status pinned =
        SetCpuAffinity(std::vector<int>(options_.config.cpu_cores().begin(),
                                        options_.config.cpu_cores().end()));
    if (!pinned.ok()) {
      spdlog::warn("gpulet {}: reader not pinned: {}",
                   options_.config.gpulet_id(), pinned.ToString());
    }
  }
  while (true) {
    ProxyEvent event;
    absl::Status status = channel_->Receive(&event);
    if (!status.ok()) {
      FailAll(absl::UnavailableError(
          absl::StrCat("proxy of gpulet '", options_.config.gpulet_id(),
                       "' exited or closed its channel: ", status.message())));
      return;
    }
    if (event.has_group_result()) {
      OnGroupResult(event.group_result());
      continue;
    }
    if (!event.has_result()) continue;
    const ExecuteResult& result = event.result();
    Running running;
    absl::Time started;
    {
      absl::MutexLock lock(&mu_);
      auto it = running_.find(result.request_id());
      if (it == running_.end()) continue;
      running = std::move(it->second);
      running_.erase(it);
      started = std::max(running.launched, last_completion_);
      last_completion_ = absl::Now();
    }
    BatchResponse response;
    response.set_batch_id(running.batch_id);
    *response.mutable_status() = result.status();
    response.set_exec_time_us(result.exec_time_us());
    response.set_proxy_time_us(result.proxy_time_us());
    absl::Status copied = CopyOutputs(result.outputs(), &response);
    if (!copied.ok()) ToStatusProto(copied, response.mutable_status());
    response.set_backend_time_us(
        absl::ToInt64Microseconds(absl::Now() - running.received));
    response.set_queue_time_us(std::max<int64_t>(
        0, absl::ToInt64Microseconds(started - running.received)));
    // The slot is free once the outputs are copied out.
    ReleaseSlots({running.slot});
    running.done(std::move(response));
  }
}

absl::Status ProxyHandle::CopyOutputs(
    const google::protobuf::RepeatedPtrField<ShmTensor>& outputs,
    BatchResponse* response) const {
  for (const ShmTensor& t : outputs) {
    if (t.offset() + t.size_bytes() > region_->size()) {
      response->clear_outputs();
      return absl::InternalError("proxy output outside the region");
    }
    Tensor* out = response->add_outputs();
    out->set_name(t.name());
    out->set_data_type(t.data_type());
    *out->mutable_shape() = t.shape();
    out->set_data(region_->data() + t.offset(), t.size_bytes());
  }
  return absl::OkStatus();
}

void ProxyHandle::ReleaseSlots(const std::vector<int>& slots) {
  for (int slot : slots) {
    Pending next;
    bool launch_next = false;
    {
      absl::MutexLock lock(&mu_);
      if (!waiting_.empty() && !dead_) {
        next = std::move(waiting_.front());
        waiting_.pop_front();
        launch_next = true;
      } else {
        free_slots_.push_back(slot);
      }
    }
    if (launch_next) Launch(std::move(next), slot);
  }
}

absl::Status ProxyHandle::StageGroup(
    const std::vector<GroupMemberRequest>& members,
    const std::vector<int>& slots, GroupCommand* cmd) {
  for (size_t i = 0; i < members.size(); ++i) {
    const GroupMemberRequest& m = members[i];
    GroupMemberCommand* member = cmd->add_members();
    member->set_query_id(m.query_id);
    member->set_model(m.query->model());
    member->set_start_op(m.start_op);
    member->set_end_op(m.end_op);
    if (m.start_op != 0 && !m.last) continue;
    ExecuteCommand staged;
    BatchRequest shapes_only;
    const BatchRequest* query = m.query;
    if (m.start_op != 0) {  // last range only: no inputs to copy
      shapes_only.set_model(m.query->model());
      query = &shapes_only;
    }
    RETURN_IF_ERROR(StageInputs(*query, slots[i], &staged));
    if (m.start_op == 0) *member->mutable_inputs() = staged.inputs();
    if (m.last) {
      member->set_output_offset(staged.output_offset());
      member->set_output_capacity_bytes(staged.output_capacity_bytes());
    }
  }
  return absl::OkStatus();
}

void ProxyHandle::ExecuteGroup(std::vector<GroupMemberRequest> members,
                               GroupDoneCallback done) {
  GroupResponse failed;
  std::vector<int> slots;
  uint64_t id = 0;
  {
    absl::MutexLock lock(&mu_);
    if (dead_) {
      failed.status = absl::UnavailableError(absl::StrCat(
          "proxy of gpulet '", options_.config.gpulet_id(), "' is down"));
    } else if (free_slots_.size() < members.size()) {
      failed.status = absl::ResourceExhaustedError(absl::StrCat(
          "a group of ", members.size(), " needs as many free slots; ",
          free_slots_.size(), " are"));
    } else {
      for (size_t i = 0; i < members.size(); ++i) {
        slots.push_back(free_slots_.back());
        free_slots_.pop_back();
      }
      id = next_request_id_++;
    }
  }
  if (!failed.status.ok()) {
    done(std::move(failed));
    return;
  }
  ProxyCommand command;
  GroupCommand* cmd = command.mutable_group();
  cmd->set_request_id(id);
  absl::Status status = StageGroup(members, slots, cmd);
  if (status.ok()) {
    absl::MutexLock lock(&mu_);
    RunningGroup& running = running_groups_[id];
    running.done = std::move(done);
    running.slots = slots;
    for (const GroupMemberRequest& m : members) {
      running.batch_ids[m.query_id] = m.query->batch_id();
    }
  }
  if (status.ok()) status = channel_->Send(command);
  if (status.ok()) return;
  {
    absl::MutexLock lock(&mu_);
    auto it = running_groups_.find(id);
    if (it != running_groups_.end()) {
      done = std::move(it->second.done);
      running_groups_.erase(it);
    } else if (!done) {
      return;  // FailAll already answered it
    }
  }
  ReleaseSlots(slots);
  failed.status = status;
  done(std::move(failed));
}

void ProxyHandle::OnGroupResult(const GroupResult& result) {
  RunningGroup running;
  {
    absl::MutexLock lock(&mu_);
    auto it = running_groups_.find(result.request_id());
    if (it == running_groups_.end()) return;
    running = std::move(it->second);
    running_groups_.erase(it);
    last_completion_ = absl::Now();
  }
  GroupResponse response;
  response.status = FromStatusProto(result.status());
  response.exec_time_us = result.exec_time_us();
  response.proxy_time_us = result.proxy_time_us();
  for (const GroupMemberResult& f : result.finished()) {
    BatchResponse& out = response.finished[f.query_id()];
    auto bid = running.batch_ids.find(f.query_id());
    if (bid != running.batch_ids.end()) out.set_batch_id(bid->second);
    out.set_exec_time_us(result.exec_time_us());
    absl::Status copied = CopyOutputs(f.outputs(), &out);
    ToStatusProto(copied, out.mutable_status());
  }
  ReleaseSlots(running.slots);
  running.done(std::move(response));
}

void ProxyHandle::FailAll(const absl::Status& status) {
  std::vector<DoneCallback> callbacks;
  std::vector<uint64_t> batch_ids;
  std::vector<GroupDoneCallback> group_callbacks;
  {
    absl::MutexLock lock(&mu_);
    dead_ = true;
    for (auto& [id, r] : running_) {
      callbacks.push_back(std::move(r.done));
      batch_ids.push_back(r.batch_id);
    }
    running_.clear();
    for (auto& p : waiting_) {
      callbacks.push_back(std::move(p.done));
      batch_ids.push_back(p.batch.batch_id());
    }
    waiting_.clear();
    for (auto& [id, g] : running_groups_)
      group_callbacks.push_back(std::move(g.done));
    running_groups_.clear();
  }
  for (GroupDoneCallback& done : group_callbacks) {
    GroupResponse response;
    response.status = status;
    done(std::move(response));
  }
  for (size_t i = 0; i < callbacks.size(); ++i) {
    BatchResponse response;
    response.set_batch_id(batch_ids[i]);
    ToStatusProto(status, response.mutable_status());
    callbacks[i](std::move(response));
  }
}

bool ProxyHandle::Drain(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return dead_ ||
           (running_.empty() && waiting_.empty() && running_groups_.empty());
  };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

void ProxyHandle::Stop(absl::Duration grace) {
  // Idempotent and safe from several threads (a plan change retiring this
  // proxy while the daemon shuts down).
  absl::MutexLock stop_lock(&stop_mu_);
  if (reader_.joinable()) {
    ProxyCommand command;
    command.set_shutdown(true);
    (void)channel_->Send(command);
    process_->Stop(grace);
    channel_->Shutdown();
    reader_.join();  // FailAll() answers anything still pending
  }
}

void ProxyHandle::SetInterferenceFactors(
    std::map<std::string, double> factors) {
  absl::MutexLock lock(&mu_);
  interference_ = std::move(factors);
}

bool ProxyHandle::alive() const {
  absl::MutexLock lock(&mu_);
  return !dead_;
}

}  // namespace tessera
