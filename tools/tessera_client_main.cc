// tessera_client: a small KServe v2 gRPC client for Tessera (or any KServe
// v2 server): server health, model metadata, and inference with random
// inputs of the model's declared shapes.
#include <chrono>
#include <iostream>
#include <random>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/tls_config.h"
#include "common/usage.h"
#include "grpc_service.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tools/random_request.h"

ABSL_FLAG(std::string, server, "127.0.0.1:8100", "Frontend host:port.");
ABSL_FLAG(std::string, model, "", "Model to query; empty: list models.");
ABSL_FLAG(int, batch, 1, "Batch dimension of the request.");
ABSL_FLAG(int, count, 1, "Requests to send (sequentially).");
ABSL_FLAG(int, seed, 1, "Seed of the random inputs.");
ABSL_FLAG(bool, shape_only, false,
          "Send shapes without data (tessera.shape_only): the backend "
          "fabricates the inputs.");
ABSL_FLAG(int, timeout_ms, 10000, "Client deadline per call.");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA of the frontend's certificate when its port serves TLS; "
          "empty: plaintext.");

namespace {

int Fail(const std::string& what, const grpc::Status& s) {
  std::cerr << what << " failed: " << s.error_code() << " " << s.error_message()
            << "\n";
  return 1;
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(absl::GetFlag(FLAGS_timeout_ms)));
  return ctx;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Tessera CLI client (KServe v2 gRPC).\n"
      "  tessera_client --server=127.0.0.1:8100            list models\n"
      "  tessera_client --model=resnet18 --batch=2          infer random "
      "inputs");
  absl::ParseCommandLine(argc, argv);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  auto tls =
      tessera::TlsConfig::Load({"", "", absl::GetFlag(FLAGS_tls_ca_file)});
  if (!tls.ok()) {
    std::cerr << tls.status() << "\n";
    return 2;
  }
  auto channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server),
                                           tls->ChannelCredentials(), args);
  auto stub = inference::GRPCInferenceService::NewStub(channel);

  inference::ServerReadyResponse ready;
  grpc::Status s = stub->ServerReady(Context().get(),
                                     inference::ServerReadyRequest(), &ready);
  if (!s.ok()) return Fail("ServerReady", s);
  std::cout << "server ready: " << (ready.ready() ? "yes" : "no") << "\n";

  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) {
    inference::RepositoryIndexResponse index;
    s = stub->RepositoryIndex(Context().get(),
                              inference::RepositoryIndexRequest(), &index);
    if (!s.ok()) return Fail("RepositoryIndex", s);
    for (const auto& m : index.models()) {
      std::cout << "  " << m.name() << " v" << m.version() << " " << m.state()
                << (m.reason().empty() ? "" : " (" + m.reason() + ")") << "\n";
    }
    return 0;
  }

  inference::ModelMetadataRequest meta_request;
  meta_request.set_name(model);
  inference::ModelMetadataResponse meta;
  s = stub->ModelMetadata(Context().get(), meta_request, &meta);
  if (!s.ok()) return Fail("ModelMetadata", s);

  const int batch = absl::GetFlag(FLAGS_batch);
  std::mt19937 rng(absl::GetFlag(FLAGS_seed));
  inference::ModelInferRequest request;
  absl::Status filled = tessera::FillRandomRequest(meta, batch, &rng, &request);
  if (!filled.ok()) {
    std::cerr << filled.message() << "\n";
    return 1;
  }
  if (absl::GetFlag(FLAGS_shape_only)) tessera::MakeShapeOnly(&request);
  for (int i = 0; i < absl::GetFlag(FLAGS_count); ++i) {
    inference::ModelInferResponse response;
    const auto start = std::chrono::steady_clock::now();
    s = stub->ModelInfer(Context().get(), request, &response);
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    if (!s.ok()) return Fail("ModelInfer", s);
    std::cout << model << " batch " << batch << ": " << ms << " ms\n";
    for (int o = 0; o < response.outputs_size(); ++o) {
      const auto& out = response.outputs(o);
      std::cout << "  " << out.name() << " " << out.datatype() << " ["
                << absl::StrJoin(out.shape(), ", ") << "]";
      if (out.datatype() == "FP32") {
        const std::string& raw = response.raw_output_contents(o);
        const float* p = reinterpret_cast<const float*>(raw.data());
        const size_t n = raw.size() / 4;
        std::cout << " first values:";
        for (size_t k = 0; k < std::min<size_t>(n, 4); ++k) {
          std::cout << " " << p[k];
        }
      }
      std::cout << "\n";
    }
  }
  return 0;
}
