// tessera_loadgen: load generator (open loop, trace replay or fixed
// concurrency) for any KServe v2 gRPC server. Sends requests with Poisson
// inter-arrival times per model (asynchronously, so a slow server does not slow
// the offered load), shows live progress, and reports per model: offered and
// achieved rate, latency p50/p90/p99/max, SLO attainment (against the model's
// SLO or --slo_ms) and errors by gRPC status. Optionally writes the report as
// CSV.
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
#include "common/grpc_status_util.h"
#include "common/usage.h"
#include "grpc_service.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "tools/load_generator.h"
#include "tools/random_request.h"

ABSL_FLAG(std::string, server, "127.0.0.1:8100", "Frontend host:port.");
ABSL_FLAG(std::string, load, "lenet:50",
          "Comma-separated model:rate pairs (requests per second), e.g. "
          "\"lenet:200,resnet18:10\".");
ABSL_FLAG(double, duration_s, 10, "How long to send (seconds).");
ABSL_FLAG(int, batch, 1, "Batch dimension of each request.");
ABSL_FLAG(bool, shape_only, false,
          "Send shapes without data (request parameter tessera.shape_only): "
          "the backend fabricates inputs. For emulated clusters at scale.");
ABSL_FLAG(double, slo_ms, 0,
          "SLO (ms) to score attainment against for models without an entry "
          "in --slos (KServe v2 does not expose SLOs); 0: not scored.");
ABSL_FLAG(std::string, slos, "",
          "Comma-separated model:slo_ms pairs, e.g. \"lenet:50\".");
ABSL_FLAG(double, timeout_s, 30, "Client deadline of each request.");
ABSL_FLAG(int, seed, 1, "Random seed (arrivals and input data).");
ABSL_FLAG(double, warmup_s, 0,
          "Requests sent in the first warmup_s seconds of each run are not "
          "counted (e.g. while a re-planning cluster adapts to the rates).");
ABSL_FLAG(std::string, csv, "", "Write the per-model report here as CSV.");
ABSL_FLAG(std::string, json, "", "Write the per-model report here as JSON.");
ABSL_FLAG(std::string, trace, "",
          "Replay a trace instead of Poisson arrivals: a CSV of lines "
          "'model,seconds' (send times from the start; other lines are "
          "ignored). Replaces --load; the run lasts until the last send.");
ABSL_FLAG(int, concurrency, 0,
          "Closed loop: keep this many calls outstanding per model of --load "
          "(its rates are ignored; 'model' alone is enough) instead of "
          "Poisson arrivals. 0: open loop.");
ABSL_FLAG(int, streams, 0,
          "Open loop: send each model's requests over this many "
          "ModelStreamInfer streams (round robin; each request carries the "
          "'timeout' parameter, Triton's per-request timeout in "
          "microseconds, set to --timeout_s) instead of one unary call each. "
          "0: unary calls.");
ABSL_FLAG(double, client_throttle_k, 0,
          "Client-side adaptive throttling (Site Reliability Engineering, "
          "'Handling Overload'): per model, refuse a request locally, "
          "without sending it, with probability max(0, (requests - k * "
          "accepts) / (requests + 1)) over the last "
          "--client_throttle_window_s, where an accept is any answer but "
          "RESOURCE_EXHAUSTED, UNAVAILABLE or DEADLINE_EXCEEDED (a "
          "request counts when answered, or as refused while still in "
          "flight a twentieth of the window after its send). Refused "
          "requests count as offered, with the code 'throttled'. 0: off; "
          "otherwise at least 1 (the book's choice is 2). Open loop only.");
ABSL_FLAG(double, client_throttle_window_s, 10,
          "The window of --client_throttle_k (seconds, > 0).");
ABSL_FLAG(bool, search, false,
          "Search the SLO-preserved max throughput: raise every rate of "
          "--load by 25% per run of --duration_s until more than 1% of "
          "requests miss their SLO or fail, then bisect 3 times.");
ABSL_FLAG(int, search_steps, 10, "Most runs of the upward search.");

namespace tessera {
namespace {

struct ModelLoad {
  std::string model;
  double rate = 0;
  double slo_ms = 0;
  inference::ModelInferRequest request;
  std::vector<absl::Duration> times;  // trace replay
};

struct ModelResult {
  std::string model;
  double offered_rps = 0, ok_rps = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  double slo_ms = 0;
  int64_t sent = 0, met = 0, error_count = 0, throttled = 0;
  std::string errors;  // "NAME:count ..."
};

// Sends every model's Poisson load at rate x `scale` for --duration_s and
// waits for every answer (or the client deadline).
std::vector<ModelResult> RunOnce(inference::GRPCInferenceService::Stub* stub,
                                 const std::vector<ModelLoad>& loads,
                                 double scale, bool progress) {
  std::vector<LoadGenerator::ModelLoad> gen;
  for (const ModelLoad& l : loads) {
    gen.push_back({l.model,
                   l.request,
                   {{absl::ZeroDuration(), l.rate * scale}},
                   l.times,
                   absl::GetFlag(FLAGS_concurrency)});
  }
  LoadGenerator::Options options;
  options.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  // A trace lasts until its last send.
  absl::Duration trace_end = absl::ZeroDuration();
  for (const ModelLoad& l : loads) {
    if (!l.times.empty()) {
      trace_end = std::max(trace_end, l.times.back() + absl::Milliseconds(1));
    }
  }
  if (trace_end > absl::ZeroDuration()) options.duration = trace_end;
  options.timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  options.seed = absl::GetFlag(FLAGS_seed);
  options.streams_per_model = absl::GetFlag(FLAGS_streams);
  options.throttle_k = absl::GetFlag(FLAGS_client_throttle_k);
  options.throttle_window =
      absl::Seconds(absl::GetFlag(FLAGS_client_throttle_window_s));
  if (progress) {
    options.progress = [](absl::Duration t, int64_t sent, int64_t done) {
      std::fprintf(
          stderr, "\r[%5.1fs] sent %lld  answered %lld  in flight %lld ",
          absl::ToDoubleSeconds(t), static_cast<long long>(sent),
          static_cast<long long>(done), static_cast<long long>(sent - done));
    };
  }
  const LoadGenerator::Result run = LoadGenerator::Run(stub, gen, options);
  if (progress) std::fprintf(stderr, "\n");
  if (run.lost > 0) {
    std::fprintf(stderr, "%lld request(s) got no answer\n",
                 static_cast<long long>(run.lost));
  }
  for (const auto& [code, message] : run.first_messages) {
    std::fprintf(stderr, "first %s: %s\n",
                 absl::StatusCodeToString(code).c_str(), message.c_str());
  }
  if (run.unsent > 0) {
    std::fprintf(stderr,
                 "the sender fell behind its schedule: %lld scheduled "
                 "request(s) were not sent; offered/s below is the rate "
                 "actually sent\n",
                 static_cast<long long>(run.unsent));
  }

  const absl::Duration warmup = absl::Seconds(absl::GetFlag(FLAGS_warmup_s));
  const double seconds = absl::ToDoubleSeconds(options.duration - warmup);
  std::vector<std::vector<double>> latencies(loads.size());
  std::vector<ModelResult> results(loads.size());
  std::vector<std::map<std::string, int64_t>> errors(loads.size());
  for (const LoadGenerator::Record& rec : run.records) {
    if (rec.sent < warmup) continue;
    ModelResult& r = results[rec.load];
    ++r.sent;
    const double ms = absl::ToDoubleMilliseconds(rec.latency);
    if (rec.code == absl::StatusCode::kOk) {
      latencies[rec.load].push_back(ms);
      r.met += (loads[rec.load].slo_ms <= 0 || ms <= loads[rec.load].slo_ms);
    } else if (rec.throttled) {
      ++errors[rec.load]["throttled"];
      ++r.throttled;
    } else {
      ++errors[rec.load][absl::StatusCodeToString(rec.code)];
    }
  }
  for (size_t i = 0; i < loads.size(); ++i) {
    ModelResult& r = results[i];
    const auto& lat = latencies[i];
    r.model = loads[i].model;
    r.slo_ms = loads[i].slo_ms;
    r.offered_rps = r.sent / seconds;
    r.ok_rps = lat.size() / seconds;
    r.p50_ms = Percentile(lat, .5);
    r.p90_ms = Percentile(lat, .9);
    r.p99_ms = Percentile(lat, .99);
    r.max_ms = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
    for (const auto& [name, n] : errors[i]) {
      absl::StrAppend(&r.errors, r.errors.empty() ? "" : " ", name, ":", n);
      r.error_count += n;
    }
  }
  return results;
}

void PrintReport(const std::vector<ModelResult>& results,
                 const std::string& csv_path, const std::string& json_path) {
  nlohmann::json json = nlohmann::json::array();
  std::printf("%-20s %9s %9s %8s %8s %8s %8s %10s  %s\n", "model", "offered/s",
              "ok/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "SLO met",
              "errors");
  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path);
    csv << "model,offered_rps,ok_rps,p50_ms,p90_ms,p99_ms,max_ms,slo_ms,"
           "slo_attainment,sent,errors,throttled\n";
  }
  for (const ModelResult& r : results) {
    const double attainment =
        r.sent == 0 ? 0 : static_cast<double>(r.met) / r.sent;
    const std::string slo_text =
        r.slo_ms > 0 ? absl::StrFormat("%.2f%%", 100 * attainment) : "-";
    std::printf("%-20s %9.1f %9.1f %8.2f %8.2f %8.2f %8.2f %10s  %s\n",
                r.model.c_str(), r.offered_rps, r.ok_rps, r.p50_ms, r.p90_ms,
                r.p99_ms, r.max_ms, slo_text.c_str(),
                r.errors.empty() ? "none" : r.errors.c_str());
    if (csv.is_open()) {
      csv << r.model << "," << r.offered_rps << "," << r.ok_rps << ","
          << r.p50_ms << "," << r.p90_ms << "," << r.p99_ms << "," << r.max_ms
          << "," << r.slo_ms << "," << attainment << "," << r.sent << ","
          << r.error_count << "," << r.throttled << "\n";
    }
    json.push_back({{"model", r.model},
                    {"offered_rps", r.offered_rps},
                    {"ok_rps", r.ok_rps},
                    {"p50_ms", r.p50_ms},
                    {"p90_ms", r.p90_ms},
                    {"p99_ms", r.p99_ms},
                    {"max_ms", r.max_ms},
                    {"slo_ms", r.slo_ms},
                    {"slo_attainment", attainment},
                    {"sent", r.sent},
                    {"errors", r.error_count},
                    {"throttled", r.throttled},
                    {"errors_by_code", r.errors}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << json.dump(2) << "\n";
}

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
    double rate = 0;
    if (absl::GetFlag(FLAGS_concurrency) > 0 && kv.size() == 1) {
      kv.push_back("1");  // closed loop: the rate is not used
    }
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
  if (!absl::GetFlag(FLAGS_trace).empty()) {
    if (absl::GetFlag(FLAGS_search)) {
      std::fprintf(stderr, "--trace and --search exclude each other\n");
      return 2;
    }
    std::ifstream in(absl::GetFlag(FLAGS_trace));
    if (!in) {
      std::fprintf(stderr, "cannot read --trace %s\n",
                   absl::GetFlag(FLAGS_trace).c_str());
      return 2;
    }
    std::map<std::string, std::vector<absl::Duration>> times;
    std::string line;
    while (std::getline(in, line)) {
      std::vector<std::string> f = absl::StrSplit(line, ',');
      double t;
      if (f.size() != 2 || !absl::SimpleAtod(f[1], &t) || t < 0) continue;
      times[f[0]].push_back(absl::Seconds(t));
    }
    loads.clear();
    for (auto& [model, ts] : times) {
      std::sort(ts.begin(), ts.end());
      ModelLoad l;
      l.model = model;
      l.times = std::move(ts);
      l.rate = l.times.size() /
               std::max(1e-3, absl::ToDoubleSeconds(l.times.back()));
      l.slo_ms = slos.count(model) ? slos[model] : absl::GetFlag(FLAGS_slo_ms);
      loads.push_back(std::move(l));
    }
  }
  if (loads.empty()) {
    std::fprintf(stderr, "--load (or --trace) names no model\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_concurrency) < 0 ||
      (absl::GetFlag(FLAGS_concurrency) > 0 &&
       (!absl::GetFlag(FLAGS_trace).empty() || absl::GetFlag(FLAGS_search)))) {
    std::fprintf(stderr,
                 "--concurrency must be >= 0 and excludes --trace and "
                 "--search\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_streams) < 0 ||
      (absl::GetFlag(FLAGS_streams) > 0 &&
       absl::GetFlag(FLAGS_concurrency) > 0)) {
    std::fprintf(stderr, "--streams must be >= 0 and excludes --concurrency\n");
    return 2;
  }
  const double throttle_k = absl::GetFlag(FLAGS_client_throttle_k);
  if ((throttle_k != 0 && !(throttle_k >= 1)) ||
      !(absl::GetFlag(FLAGS_client_throttle_window_s) > 0) ||
      (throttle_k != 0 && absl::GetFlag(FLAGS_concurrency) > 0)) {
    std::fprintf(stderr,
                 "--client_throttle_k must be 0 or at least 1 (and excludes "
                 "--concurrency); --client_throttle_window_s must be > 0\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_warmup_s) < 0 ||
      (absl::GetFlag(FLAGS_trace).empty() &&
       absl::GetFlag(FLAGS_warmup_s) >= absl::GetFlag(FLAGS_duration_s))) {
    std::fprintf(stderr, "--warmup_s must be in [0, --duration_s)\n");
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
    auto request =
        RandomRequestFor(stub.get(), l.model, absl::GetFlag(FLAGS_batch), &rng);
    if (!request.ok()) {
      std::fprintf(stderr, "%s\n", request.status().ToString().c_str());
      return 2;
    }
    l.request = std::move(*request);
    if (absl::GetFlag(FLAGS_shape_only)) MakeShapeOnly(&l.request);
  }

  if (!absl::GetFlag(FLAGS_search)) {
    const std::vector<ModelResult> results =
        RunOnce(stub.get(), loads, 1.0, /*progress=*/true);
    PrintReport(results, absl::GetFlag(FLAGS_csv), absl::GetFlag(FLAGS_json));
    return 0;
  }
  // SLO-preserved max throughput: raise every rate by 25 % a step until
  // more than 1 % of the requests miss their SLO or fail, then bisect.
  std::printf("%8s %12s %12s %10s\n", "scale", "offered/s", "ok/s", "SLO met");
  double lo = 0, hi = 0, best_rate = 0;
  auto attempt = [&](double scale) {
    const std::vector<ModelResult> r =
        RunOnce(stub.get(), loads, scale, /*progress=*/false);
    int64_t sent = 0, met = 0;
    double offered = 0, ok = 0;
    for (const ModelResult& m : r) {
      sent += m.sent;
      met += m.met;
      offered += m.offered_rps;
      ok += m.ok_rps;
    }
    const double attainment = sent == 0 ? 0 : static_cast<double>(met) / sent;
    std::printf("%8.3f %12.1f %12.1f %9.2f%%\n", scale, offered, ok,
                100 * attainment);
    std::fflush(stdout);
    if (attainment >= 0.99) best_rate = std::max(best_rate, ok);
    return attainment >= 0.99;
  };
  double scale = 1.0;
  for (int step = 0; step < absl::GetFlag(FLAGS_search_steps); ++step) {
    if (attempt(scale)) {
      lo = scale;
      scale *= 1.25;
    } else {
      hi = scale;
      break;
    }
  }
  for (int i = 0; i < 3 && lo > 0 && hi > 0; ++i) {
    const double mid = (lo + hi) / 2;
    (attempt(mid) ? lo : hi) = mid;
  }
  if (lo == 0) {
    std::printf("SLOs not met even at the base rates (--load)\n");
    return 1;
  }
  std::printf(
      "SLO-preserved max throughput: %.1f req/s (scale %.3f of "
      "--load)%s\n",
      best_rate, lo, hi == 0 ? " (not bracketed: raise --search_steps)" : "");
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Load generator for KServe v2 gRPC servers: open-loop Poisson per "
      "model, trace replay (--trace) or fixed concurrency (--concurrency); "
      "reports throughput, latency percentiles, SLO attainment and errors "
      "per model; --search finds the SLO-preserved max throughput.\n"
      "Example: tessera_loadgen --server=127.0.0.1:8100 "
      "--load=lenet:200,resnet18:10 --slos=lenet:50,resnet18:600 "
      "--duration_s=20\n"
      "Closed loop: tessera_loadgen --load=lenet,resnet18 --concurrency=8");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
