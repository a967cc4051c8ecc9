#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "backend.grpc.pb.h"
#include "backend/proxy_handle.h"
#include "common/model_repository.h"
#include "config.pb.h"

namespace tessera {

// The backend daemon's gRPC service: owns the node's devices and the proxy
// processes serving its gpulets, applies plans, and routes batches from
// the frontend's Execute stream to the right proxy. Thread-safe.
class BackendServiceImpl final : public BackendService::Service {
 public:
  struct Options {
    BackendConfig config;  // validated by Create
    std::string proxy_binary;
    std::string model_repository;
    int proxy_slots = 4;
    absl::Duration proxy_startup_timeout = absl::Seconds(120);
    absl::Duration drain_timeout = absl::Seconds(30);
  };

  // Validates the config (ids, device kinds, cores) and loads the model
  // repository.
  static absl::StatusOr<std::unique_ptr<BackendServiceImpl>> Create(
      Options options);
  ~BackendServiceImpl() override;

  grpc::Status GetNodeInfo(grpc::ServerContext* context,
                           const GetNodeInfoRequest* request,
                           NodeInfo* response) override;
  grpc::Status ApplyPlan(grpc::ServerContext* context,
                         const ApplyPlanRequest* request,
                         ApplyPlanResponse* response) override;
  grpc::Status Execute(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<BatchResponse, BatchRequest>* stream) override;
  grpc::Status Health(grpc::ServerContext* context,
                      const HealthRequest* request,
                      HealthResponse* response) override;

  // Stops every proxy. Call before destroying the gRPC server's threads.
  void StopProxies() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Gpulet {
    GpuletPlan plan;
    std::string device_id;
    std::vector<int> cores;
    std::shared_ptr<ProxyHandle> proxy;
  };

  explicit BackendServiceImpl(Options options,
                              std::unique_ptr<ModelRepository> repo);
  absl::StatusOr<ApplyPlanResponse> DoApplyPlan(const Plan& plan)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  const DeviceConfig* FindDevice(const std::string& id) const;

  const Options options_;
  std::unique_ptr<ModelRepository> repo_;

  // Serialises plan changes; held across proxy start-up, never by the
  // serving path.
  absl::Mutex apply_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, Gpulet> gpulets_ ABSL_GUARDED_BY(mu_);
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera
