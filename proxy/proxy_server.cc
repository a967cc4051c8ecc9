#include "proxy/proxy_server.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/data_type.h"
#include "common/status_macros.h"
#include "common/status_proto.h"
#include "common/tensor_layout.h"
#include "proxy.pb.h"
#include "spdlog/spdlog.h"

namespace tessera {

absl::StatusOr<absl::Duration> ProxyServer::RunZeros(const ModelConfig& config,
                                                     int batch_size) {
  size_t offset = 0;
  auto inputs = LayOutTensors(config.input(), batch_size, region_->data(),
                              region_->size(), &offset);
  if (!inputs.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "shared region too small to warm up: ", inputs.status().message()));
  }
  for (const TensorView& view : *inputs) {
    std::memset(view.data, 0, view.size_bytes);
  }
  if (offset > region_->size()) offset = region_->size();
  absl::Duration exec;
  ASSIGN_OR_RETURN(auto outputs, runner_->Run(config.name(), *inputs,
                                              region_->data() + offset,
                                              region_->size() - offset, &exec));
  return exec;
}

absl::StatusOr<std::vector<MeasuredLatency>> ProxyServer::Warmup(
    int timed_runs) {
  std::vector<MeasuredLatency> measured;
  for (const auto& [name, config] : configs_) {
    if (!runner_->ModelStatus(name).ok()) continue;  // did not load
    std::vector<int> sizes = {1};
    if (config.max_batch_size() > 1) sizes.push_back(config.max_batch_size());
    for (int b : sizes) {
      std::vector<absl::Duration> times;
      for (int i = 0; i <= timed_runs; ++i) {
        ASSIGN_OR_RETURN(auto t, RunZeros(config, b));
        if (i > 0) times.push_back(t);
      }
      std::sort(times.begin(), times.end());
      MeasuredLatency m;
      m.set_model(name);
      m.set_batch_size(b);
      m.set_latency_ms(
          times.empty() ? 0
                        : absl::ToDoubleMilliseconds(times[times.size() / 2]));
      measured.push_back(m);
      spdlog::info("warm-up {} batch {}: {:.2f} ms", name, b, m.latency_ms());
    }
  }
  return measured;
}

absl::StatusOr<std::vector<TensorView>> ProxyServer::InputViews(
    const google::protobuf::RepeatedPtrField<ShmTensor>& tensors) const {
  std::vector<TensorView> inputs;
  for (const ShmTensor& t : tensors) {
    if (t.offset() + t.size_bytes() > region_->size() ||
        t.offset() + t.size_bytes() < t.offset()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", t.name(), "' lies outside the region"));
    }
    TensorView view;
    view.name = t.name();
    view.data_type = t.data_type();
    view.shape.assign(t.shape().begin(), t.shape().end());
    view.data = region_->data() + t.offset();
    view.size_bytes = t.size_bytes();
    inputs.push_back(std::move(view));
  }
  return inputs;
}

absl::Status ProxyServer::CheckOutputArea(uint64_t offset,
                                          uint64_t capacity) const {
  if (offset + capacity > region_->size() || offset + capacity < offset) {
    return absl::InvalidArgumentError("output area lies outside the region");
  }
  return absl::OkStatus();
}

void ProxyServer::DescribeOutputs(
    const std::vector<TensorView>& outputs,
    google::protobuf::RepeatedPtrField<ShmTensor>* described) const {
  for (const TensorView& v : outputs) {
    ShmTensor* out = described->Add();
    out->set_name(v.name);
    out->set_data_type(v.data_type);
    for (int64_t d : v.shape) out->add_shape(d);
    out->set_offset(v.data - region_->data());
    out->set_size_bytes(v.size_bytes);
  }
}

absl::Status ProxyServer::Execute(const ExecuteCommand& cmd,
                                  ExecuteResult* result) {
  ASSIGN_OR_RETURN(std::vector<TensorView> inputs, InputViews(cmd.inputs()));
  RETURN_IF_ERROR(
      CheckOutputArea(cmd.output_offset(), cmd.output_capacity_bytes()));
  absl::Duration exec;
  runner_->SetInterferenceFactor(cmd.interference_factor());
  ASSIGN_OR_RETURN(
      std::vector<TensorView> outputs,
      runner_->Run(cmd.model(), inputs, region_->data() + cmd.output_offset(),
                   cmd.output_capacity_bytes(), &exec));
  result->set_exec_time_us(absl::ToInt64Microseconds(exec));
  DescribeOutputs(outputs, result->mutable_outputs());
  return absl::OkStatus();
}

absl::Status ProxyServer::RunGroup(const GroupCommand& cmd,
                                   GroupResult* result) {
  if (group_runner_ == nullptr) {
    return absl::FailedPreconditionError(
        "this proxy runs no operator groups (its device has no group "
        "runner)");
  }
  std::vector<GroupMemberRun> members;
  for (const GroupMemberCommand& m : cmd.members()) {
    GroupMemberRun run;
    run.query_id = m.query_id();
    run.model = m.model();
    run.start_op = m.start_op();
    run.end_op = m.end_op();
    if (m.start_op() == 0) {
      ASSIGN_OR_RETURN(run.inputs, InputViews(m.inputs()));
    }
    if (m.end_op() == group_runner_->OperatorCount(m.model())) {
      RETURN_IF_ERROR(
          CheckOutputArea(m.output_offset(), m.output_capacity_bytes()));
      run.out = region_->data() + m.output_offset();
      run.out_capacity = m.output_capacity_bytes();
    }
    members.push_back(std::move(run));
  }
  absl::Duration exec;
  ASSIGN_OR_RETURN(auto outputs, group_runner_->RunGroup(members, &exec));
  result->set_exec_time_us(absl::ToInt64Microseconds(exec));
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].out == nullptr) continue;
    GroupMemberResult* finished = result->add_finished();
    finished->set_query_id(members[i].query_id);
    DescribeOutputs(outputs[i], finished->mutable_outputs());
  }
  return absl::OkStatus();
}

absl::Status ProxyServer::Serve(const PollOptions& poll) {
  PollGovernor governor(poll);
  while (true) {
    ProxyCommand command;
    const absl::Time waiting = absl::Now();
    absl::Status status = channel_->Receive(&command, absl::InfiniteDuration(),
                                            governor.StartWait(waiting));
    if (absl::IsUnavailable(status)) return absl::OkStatus();  // peer gone
    if (!status.ok()) return status;
    const absl::Time received = absl::Now();
    governor.EndWait(received - waiting);
    if (command.has_shutdown()) return absl::OkStatus();
    if (command.has_drop_models()) {
      for (const std::string& model : command.drop_models().models()) {
        if (runner_ != nullptr) runner_->Drop(model);
        spdlog::info("model '{}' dropped (unloaded from this gpulet)", model);
      }
      continue;
    }
    ProxyEvent event;
    if (command.has_execute()) {
      ExecuteResult* result = event.mutable_result();
      result->set_request_id(command.execute().request_id());
      ToStatusProto(Execute(command.execute(), result),
                    result->mutable_status());
      result->set_proxy_time_us(
          absl::ToInt64Microseconds(absl::Now() - received));
    } else if (command.has_group()) {
      GroupResult* result = event.mutable_group_result();
      result->set_request_id(command.group().request_id());
      absl::Status ran = RunGroup(command.group(), result);
      if (!ran.ok()) result->clear_finished();
      ToStatusProto(ran, result->mutable_status());
      result->set_proxy_time_us(
          absl::ToInt64Microseconds(absl::Now() - received));
    } else {
      continue;
    }
    status = channel_->Send(event);
    if (!status.ok()) return status;
  }
}

}  // namespace tessera
