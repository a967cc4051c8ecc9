#include "tools/scenario_runner.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "backend.grpc.pb.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "tools/load_generator.h"
#include "tools/random_request.h"

namespace tessera {
namespace {

// One sample of the cluster's state.
struct Sample {
  absl::Duration at;
  int gpus = 0;
  double share_sum = 0;
  int64_t swaps = 0;    // summed over backends (cumulative)
  double cpu_busy = 0;  // fraction since the previous sample
};

// Busy and total jiffies of all CPUs (/proc/stat).
std::pair<int64_t, int64_t> CpuJiffies() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  int64_t v[10] = {0};
  in >> cpu;
  for (int64_t& x : v) in >> x;
  int64_t total = 0;
  for (int i = 0; i < 8; ++i) total += v[i];  // guest time is in user
  const int64_t idle = v[3] + v[4];
  return {total - idle, total};
}

}  // namespace

absl::StatusOr<std::vector<std::pair<absl::Duration, double>>>
ScenarioRunner::ParseSchedule(const std::string& text) {
  std::vector<std::pair<absl::Duration, double>> out;
  for (absl::string_view part :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<std::string> kv = absl::StrSplit(part, ':');
    double t, m;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[0], &t) ||
        !absl::SimpleAtod(kv[1], &m) || t < 0 || m < 0 ||
        (!out.empty() && absl::Seconds(t) <= out.back().first)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad schedule entry '", part,
                       "': want seconds:multiplier with ascending seconds"));
    }
    out.emplace_back(absl::Seconds(t), m);
  }
  if (out.empty()) return absl::InvalidArgumentError("empty schedule");
  return out;
}

absl::StatusOr<ScenarioRunner::Report> ScenarioRunner::Run(
    const Options& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  auto stub =
      inference::GRPCInferenceService::NewStub(grpc::CreateCustomChannel(
          options.frontend, grpc::InsecureChannelCredentials(), args));
  std::vector<std::unique_ptr<BackendService::Stub>> backends;
  for (const std::string& b : options.backends) {
    backends.push_back(BackendService::NewStub(
        grpc::CreateChannel(b, grpc::InsecureChannelCredentials())));
  }

  // One load per model: the schedule's multipliers times its base rate.
  std::vector<LoadGenerator::ModelLoad> loads;
  std::mt19937 rng(static_cast<uint32_t>(options.seed));
  for (const auto& [model, rate] : options.base_rates) {
    ASSIGN_OR_RETURN(auto request,
                     RandomRequestFor(stub.get(), model, 1, &rng));
    LoadGenerator::ModelLoad load;
    load.model = model;
    load.request = std::move(request);
    if (options.shape_only) MakeShapeOnly(&load.request);
    for (const auto& [t, m] : options.schedule) {
      load.schedule.push_back({t, rate * m});
    }
    loads.push_back(std::move(load));
  }

  // Sample the backends while the load runs.
  absl::Mutex mu;
  std::vector<Sample> samples;
  std::atomic<bool> done{false};
  const absl::Time start = absl::Now();
  std::thread sampler([&] {
    auto last_cpu = CpuJiffies();
    while (!done) {
      Sample s;
      s.at = absl::Now() - start;
      std::set<std::string> devices;
      for (size_t i = 0; i < backends.size(); ++i) {
        grpc::ClientContext context;
        context.set_deadline(
            absl::ToChronoTime(absl::Now() + absl::Milliseconds(400)));
        options.cluster_secret.Attach(&context);
        HealthResponse health;
        if (!backends[i]->Health(&context, HealthRequest(), &health).ok()) {
          continue;
        }
        s.swaps += health.swaps();
        for (const GpuletStatus& g : health.gpulets()) {
          if (g.retiring()) continue;
          devices.insert(absl::StrCat(i, "/", g.device_id()));
          s.share_sum += g.share_percent();
        }
      }
      s.gpus = static_cast<int>(devices.size());
      const auto cpu = CpuJiffies();
      const int64_t total = cpu.second - last_cpu.second;
      s.cpu_busy = total > 0
                       ? static_cast<double>(cpu.first - last_cpu.first) / total
                       : 0;
      last_cpu = cpu;
      {
        absl::MutexLock lock(&mu);
        samples.push_back(s);
      }
      absl::SleepFor(absl::Milliseconds(500));
    }
  });

  LoadGenerator::Options lo;
  lo.duration = options.duration;
  lo.timeout = absl::Seconds(30);
  lo.seed = options.seed;
  lo.progress = [&](absl::Duration t, int64_t sent, int64_t answered) {
    std::fprintf(
        stderr, "\r[%5.1fs / %.0fs] sent %lld answered %lld ",
        absl::ToDoubleSeconds(t), absl::ToDoubleSeconds(options.duration),
        static_cast<long long>(sent), static_cast<long long>(answered));
  };
  const LoadGenerator::Result result =
      LoadGenerator::Run(stub.get(), loads, lo);
  std::fprintf(stderr, "\n");
  done = true;
  sampler.join();

  Report report;
  report.sent = result.sent;
  report.lost = result.lost;
  const int n = static_cast<int>(
      (options.duration + options.interval - absl::Nanoseconds(1)) /
      options.interval);
  report.intervals.resize(std::max(1, n));
  for (int i = 0; i < static_cast<int>(report.intervals.size()); ++i) {
    Interval& iv = report.intervals[i];
    iv.start = options.interval * i;
    for (const auto& [t, m] : options.schedule) {
      if (t <= iv.start) iv.multiplier = m;
    }
  }
  const double seconds = absl::ToDoubleSeconds(options.interval);
  for (const LoadGenerator::Record& r : result.records) {
    const int i = static_cast<int>(r.sent / options.interval);
    if (i < 0 || i >= static_cast<int>(report.intervals.size())) continue;
    Interval& iv = report.intervals[i];
    const std::string& model = loads[r.load].model;
    ++iv.requests;
    const bool ok = r.code == absl::StatusCode::kOk;
    if (ok) iv.ok_rps[model] += 1 / seconds;
    if (!ok ||
        absl::ToDoubleMilliseconds(r.latency) > options.slo_ms.at(model)) {
      ++iv.violations;
    }
  }
  // Device samples: mean/max per interval; swaps = counter increase.
  absl::MutexLock lock(&mu);
  int64_t prev_swaps = samples.empty() ? 0 : samples.front().swaps;
  for (Interval& iv : report.intervals) {
    int count = 0;
    double gpus = 0, shares = 0, cpu = 0;
    int64_t last_swaps = prev_swaps;
    for (const Sample& s : samples) {
      if (s.at < iv.start || s.at >= iv.start + options.interval) continue;
      ++count;
      gpus += s.gpus;
      shares += s.share_sum;
      cpu += s.cpu_busy;
      iv.gpus_max = std::max(iv.gpus_max, s.gpus);
      last_swaps = std::max(last_swaps, s.swaps);
    }
    if (count > 0) {
      iv.gpus_mean = gpus / count;
      iv.share_sum_mean = shares / count;
      iv.host_cpu_percent = 100 * cpu / count;
    }
    iv.swaps = last_swaps - prev_swaps;
    prev_swaps = last_swaps;
  }
  return report;
}

void ScenarioRunner::Print(const Report& report, const Options& options,
                           double time_scale) {
  std::printf(
      "Scenario: %lld requests (%lld lost); rates and times in cluster units "
      "(time scale k = %g: GPU rates are k x these, GPU times these / k)\n",
      static_cast<long long>(report.sent), static_cast<long long>(report.lost),
      time_scale);
  std::printf("%7s %5s", "t (s)", "x");
  for (const auto& [m, r] : options.base_rates) {
    std::printf(" %12s", (m.substr(0, 10) + "/s").c_str());
  }
  std::printf(" %6s %6s %8s %6s %8s %6s\n", "GPUs", "max", "shares%", "swaps",
              "viol%", "cpu%");
  for (const Interval& iv : report.intervals) {
    std::printf("%7.0f %5.2f", absl::ToDoubleSeconds(iv.start), iv.multiplier);
    for (const auto& [m, r] : options.base_rates) {
      auto it = iv.ok_rps.find(m);
      std::printf(" %12.1f", it == iv.ok_rps.end() ? 0.0 : it->second);
    }
    std::printf(" %6.2f %6d %8.0f %6lld %8.2f %6.0f\n", iv.gpus_mean,
                iv.gpus_max, iv.share_sum_mean,
                static_cast<long long>(iv.swaps), iv.violation_percent(),
                iv.host_cpu_percent);
  }
}

absl::Status ScenarioRunner::WriteCsv(const Report& report,
                                      const Options& options,
                                      const std::string& path) {
  std::ofstream out(path);
  if (!out) return absl::UnavailableError("cannot write " + path);
  out << "t_s,multiplier";
  for (const auto& [m, r] : options.base_rates) out << "," << m << "_ok_rps";
  out << ",gpus_mean,gpus_max,share_sum_percent,swaps,requests,violations,"
         "violation_percent,host_cpu_percent\n";
  for (const Interval& iv : report.intervals) {
    out << absl::ToDoubleSeconds(iv.start) << "," << iv.multiplier;
    for (const auto& [m, r] : options.base_rates) {
      auto it = iv.ok_rps.find(m);
      out << "," << (it == iv.ok_rps.end() ? 0.0 : it->second);
    }
    out << "," << iv.gpus_mean << "," << iv.gpus_max << "," << iv.share_sum_mean
        << "," << iv.swaps << "," << iv.requests << "," << iv.violations << ","
        << iv.violation_percent() << "," << iv.host_cpu_percent << "\n";
  }
  return absl::OkStatus();
}

}  // namespace tessera
