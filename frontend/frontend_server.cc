#include "frontend/frontend_server.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/grpc_tuning.h"
#include "common/status_macros.h"
#include "common/thread_name.h"
#include "frontend/admin_server.h"
#include "frontend/cluster_snapshot_builder.h"
#include "frontend/control_loops.h"
#include "frontend/frontend_config.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "scheduler/policy_registry.h"
#include "scheduler/profile_fits.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

std::vector<std::string> BackendIds(const FrontendConfig& config) {
  std::vector<std::string> ids;
  for (const BackendEndpoint& b : config.backends()) ids.push_back(b.id());
  return ids;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FrontendServer>> FrontendServer::Create(
    Options options, const Clock* clock) {
  RETURN_IF_ERROR(ValidateFrontendConfig(&options.config));
  ASSIGN_OR_RETURN(
      auto repository,
      ModelRepository::Load(options.model_repository,
                            ModelRepository::InvalidEntries::kSkip));
  // Emulated clusters run k times slower than the GPU they emulate: so do
  // their SLOs.
  repository->ScaleSlos(options.config.time_scale());
  ASSIGN_OR_RETURN(ProfileStore profiles,
                   ProfileStore::Load(options.config.profile_dir(), *repository,
                                      options.config.time_scale()));
  ASSIGN_OR_RETURN(PolicyOptions policy_options,
                   PolicyOptionsFromConfig(options.config));
  // Profiles are fixed for the frontend's life: derive what every plan
  // would otherwise rebuild (latency models, iGniter's and LAS's fits).
  policy_options.fits = std::make_shared<const ProfileFits>(ProfileFits::Build(
      BuildClusterSnapshot({}, *repository, profiles, Plan(), absl::Time())
          .models,
      policy_options.rules));
  RETURN_IF_ERROR(
      CheckStaticPlan(options.config.policy(), policy_options, *repository));
  ASSIGN_OR_RETURN(auto policy, PolicyRegistry::Create(options.config.policy(),
                                                       policy_options));
  return std::unique_ptr<FrontendServer>(new FrontendServer(
      std::move(options), clock, std::move(repository), std::move(profiles),
      std::move(policy_options), std::move(policy)));
}

FrontendServer::FrontendServer(Options options, const Clock* clock,
                               std::unique_ptr<ModelRepository> repository,
                               ProfileStore profiles,
                               PolicyOptions policy_options,
                               std::unique_ptr<SchedulingPolicy> policy)
    : options_(std::move(options)),
      clock_(clock),
      repository_(std::move(repository)),
      profiles_(std::move(profiles)),
      policy_options_(std::move(policy_options)),
      monitor_(
          RequestMonitor::Options{
              absl::Seconds(options_.config.rate_window_s()), 20},
          clock_),
      router_(&monitor_),
      trigger_(ReplanTrigger::Options{options_.config.replan_threshold(),
                                      options_.config.min_rate_rps(),
                                      options_.config.rate_window_s(),
                                      options_.config.heartbeat_misses()},
               BackendIds(options_.config)),
      backlog_(clock_),
      admission_(options_.admission, &backlog_),
      trimmer_(HeapTrimmer::Options{}),
      service_(repository_.get(), &router_, clock_, "0.1.0", &metrics_,
               &repository_control_, options_.admin_secret, &admission_),
      coordinator_(
          PlanCoordinator::Options{options_.config,
                                   options_.backend_call_timeout,
                                   options_.plan_file},
          PlanCoordinator::Deps{repository_.get(), &profiles_, &router_,
                                &monitor_, &trigger_, &unloaded_, clock_},
          std::move(policy)),
      repository_control_(
          {repository_.get(), &unloaded_, &coordinator_, &trigger_, clock_}),
      reporter_({&coordinator_, &trigger_, &monitor_, &router_, &admission_,
                 &metrics_}) {}

FrontendServer::~FrontendServer() { Shutdown(); }

absl::Status FrontendServer::Start() {
  // grpc.health.v1.Health (our own, on the event loops: HealthService)
  // and server reflection, for load balancers, Kubernetes probes and
  // grpcurl.
  grpc::EnableDefaultHealthCheckService(false);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(
      options_.listen,
      options_.tls.ServerCredentials(/*require_client_certificates=*/false),
      &port_);
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(-1);
  ApplyTransportTuning(&builder);
  builder.RegisterService(&async_);
  builder.RegisterService(&health_async_);
  for (int i = 0; i < std::max(1, options_.event_loops); ++i) {
    cqs_.push_back(builder.AddCompletionQueue());
  }
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    server_.reset();
    for (auto& cq : cqs_) {
      cq->Shutdown();
      RunCompletionQueue(cq.get());  // drains it
    }
    cqs_.clear();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.listen));
  }
  for (const BackendEndpoint& b : options_.config.backends()) {
    backends_.push_back(std::make_unique<BackendClient>(
        b.id(), b.address(), cqs_[backends_.size() % cqs_.size()].get(),
        BackendClient::Security{options_.tls.ChannelCredentials(),
                                options_.cluster_secret}));
    controls_.push_back(backends_.back().get());
  }
  coordinator_.SetBackends(controls_);
  for (size_t i = 0; i < cqs_.size(); ++i) {
    grpc::ServerCompletionQueue* cq = cqs_[i].get();
    service_.Arm(&async_, cq, &calls_);
    health_.Arm(&health_async_, cq, &calls_);
    loops_.emplace_back([this, cq, i, poll = options_.poll] {
      NameThisThread(absl::StrCat("fe-loop-", i));
      RunCompletionQueue(cq, poll, &backlog_, options_.coalesce_stream_answers);
    });
  }
  spdlog::info(
      "frontend listening on port {} (policy '{}', time scale {}, re-plan "
      "check every {} s, event loops poll {} us, {}% idle)",
      port_, options_.config.policy(), options_.config.time_scale(),
      options_.config.replan_period_s(),
      absl::ToInt64Microseconds(options_.poll.window),
      options_.poll.idle_budget * 100);
  RETURN_IF_ERROR(StartHttp());
  RETURN_IF_ERROR(StartAdmin());
  trigger_.Request("initial plan");
  control_ = std::make_unique<ControlLoops>(
      ControlLoops::Options{
          absl::Seconds(options_.config.replan_period_s()),
          absl::Seconds(options_.config.heartbeat_interval_s()),
          options_.plan_retry_interval,
          absl::Seconds(options_.config.rise_window_s())},
      ControlLoops::Deps{
          &coordinator_, &trigger_, &monitor_, &router_, controls_, clock_,
          [this] {
            health_.Refresh();
            const int64_t trimmed = trimmer_.Tick(admission_.usage().bytes);
            if (trimmed > 0) {
              spdlog::info("returned {} MiB of free heap to the OS",
                           trimmed >> 20);
            }
          }});
  control_->Start();
  return absl::OkStatus();
}

absl::Status FrontendServer::StartHttp() {
  if (options_.http_port < 0) return absl::OkStatus();
  const std::string host =
      options_.listen.substr(0, options_.listen.rfind(':'));
  ASSIGN_OR_RETURN(
      auto http,
      HttpEndpoint::Start(
          host, options_.http_port,
          {[this] { return RenderMetrics(); }, [this] { return Ready(); },
           [this](const HttpRequest& request) { return rest_.Handle(request); },
           static_cast<size_t>(options_.max_message_bytes)},
          options_.tls.files().cert_file, options_.tls.files().key_file));
  http_ = std::move(http);
  spdlog::info("frontend KServe v2 REST, metrics and health on HTTP port {}",
               http_->port());
  return absl::OkStatus();
}

absl::Status FrontendServer::StartAdmin() {
  if (options_.admin_listen.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(
      admin_, AdminServer::Start(options_.admin_listen,
                                 options_.tls.ServerCredentials(
                                     /*require_client_certificates=*/false),
                                 this, options_.admin_secret));
  return absl::OkStatus();
}

absl::Status FrontendServer::SetPolicy(const std::string& name) {
  ASSIGN_OR_RETURN(auto policy, PolicyRegistry::Create(name, policy_options_));
  // A policy that cannot plan the cluster as it is would fail every plan
  // from now on; the one in force stays.
  if (absl::Status s = coordinator_.CheckPolicy(*policy); !s.ok()) {
    if (absl::IsUnavailable(s)) return s;  // no backend to check against
    return absl::FailedPreconditionError(absl::StrCat(
        "policy '", name, "' cannot plan the cluster as it is: ", s.message()));
  }
  coordinator_.SetPolicy(std::move(policy));
  trigger_.Override("policy switched to '" + name + "'");
  spdlog::info("scheduling policy switched to '{}'", name);
  return absl::OkStatus();
}

void FrontendServer::RequestReplan(const std::string& reason) {
  trigger_.Request(reason);
}

bool FrontendServer::WaitUntilReady(absl::Duration timeout) {
  return coordinator_.WaitForPlan(timeout);
}

Plan FrontendServer::current_plan() const {
  return coordinator_.current_plan();
}

int FrontendServer::http_port() const {
  return http_ == nullptr ? 0 : http_->port();
}

FrontendServer::Stats FrontendServer::stats() const {
  return coordinator_.stats();
}

bool FrontendServer::Ready() const { return reporter_.Ready(); }

AdminStatus FrontendServer::Status() const { return reporter_.Status(); }

std::string FrontendServer::RenderMetrics() {
  return reporter_.RenderMetrics();
}

void FrontendServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  repository_control_.Stop();
  if (control_ != nullptr) control_->Stop();
  // Health checks say NOT_SERVING from now on (load balancers stop sending).
  health_.Shutdown();
  trigger_.Stop();
  coordinator_.Stop();
  http_.reset();
  // Drain: refuse new calls (UNAVAILABLE), serve the ones accepted until
  // every gpulet's queue is empty and its batches are back, up to the
  // drain timeout. Then stop dispatching (calls still queued get
  // UNAVAILABLE), let in-flight batches finish, stop the gRPC server,
  // close the backend streams (anything still in flight fails), and only
  // then drop the workers their callbacks point to.
  router_.StopAccepting();
  const size_t undrained = router_.Drain(absl::Now() + options_.drain_timeout);
  if (undrained > 0) {
    spdlog::warn(
        "shutdown: {} accepted call(s) still queued after the {} "
        "drain; they get UNAVAILABLE",
        undrained, absl::FormatDuration(options_.drain_timeout));
  }
  const auto workers = router_.workers();
  for (auto& w : workers) w->Stop();
  for (auto& w : workers) w->WaitIdle(absl::Seconds(5));
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  }
  if (admin_ != nullptr) admin_->Shutdown(absl::Now() + absl::Seconds(2));
  coordinator_.SayFarewell(absl::Milliseconds(500));
  for (auto& b : backends_) b->Shutdown();
  router_.Install({});
  coordinator_.DropRetired();
  if (loops_.empty()) return;
  // Every call answered (repository calls wait for their plan at most until
  // their deadline) before the queues shut down under them.
  int left = 0;
  if (!calls_.AwaitNone(absl::Seconds(30), &left)) {
    spdlog::error(
        "{} gRPC call(s) still open 30 s after shutdown; leaving "
        "them",
        left);
    for (auto& loop : loops_) loop.detach();
    for (auto& cq : cqs_) (void)cq.release();
    (void)server_.release();
    return;
  }
  for (auto& cq : cqs_) cq->Shutdown();
  for (auto& loop : loops_) loop.join();
}

}  // namespace tessera
