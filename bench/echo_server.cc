#include "bench/echo_server.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/async_call.h"
#include "common/grpc_tuning.h"
#include "common/termination_signals.h"
#include "grpc_service.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace tessera {
namespace {

// Echoes the first raw input back as the first raw output. With
// `handoff`, the call is finished from another thread (as the frontend
// finishes calls from its backend-stream reader thread), to measure what
// that hand-off alone costs.
class EchoService final
    : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit EchoService(bool handoff) : handoff_(handoff) {
    if (handoff_) thread_ = std::thread([this] { Loop(); });
  }
  ~EchoService() override {
    if (handoff_) {
      {
        absl::MutexLock lock(&mu_);
        stop_ = true;
      }
      thread_.join();
    }
  }

  grpc::ServerUnaryReactor* ModelInfer(
      grpc::CallbackServerContext* context,
      const inference::ModelInferRequest* request,
      inference::ModelInferResponse* response) override {
    *response->add_raw_output_contents() = request->raw_input_contents(0);
    auto* reactor = context->DefaultReactor();
    if (handoff_) {
      absl::MutexLock lock(&mu_);
      pending_.push_back(reactor);
    } else {
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }

 private:
  void Loop() {
    while (true) {
      std::vector<grpc::ServerUnaryReactor*> ready;
      {
        absl::MutexLock lock(&mu_);
        auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stop_ || !pending_.empty();
        };
        mu_.Await(absl::Condition(&wake));
        if (stop_) return;
        ready.swap(pending_);
      }
      for (auto* r : ready) r->Finish(grpc::Status::OK);
    }
  }

  const bool handoff_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<grpc::ServerUnaryReactor*> pending_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// The same echo on gRPC's synchronous server API.
class SyncEchoService final : public inference::GRPCInferenceService::Service {
 public:
  grpc::Status ModelInfer(grpc::ServerContext*,
                          const inference::ModelInferRequest* request,
                          inference::ModelInferResponse* response) override {
    *response->add_raw_output_contents() = request->raw_input_contents(0);
    return grpc::Status::OK;
  }
};

// The same echo on gRPC's asynchronous API, driven by one thread that
// polls a single completion queue and answers inline: no other thread of
// the process waits in gRPC's poller, so no event is handed between
// threads.
class AsyncEcho {
 public:
  AsyncEcho(inference::GRPCInferenceService::AsyncService* service,
            grpc::ServerCompletionQueue* cq)
      : service_(service), cq_(cq) {}

  void Run(const PollOptions& poll) {
    new Call(service_, cq_);
    RunCompletionQueue(cq_, poll);
  }

 private:
  class Call final : public AsyncTag {
   public:
    Call(inference::GRPCInferenceService::AsyncService* service,
         grpc::ServerCompletionQueue* cq)
        : service_(service), cq_(cq), responder_(&context_) {
      service_->RequestModelInfer(&context_, &request_, &responder_, cq_, cq_,
                                  this);
    }
    void Proceed(bool ok) override {
      if (finishing_ || !ok) {
        delete this;
        return;
      }
      new Call(service_, cq_);  // the next call
      *response_.add_raw_output_contents() = request_.raw_input_contents(0);
      finishing_ = true;
      responder_.Finish(response_, grpc::Status::OK, this);
    }

   private:
    inference::GRPCInferenceService::AsyncService* service_;
    grpc::ServerCompletionQueue* cq_;
    grpc::ServerContext context_;
    inference::ModelInferRequest request_;
    inference::ModelInferResponse response_;
    grpc::ServerAsyncResponseWriter<inference::ModelInferResponse> responder_;
    bool finishing_ = false;
  };

  inference::GRPCInferenceService::AsyncService* service_;
  grpc::ServerCompletionQueue* cq_;
};

}  // namespace

int ServeEcho(const std::string& port_file, const EchoServerOptions& options) {
  BlockTerminationSignals();
  EchoService echo(options.handoff);
  SyncEchoService sync_echo;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.SetMaxReceiveMessageSize(-1);
  // The floor gets the transport settings the serving path has.
  ApplyTransportTuning(&builder);
  inference::GRPCInferenceService::AsyncService async_echo;
  std::unique_ptr<grpc::ServerCompletionQueue> cq;
  const bool async = options.async;
  if (async) {
    builder.RegisterService(&async_echo);
    cq = builder.AddCompletionQueue();
  } else if (options.sync) {
    builder.RegisterService(&sync_echo);
  } else {
    builder.RegisterService(&echo);
  }
  auto server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  std::thread loop;
  if (async) {
    loop = std::thread(
        [&] { AsyncEcho(&async_echo, cq.get()).Run(options.poll); });
  }
  std::ofstream(port_file + ".tmp") << port << "\n";
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  WaitForTerminationSignal();
  server->Shutdown();
  if (async) {
    cq->Shutdown();
    loop.join();
  }
  return 0;
}

}  // namespace tessera
