#include "backend/gpulet_starter.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "backend/overlap_proxy.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace tessera {

GpuletStarter::GpuletStarter(Options options, const BackendNode* node,
                             BackendMetrics* metrics)
    : options_(std::move(options)),
      node_(node),
      metrics_(metrics),
      launcher_(options_.launcher != nullptr
                    ? options_.launcher
                    : std::make_shared<ProcessProxyLauncher>()),
      mps_(options_.mps) {}

absl::StatusOr<std::shared_ptr<Proxy>> GpuletStarter::Start(
    const GpuletSpec& g) const {
  const DeviceConfig* device = node_->FindDevice(g.device_id);
  ProxyHandle::Options po;
  po.proxy_binary = options_.proxy_binary;
  po.num_slots = options_.proxy_slots;
  po.startup_timeout = options_.proxy_startup_timeout;
  po.config =
      node_->ProxyConfigFor(g, node_->repo().root(), options_.proxy_poll);
  if (device->kind() == DEVICE_KIND_EMULATED &&
      !options_.emulated_proxy_binary.empty()) {
    po.proxy_binary = options_.emulated_proxy_binary;
  }
  if (device->kind() == DEVICE_KIND_EMULATED) {
    po.config.mutable_emulated()->set_a100_ground_truth_dir(
        node_->config().a100_ground_truth_dir());
  }
  if (device->kind() == DEVICE_KIND_CUDA) {
    // The share is the proxy's own MPS active-thread percentage, fixed for
    // its life: a new share is a new process.
    RETURN_IF_ERROR(mps_.Ensure(device->gpu_index()));
    po.extra_env = mps_.ProxyEnv(device->gpu_index(), g.plan.share_percent());
  }
  if (g.plan.scheduler() == GPULET_SCHEDULER_BATCHES) {
    return launcher_->Launch(po);
  }
  return StartOverlapProxy(g, po);
}

absl::StatusOr<std::shared_ptr<Proxy>> GpuletStarter::StartOverlapProxy(
    const GpuletSpec& g, const ProxyHandle::Options& po) const {
  if (options_.group_predictor == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("gpulet '", g.plan.gpulet_id(), "' runs operator groups (",
                     GpuletScheduler_Name(g.plan.scheduler()),
                     ") but this backend has no --group_predictor"));
  }
  OverlapProxy::Options oo;
  switch (g.plan.scheduler()) {
    case GPULET_SCHEDULER_FCFS:
      oo.queues.scheduler = OverlapScheduler::kFcfs;
      break;
    case GPULET_SCHEDULER_SJF:
      oo.queues.scheduler = OverlapScheduler::kSjf;
      break;
    case GPULET_SCHEDULER_EDF:
      oo.queues.scheduler = OverlapScheduler::kEdf;
      break;
    default:
      oo.queues.scheduler = OverlapScheduler::kAbacus;
  }
  const DeviceConfig* device = node_->FindDevice(g.device_id);
  if (device->kind() == DEVICE_KIND_EMULATED && device->time_scale() > 0) {
    oo.time_scale = device->time_scale();
  }
  oo.models.assign(po.config.models().begin(), po.config.models().end());
  oo.on_group = [metrics = metrics_, id = g.plan.gpulet_id()](int size,
                                                              double us) {
    metrics->RecordGroup(id, size, us / 1e6);
  };
  ProxyHandle::Options groups = po;
  groups.config.set_operator_groups(true);
  ASSIGN_OR_RETURN(std::shared_ptr<Proxy> inner, launcher_->Launch(groups));
  auto wrapped = OverlapProxy::Create(inner, *options_.group_predictor,
                                      std::move(oo), RealClock::Get());
  if (!wrapped.ok()) {
    inner->Stop();
    return wrapped.status();
  }
  return std::shared_ptr<Proxy>(std::move(*wrapped));
}

absl::StatusOr<std::vector<GpuletEntry>> GpuletStarter::StartAll(
    const std::vector<std::string>& ids,
    const std::map<std::string, GpuletSpec>& wanted) const {
  std::vector<absl::StatusOr<std::shared_ptr<Proxy>>> results(
      ids.size(), absl::UnknownError("not started"));
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < ids.size(); ++i) {
      threads.emplace_back([this, &results, &wanted, &ids, i] {
        results[i] = Start(wanted.at(ids[i]));
      });
    }
    for (auto& t : threads) t.join();
  }
  std::vector<GpuletEntry> started;
  absl::Status failed;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (results[i].ok()) {
      started.push_back({wanted.at(ids[i]), *results[i]});
    } else if (failed.ok()) {
      failed = results[i].status();
    }
  }
  if (!failed.ok()) {
    for (GpuletEntry& g : started) g.proxy->Stop();
    return failed;
  }
  return started;
}

void GpuletStarter::DrainAndStop(
    const std::vector<GpuletEntry>& gpulets) const {
  // Drain all first (they finish in parallel), then stop.
  const absl::Time deadline = absl::Now() + options_.drain_timeout;
  for (const GpuletEntry& g : gpulets) {
    if (!g.proxy->Drain(
            std::max(absl::ZeroDuration(), deadline - absl::Now()))) {
      spdlog::warn("gpulet {} did not drain in time; stopping it", g.id());
    }
  }
  for (const GpuletEntry& g : gpulets) g.proxy->Stop();
}

}  // namespace tessera
