#include "proxy/proxy_server.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/data_type.h"
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
  auto outputs = runner_->Run(config.name(), *inputs, region_->data() + offset,
                              region_->size() - offset, &exec);
  if (!outputs.ok()) return outputs.status();
  return exec;
}

absl::StatusOr<std::vector<MeasuredLatency>> ProxyServer::Warmup(
    int timed_runs) {
  std::vector<MeasuredLatency> measured;
  for (const auto& [name, config] : configs_) {
    std::vector<int> sizes = {1};
    if (config.max_batch_size() > 1) sizes.push_back(config.max_batch_size());
    for (int b : sizes) {
      std::vector<absl::Duration> times;
      for (int i = 0; i <= timed_runs; ++i) {
        auto t = RunZeros(config, b);
        if (!t.ok()) return t.status();
        if (i > 0) times.push_back(*t);
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
    if (!command.has_execute()) continue;
    const ExecuteCommand& cmd = command.execute();

    ProxyEvent event;
    ExecuteResult* result = event.mutable_result();
    result->set_request_id(cmd.request_id());
    absl::Status run_status;
    std::vector<TensorView> inputs;
    for (const ShmTensor& t : cmd.inputs()) {
      if (t.offset() + t.size_bytes() > region_->size()) {
        run_status = absl::InvalidArgumentError(
            absl::StrCat("input '", t.name(), "' lies outside the region"));
        break;
      }
      TensorView view;
      view.name = t.name();
      view.data_type = t.data_type();
      view.shape.assign(t.shape().begin(), t.shape().end());
      view.data = region_->data() + t.offset();
      view.size_bytes = t.size_bytes();
      inputs.push_back(std::move(view));
    }
    if (run_status.ok() &&
        cmd.output_offset() + cmd.output_capacity_bytes() > region_->size()) {
      run_status =
          absl::InvalidArgumentError("output area lies outside the region");
    }
    if (run_status.ok()) {
      absl::Duration exec;
      runner_->SetInterferenceFactor(cmd.interference_factor());
      auto outputs = runner_->Run(cmd.model(), inputs,
                                  region_->data() + cmd.output_offset(),
                                  cmd.output_capacity_bytes(), &exec);
      if (outputs.ok()) {
        result->set_exec_time_us(absl::ToInt64Microseconds(exec));
        for (const TensorView& v : *outputs) {
          ShmTensor* out = result->add_outputs();
          out->set_name(v.name);
          out->set_data_type(v.data_type);
          for (int64_t d : v.shape) out->add_shape(d);
          out->set_offset(v.data - region_->data());
          out->set_size_bytes(v.size_bytes);
        }
      } else {
        run_status = outputs.status();
      }
    }
    ToStatusProto(run_status, result->mutable_status());
    result->set_proxy_time_us(
        absl::ToInt64Microseconds(absl::Now() - received));
    status = channel_->Send(event);
    if (!status.ok()) return status;
  }
}

}  // namespace tessera
