// tessera_scenario: drives a running cluster with a time-varying rate
// schedule and prints, per interval, throughput per model, GPUs in use,
// sum of shares, swaps, SLO violations and host CPU use (see
// tools/scenario_runner.h). Plot the CSV with scripts/plot_scenario.py.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/model_repository.h"
#include "common/usage.h"
#include "tools/scenario_runner.h"

ABSL_FLAG(std::string, frontend, "127.0.0.1:8100", "Frontend host:port.");
ABSL_FLAG(std::string, backends, "127.0.0.1:8101,127.0.0.1:8102",
          "Backends' host:port, comma-separated (sampled for GPUs, shares "
          "and swaps).");
ABSL_FLAG(std::string, cluster_token_file, "",
          "The backends' --cluster_token_file, when they require one.");
ABSL_FLAG(std::string, load,
          "lenet:80,googlenet:16,resnet50:22,vgg16:8,ssd_mobilenet:8",
          "Base rate per model, model:req/s (cluster units), "
          "comma-separated.");
ABSL_FLAG(std::string, schedule, "0:0.3,20:1,40:0.3,60:1.3",
          "seconds:multiplier of the base rates, from that time on: rises, "
          "falls, rises higher (gpulet paper Fig. 15).");
ABSL_FLAG(double, duration_s, 80, "Length of the run (seconds).");
ABSL_FLAG(double, interval_s, 5, "Reporting interval (seconds).");
ABSL_FLAG(std::string, model_repository, "configs/emulated/models",
          "Repository whose configs give the SLOs.");
ABSL_FLAG(double, time_scale, 10,
          "The cluster's time scale k: SLOs are config SLO x k.");
ABSL_FLAG(bool, shape_only, true, "Send shape-only requests.");
ABSL_FLAG(std::string, csv, "", "Write the per-interval table here.");
ABSL_FLAG(int, seed, 1, "Arrival seed.");

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Drives a running Tessera cluster with a rate schedule and reports "
      "per interval: throughput per model, GPUs in use, shares, swaps, SLO "
      "violations, host CPU.\nExample (after scripts/run_emulated.sh): "
      "tessera_scenario --csv=/tmp/scenario.csv");
  absl::ParseCommandLine(argc, argv);
  tessera::ScenarioRunner::Options options;
  options.frontend = absl::GetFlag(FLAGS_frontend);
  options.backends = absl::StrSplit(absl::GetFlag(FLAGS_backends), ',',
                                    absl::SkipWhitespace());
  if (!absl::GetFlag(FLAGS_cluster_token_file).empty()) {
    auto secret = tessera::SharedSecret::FromFile(
        absl::GetFlag(FLAGS_cluster_token_file));
    if (!secret.ok()) {
      std::fprintf(stderr, "%s\n", secret.status().ToString().c_str());
      return 2;
    }
    options.cluster_secret = *std::move(secret);
  }
  auto repo =
      tessera::ModelRepository::Load(absl::GetFlag(FLAGS_model_repository));
  if (!repo.ok()) {
    std::fprintf(stderr, "%s\n", repo.status().ToString().c_str());
    return 2;
  }
  const double k = absl::GetFlag(FLAGS_time_scale);
  for (absl::string_view p :
       absl::StrSplit(absl::GetFlag(FLAGS_load), ',', absl::SkipWhitespace())) {
    std::vector<std::string> kv = absl::StrSplit(p, ':');
    double rate;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &rate) || rate <= 0 ||
        (*repo)->Find(kv[0]) == nullptr) {
      std::fprintf(stderr, "bad --load entry '%s' (model:rate, model in %s)\n",
                   std::string(p).c_str(),
                   absl::GetFlag(FLAGS_model_repository).c_str());
      return 2;
    }
    options.base_rates[kv[0]] = rate;
    options.slo_ms[kv[0]] = (*repo)->Find(kv[0])->config.slo_ms() * k;
  }
  auto schedule =
      tessera::ScenarioRunner::ParseSchedule(absl::GetFlag(FLAGS_schedule));
  if (!schedule.ok()) {
    std::fprintf(stderr, "%s\n", schedule.status().ToString().c_str());
    return 2;
  }
  options.schedule = *schedule;
  options.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  options.interval = absl::Seconds(absl::GetFlag(FLAGS_interval_s));
  options.shape_only = absl::GetFlag(FLAGS_shape_only);
  options.seed = absl::GetFlag(FLAGS_seed);
  auto report = tessera::ScenarioRunner::Run(options);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 1;
  }
  tessera::ScenarioRunner::Print(*report, options, k);
  if (!absl::GetFlag(FLAGS_csv).empty()) {
    auto s = tessera::ScenarioRunner::WriteCsv(*report, options,
                                               absl::GetFlag(FLAGS_csv));
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  return report->lost == 0 ? 0 : 1;
}
