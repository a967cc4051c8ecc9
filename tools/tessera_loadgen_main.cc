// tessera_loadgen: open-loop load generator for any KServe v2 gRPC server.
// Sends requests with Poisson inter-arrival times per model (asynchronously,
// so a slow server does not slow the offered load), shows live progress,
// and reports per model: offered and achieved rate, latency p50/p90/p99/max,
// SLO attainment (against the model's SLO or --slo_ms) and errors by gRPC
// status. Optionally writes the report as CSV.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpc_service.grpc.pb.h"
#include "grpcpp/grpcpp.h"

ABSL_FLAG(std::string, server, "127.0.0.1:8100", "Frontend host:port.");
ABSL_FLAG(std::string, load, "lenet:50",
          "Comma-separated model:rate pairs (requests per second), e.g. "
          "\"lenet:200,resnet18:10\".");
ABSL_FLAG(double, duration_s, 10, "How long to send (seconds).");
ABSL_FLAG(int, batch, 1, "Batch dimension of each request.");
ABSL_FLAG(double, slo_ms, 0,
          "SLO (ms) to score attainment against for models without an entry "
          "in --slos (KServe v2 does not expose SLOs); 0: not scored.");
ABSL_FLAG(std::string, slos, "",
          "Comma-separated model:slo_ms pairs, e.g. \"lenet:50\".");
ABSL_FLAG(double, timeout_s, 30, "Client deadline of each request.");
ABSL_FLAG(int, seed, 1, "Random seed (arrivals and input data).");
ABSL_FLAG(std::string, csv, "", "Write the per-model report here as CSV.");

namespace tessera {
namespace {

struct ModelLoad {
  std::string model;
  double rate = 0;
  double slo_ms = 0;
  inference::ModelInferRequest request;
};

// Results of one model, filled from gRPC callback threads.
struct ModelStats {
  absl::Mutex mu;
  std::vector<double> latencies_ms ABSL_GUARDED_BY(mu);  // OK responses
  std::map<std::string, int64_t> errors ABSL_GUARDED_BY(mu);
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> done{0};
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// A request with random inputs of the model's declared shapes.
bool BuildRequest(inference::GRPCInferenceService::Stub* stub,
                  const std::string& model, int batch, std::mt19937* rng,
                  inference::ModelInferRequest* request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  inference::ModelMetadataRequest meta_request;
  meta_request.set_name(model);
  inference::ModelMetadataResponse meta;
  grpc::Status s = stub->ModelMetadata(&context, meta_request, &meta);
  if (!s.ok()) {
    std::fprintf(stderr, "ModelMetadata(%s): %s\n", model.c_str(),
                 s.error_message().c_str());
    return false;
  }
  request->set_model_name(model);
  for (const auto& in : meta.inputs()) {
    auto* t = request->add_inputs();
    t->set_name(in.name());
    t->set_datatype(in.datatype());
    int64_t n = 1;
    for (int d = 0; d < in.shape_size(); ++d) {
      const int64_t dim = d == 0 ? batch : in.shape(d);
      t->add_shape(dim);
      n *= dim;
    }
    std::string* raw = request->add_raw_input_contents();
    if (in.datatype() == "FP32") {
      std::normal_distribution<float> dist;
      raw->resize(n * 4);
      float* p = reinterpret_cast<float*>(raw->data());
      for (int64_t i = 0; i < n; ++i) p[i] = dist(*rng);
    } else if (in.datatype() == "INT64") {
      std::uniform_int_distribution<int64_t> dist(0, 999);
      raw->resize(n * 8);
      int64_t* p = reinterpret_cast<int64_t*>(raw->data());
      for (int64_t i = 0; i < n; ++i) p[i] = dist(*rng);
    } else if (in.datatype() == "INT32") {
      raw->resize(n * 4);
      int32_t* p = reinterpret_cast<int32_t*>(raw->data());
      for (int64_t i = 0; i < n; ++i) p[i] = 1;
    } else {
      std::fprintf(stderr, "%s: input datatype %s not supported\n",
                   model.c_str(), in.datatype().c_str());
      return false;
    }
  }
  return true;
}

// One asynchronous call; deletes itself when done.
class Call {
 public:
  static void Start(inference::GRPCInferenceService::Stub* stub,
                    const inference::ModelInferRequest& request,
                    ModelStats* stats, absl::Duration timeout) {
    auto* call = new Call(stats);
    call->context_.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    call->start_ = absl::Now();
    stats->sent++;
    stub->async()->ModelInfer(&call->context_, &request, &call->response_,
                              [call](grpc::Status s) { call->Done(s); });
  }

 private:
  explicit Call(ModelStats* stats) : stats_(stats) {}
  void Done(const grpc::Status& s) {
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start_);
    {
      absl::MutexLock lock(&stats_->mu);
      if (s.ok()) {
        stats_->latencies_ms.push_back(ms);
      } else {
        static const char* kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
        const int code = static_cast<int>(s.error_code());
        stats_->errors[code >= 0 && code <= 16 ? kNames[code]
                                               : absl::StrCat(code)]++;
      }
    }
    stats_->done++;
    delete this;
  }

  ModelStats* stats_;
  grpc::ClientContext context_;
  inference::ModelInferResponse response_;
  absl::Time start_;
};

int Run() {
  std::vector<ModelLoad> loads;
  std::map<std::string, double> slos;
  for (absl::string_view p :
       absl::StrSplit(absl::GetFlag(FLAGS_slos), ',', absl::SkipEmpty())) {
    std::vector<std::string> kv = absl::StrSplit(p, ':');
    double v;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &v)) {
      std::fprintf(stderr, "bad --slos entry '%s'\n", std::string(p).c_str());
      return 2;
    }
    slos[kv[0]] = v;
  }
  for (absl::string_view p :
       absl::StrSplit(absl::GetFlag(FLAGS_load), ',', absl::SkipEmpty())) {
    std::vector<std::string> kv = absl::StrSplit(p, ':');
    double rate;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &rate) || rate <= 0) {
      std::fprintf(stderr, "bad --load entry '%s' (want model:rate)\n",
                   std::string(p).c_str());
      return 2;
    }
    ModelLoad l;
    l.model = kv[0];
    l.rate = rate;
    l.slo_ms =
        slos.count(l.model) ? slos[l.model] : absl::GetFlag(FLAGS_slo_ms);
    loads.push_back(std::move(l));
  }
  if (loads.empty()) {
    std::fprintf(stderr, "--load names no model\n");
    return 2;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  auto stub = inference::GRPCInferenceService::NewStub(
      grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server),
                                grpc::InsecureChannelCredentials(), args));
  std::mt19937 rng(absl::GetFlag(FLAGS_seed));
  for (ModelLoad& l : loads) {
    if (!BuildRequest(stub.get(), l.model, absl::GetFlag(FLAGS_batch), &rng,
                      &l.request)) {
      return 2;
    }
  }

  // One sender thread per model, each with its own Poisson schedule
  // (absolute times, so sending delays do not lower the offered rate).
  std::vector<std::unique_ptr<ModelStats>> stats;
  for (size_t i = 0; i < loads.size(); ++i) {
    stats.push_back(std::make_unique<ModelStats>());
  }
  const absl::Time start = absl::Now();
  const absl::Duration duration =
      absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  const absl::Duration timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  std::vector<std::thread> senders;
  for (size_t i = 0; i < loads.size(); ++i) {
    senders.emplace_back([&, i] {
      std::mt19937_64 r(absl::GetFlag(FLAGS_seed) * 7919 + i);
      std::exponential_distribution<double> gap(loads[i].rate);
      absl::Time next = start + absl::Seconds(gap(r));
      while (next < start + duration) {
        absl::SleepFor(next - absl::Now());
        Call::Start(stub.get(), loads[i].request, stats[i].get(), timeout);
        next += absl::Seconds(gap(r));
      }
    });
  }
  // Live progress, once a second, until everything sent is answered.
  const absl::Time give_up = start + duration + timeout + absl::Seconds(5);
  while (true) {
    absl::SleepFor(absl::Seconds(1));
    int64_t sent = 0, done = 0;
    for (const auto& s : stats) {
      sent += s->sent;
      done += s->done;
    }
    const double t = absl::ToDoubleSeconds(absl::Now() - start);
    std::fprintf(stderr, "\r[%5.1fs] sent %lld  answered %lld  in flight %lld ",
                 t, static_cast<long long>(sent), static_cast<long long>(done),
                 static_cast<long long>(sent - done));
    if (absl::Now() >= start + duration && sent == done) break;
    if (absl::Now() > give_up) {
      std::fprintf(stderr, "\ngave up waiting for %lld answers\n",
                   static_cast<long long>(sent - done));
      break;
    }
  }
  std::fprintf(stderr, "\n");
  for (auto& t : senders) t.join();

  std::printf("%-20s %9s %9s %8s %8s %8s %8s %10s  %s\n", "model", "offered/s",
              "ok/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "SLO met",
              "errors");
  std::ofstream csv;
  if (!absl::GetFlag(FLAGS_csv).empty()) {
    csv.open(absl::GetFlag(FLAGS_csv));
    csv << "model,offered_rps,ok_rps,p50_ms,p90_ms,p99_ms,max_ms,slo_ms,"
           "slo_attainment,sent,errors\n";
  }
  const double seconds = absl::ToDoubleSeconds(duration);
  for (size_t i = 0; i < loads.size(); ++i) {
    ModelStats& s = *stats[i];
    absl::MutexLock lock(&s.mu);
    const auto& lat = s.latencies_ms;
    std::string errors;
    int64_t error_count = 0;
    for (const auto& [name, n] : s.errors) {
      absl::StrAppend(&errors, errors.empty() ? "" : " ", name, ":", n);
      error_count += n;
    }
    int64_t met = 0;
    for (double ms : lat)
      met += (loads[i].slo_ms <= 0 || ms <= loads[i].slo_ms);
    const double attainment =
        s.sent == 0 ? 0 : static_cast<double>(met) / s.sent;
    std::string slo_text =
        loads[i].slo_ms > 0
            ? absl::StrCat(absl::SixDigits(100 * attainment), "%")
            : std::string("-");
    std::printf("%-20s %9.1f %9.1f %8.2f %8.2f %8.2f %8.2f %10s  %s\n",
                loads[i].model.c_str(), s.sent / seconds, lat.size() / seconds,
                Percentile(lat, .5), Percentile(lat, .9), Percentile(lat, .99),
                lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end()),
                slo_text.c_str(), errors.empty() ? "none" : errors.c_str());
    if (csv.is_open()) {
      csv << loads[i].model << "," << s.sent / seconds << ","
          << lat.size() / seconds << "," << Percentile(lat, .5) << ","
          << Percentile(lat, .9) << "," << Percentile(lat, .99) << ","
          << (lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end()))
          << "," << loads[i].slo_ms << "," << attainment << "," << s.sent << ","
          << error_count << "\n";
    }
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Open-loop Poisson load generator for KServe v2 gRPC servers.\n"
      "Example: tessera_loadgen --server=127.0.0.1:8100 "
      "--load=lenet:200,resnet18:10 --slos=lenet:50,resnet18:600 "
      "--duration_s=20");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
