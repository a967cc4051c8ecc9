#include "frontend/frontend_server.h"

#include "absl/strings/str_cat.h"
#include "frontend/cluster_snapshot_builder.h"
#include "grpcpp/grpcpp.h"
#include "scheduler/policy_registry.h"
#include "spdlog/spdlog.h"

namespace tessera {
absl::StatusOr<std::unique_ptr<FrontendServer>> FrontendServer::Create(
    Options options, const Clock* clock) {
  if (options.config.backends_size() == 0) {
    return absl::InvalidArgumentError("frontend config lists no backends");
  }
  for (const BackendEndpoint& b : options.config.backends()) {
    if (b.id().empty() || b.address().empty()) {
      return absl::InvalidArgumentError(
          "every backend needs an id and an address");
    }
  }
  if (options.config.policy().empty()) options.config.set_policy("static");
  auto repository = ModelRepository::Load(options.model_repository);
  if (!repository.ok()) return repository.status();
  PolicyOptions policy_options;
  policy_options.static_plan = options.config.static_plan();
  auto policy = PolicyRegistry::Create(options.config.policy(), policy_options);
  if (!policy.ok()) return policy.status();
  return std::unique_ptr<FrontendServer>(new FrontendServer(
      std::move(options), clock, std::move(*repository), std::move(*policy)));
}

FrontendServer::FrontendServer(Options options, const Clock* clock,
                               std::unique_ptr<ModelRepository> repository,
                               std::unique_ptr<SchedulingPolicy> policy)
    : options_(std::move(options)),
      clock_(clock),
      repository_(std::move(repository)),
      policy_(std::move(policy)),
      service_(repository_.get(), &router_, clock_, "0.1.0") {
  for (const BackendEndpoint& b : options_.config.backends()) {
    backends_.push_back(std::make_unique<BackendClient>(b.id(), b.address()));
  }
}

FrontendServer::~FrontendServer() { Shutdown(); }

absl::Status FrontendServer::Start() {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.listen, grpc::InsecureServerCredentials(),
                           &port_);
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.listen));
  }
  spdlog::info("frontend listening on port {} (policy '{}')", port_,
               policy_->name());
  planner_ = std::thread([this] { PlannerLoop(); });
  return absl::OkStatus();
}

void FrontendServer::PlannerLoop() {
  int failures = 0;
  absl::Time last_log = absl::InfinitePast();
  while (true) {
    absl::Status status = PlanAndApply();
    absl::MutexLock lock(&mu_);
    if (status.ok() || stopping_) return;
    // The first failure, then at most one line every 30 s.
    ++failures;
    if (absl::Now() - last_log >= absl::Seconds(30)) {
      spdlog::warn(
          "planning failed ({} attempt(s) so far), retrying every "
          "{}: {}",
          failures, absl::FormatDuration(options_.plan_retry_interval),
          status.ToString());
      last_log = absl::Now();
    }
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&stopping),
                         options_.plan_retry_interval);
    if (stopping_) return;
  }
}

absl::Status FrontendServer::PlanAndApply() {
  std::map<std::string, BackendClient*> backend_by_id;
  std::vector<NodeInfo> nodes;
  for (auto& backend : backends_) {
    auto info = backend->GetNodeInfo(absl::Seconds(5));
    if (!info.ok()) {
      return absl::UnavailableError(
          absl::StrCat("backend '", backend->id(), "' at ", backend->address(),
                       ": ", info.status().message()));
    }
    if (info->backend_id() != backend->id()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "backend at ", backend->address(), " says its id is '",
          info->backend_id(), "', config says '", backend->id(), "'"));
    }
    backend_by_id[backend->id()] = backend.get();
    nodes.push_back(std::move(*info));
  }
  Plan current;
  {
    absl::MutexLock lock(&mu_);
    current = plan_;
  }
  const ClusterSnapshot snapshot =
      BuildClusterSnapshot(nodes, *repository_, options_.config.profile_dir(),
                           current, clock_->Now());
  auto plan = policy_->Schedule(snapshot);
  if (!plan.ok()) return plan.status();
  plan->set_epoch(snapshot.current_plan.epoch() + 1);

  // Apply on every backend the plan touches; collect warm-up latencies.
  std::map<std::string, GpuletStatus> statuses;
  for (auto& [id, backend] : backend_by_id) {
    auto applied = backend->ApplyPlan(*plan, options_.backend_call_timeout);
    if (!applied.ok()) {
      return absl::Status(applied.status().code(),
                          absl::StrCat("backend '", id, "' rejected plan: ",
                                       applied.status().message()));
    }
    for (const GpuletStatus& s : applied->gpulets()) {
      statuses[s.gpulet_id()] = s;
    }
  }

  std::vector<std::shared_ptr<GpuletWorker>> workers;
  for (const DevicePlan& device : plan->devices()) {
    DeviceKind kind = DEVICE_KIND_UNSPECIFIED;
    for (const DeviceSnapshot& d : snapshot.devices) {
      if (d.backend_id == device.backend_id() &&
          d.device_id == device.device_id()) {
        kind = d.kind;
      }
    }
    for (const GpuletPlan& g : device.gpulets()) {
      GpuletWorker::Options wo;
      wo.backend_id = device.backend_id();
      wo.device_id = device.device_id();
      wo.gpulet = g;
      wo.epoch = plan->epoch();
      const int inflight = options_.config.max_inflight_batches_per_gpulet();
      wo.dispatch.max_inflight_batches = inflight > 0 ? inflight : 2;
      LatencyEstimator estimator;
      for (const ModelAssignment& a : g.models()) {
        const ModelRepository::Entry* entry = repository_->Find(a.model());
        wo.configs[a.model()] = &entry->config;
        for (const ModelSnapshot& m : snapshot.models) {
          auto it = m.profiles.find(ProfileKey(kind));
          if (m.config.name() == a.model() && it != m.profiles.end()) {
            estimator.SeedFromProfile(it->second, g.share_percent());
          }
        }
      }
      // Measured on this very proxy: preferred over profiles.
      auto sit = statuses.find(g.gpulet_id());
      if (sit != statuses.end()) {
        for (const MeasuredLatency& m : sit->second.warmup()) {
          estimator.Seed(
              m.model(), m.batch_size(),
              absl::Microseconds(static_cast<int64_t>(m.latency_ms() * 1000)));
        }
      }
      workers.push_back(std::make_shared<GpuletWorker>(
          std::move(wo), backend_by_id.at(device.backend_id()), clock_,
          std::move(estimator)));
    }
  }
  for (auto& retired : router_.Install(std::move(workers))) retired->Stop();
  {
    absl::MutexLock lock(&mu_);
    plan_ = *plan;
  }
  spdlog::info("plan epoch {} by '{}' installed: {} device(s)", plan->epoch(),
               plan->policy(), plan->devices_size());
  return absl::OkStatus();
}

bool FrontendServer::WaitUntilReady(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return plan_.epoch() > 0 || stopping_;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout) &&
         plan_.epoch() > 0;
}

Plan FrontendServer::current_plan() const {
  absl::MutexLock lock(&mu_);
  return plan_;
}

void FrontendServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (planner_.joinable()) planner_.join();
  // Stop dispatching (queued and newly arriving calls get UNAVAILABLE),
  // let in-flight batches finish, stop the gRPC server, close the backend
  // streams (anything still in flight fails), and only then drop the
  // workers their callbacks point to.
  auto workers = router_.workers();
  for (auto& w : workers) w->Stop();
  for (auto& w : workers) w->WaitIdle(absl::Seconds(5));
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  }
  for (auto& b : backends_) b->Shutdown();
  router_.Install({});
}

}  // namespace tessera
