// How long a re-plan takes as the cluster grows: an emulated cluster of N
// backends (one emulated GPU each, the shipped emulated model set) is made
// to re-plan by switching its policy between sbp and gpulet through the
// admin service, and the time from the switch to the new plan being in
// force (admin status shows its epoch) is measured, planning included.
// Prints the median per N, and how many backends the last plan used.
// Times, not assertions: a benchmark.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admin.grpc.pb.h"
#include "common/percentile.h"
#include "common/usage.h"
#include "grpcpp/grpcpp.h"
#include "tests/integration/local_cluster.h"

ABSL_FLAG(std::string, backends, "1,4",
          "Cluster sizes to measure (backends, one emulated GPU each).");
ABSL_FLAG(int, replans, 8, "Re-plans per cluster size (policy switches).");
ABSL_FLAG(double, time_scale, 1, "The emulated GPUs' time scale.");
ABSL_FLAG(std::string, models, "resnet50,googlenet,vgg16,ssd_mobilenet",
          "Models of the emulated set to serve.");
ABSL_FLAG(std::string, bin_dir, TESSERA_BIN_DIR,
          "Tessera binaries the cluster runs (those of another build, to "
          "compare).");
ABSL_FLAG(std::string, rates_rps, "20,85",
          "Per cluster size of --backends, the rate every model is planned "
          "at (min_rate_rps; no traffic is sent): heavier for larger "
          "clusters, so that their plans spread over more backends.");

namespace tessera {
namespace {

const std::string kRoot = TESSERA_SOURCE_DIR;

std::string testing_tmp_dir() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr ? t : "/tmp";
}

absl::StatusOr<AdminStatus> GetStatus(AdminService::Stub* admin,
                                      const testing::LocalCluster& cluster) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  cluster.AttachAdminToken(&context);
  AdminStatus status;
  grpc::Status s = admin->GetStatus(&context, {}, &status);
  if (!s.ok()) return absl::UnavailableError(s.error_message());
  return status;
}

struct Measured {
  std::vector<double> times_ms;
  int backends_used = 0;  // by the last plan: backends with a gpulet
};

// Re-plan times (ms) of a cluster of `n` backends.
absl::StatusOr<Measured> Measure(int n, double rate_rps) {
  testing::LocalCluster::Options options;
  options.bin_dir = absl::GetFlag(FLAGS_bin_dir);
  auto repository = testing::MakeSubsetRepository(
      kRoot + "/configs/emulated/models",
      absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipEmpty()),
      absl::StrCat(testing_tmp_dir(), "/replan_bench_models_", n));
  if (!repository.ok()) return repository.status();
  options.model_repository = *repository;
  options.num_backends = n;
  const double scale = absl::GetFlag(FLAGS_time_scale);
  options.extra_backend_flags = {"--emulated_gpus=1",
                                 absl::StrCat("--time_scale=", scale),
                                 "--profile_dir=" + kRoot + "/profiles"};
  // No traffic and no periodic re-plans: only the switches re-plan.
  options.frontend_config = absl::StrCat(
      "policy: \"sbp\"\nprofile_dir: \"", kRoot,
      "/profiles\"\ninterference_profile: \"", kRoot,
      "/profiles/emulated/interference.pbtxt\"\ntime_scale: ", scale,
      "\nreplan_period_s: 3600\nmin_rate_rps: ", rate_rps, "\n");
  auto cluster = testing::LocalCluster::Start(options);
  if (!cluster.ok()) return cluster.status();
  auto admin = AdminService::NewStub(grpc::CreateChannel(
      (*cluster)->admin_address(), grpc::InsecureChannelCredentials()));
  Measured m;
  std::vector<double>& times = m.times_ms;
  for (int i = 0; i < absl::GetFlag(FLAGS_replans); ++i) {
    auto before = GetStatus(admin.get(), **cluster);
    if (!before.ok()) return before.status();
    const std::string next = before->policy() == "sbp" ? "gpulet" : "sbp";
    grpc::ClientContext context;
    (*cluster)->AttachAdminToken(&context);
    SetPolicyRequest request;
    request.set_policy(next);
    SetPolicyResponse response;
    const absl::Time start = absl::Now();
    grpc::Status s = admin->SetPolicy(&context, request, &response);
    if (!s.ok()) return absl::InternalError(s.error_message());
    const absl::Time deadline = start + absl::Seconds(60);
    while (true) {
      auto now = GetStatus(admin.get(), **cluster);
      if (!now.ok()) return now.status();
      if (now->plan().epoch() > before->plan().epoch()) {
        std::set<std::string> used;
        for (const DevicePlan& d : now->plan().devices()) {
          if (d.gpulets_size() > 0) used.insert(d.backend_id());
        }
        m.backends_used = static_cast<int>(used.size());
        break;
      }
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError("no new plan within 60 s");
      }
      absl::SleepFor(absl::Milliseconds(2));
    }
    times.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
  }
  return m;
}

int Run() {
  std::vector<int> sizes;
  for (absl::string_view s :
       absl::StrSplit(absl::GetFlag(FLAGS_backends), ',', absl::SkipEmpty())) {
    int n = 0;
    if (!absl::SimpleAtoi(s, &n) || n < 1) {
      std::fprintf(stderr, "--backends: '%s' is not a positive count\n",
                   std::string(s).c_str());
      return 2;
    }
    sizes.push_back(n);
  }
  std::vector<double> rates;
  for (absl::string_view s :
       absl::StrSplit(absl::GetFlag(FLAGS_rates_rps), ',', absl::SkipEmpty())) {
    double r = 0;
    if (!absl::SimpleAtod(s, &r) || r <= 0) {
      std::fprintf(stderr, "--rates_rps: '%s' is not a positive rate\n",
                   std::string(s).c_str());
      return 2;
    }
    rates.push_back(r);
  }
  if (rates.size() != sizes.size()) {
    std::fprintf(stderr, "--rates_rps needs one rate per --backends entry\n");
    return 2;
  }
  std::printf("%-9s %8s %6s %8s %14s %14s\n", "backends", "rate", "used",
              "replans", "median (ms)", "max (ms)");
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int n = sizes[k];
    auto measured = Measure(n, rates[k]);
    if (!measured.ok()) {
      std::fprintf(stderr, "%d backends: %s\n", n,
                   measured.status().ToString().c_str());
      return 1;
    }
    const std::vector<double>& times = measured->times_ms;
    std::printf("%-9d %8.0f %6d %8zu %14.1f %14.1f\n", n, rates[k],
                measured->backends_used, times.size(), Percentile(times, 0.5),
                *std::max_element(times.begin(), times.end()));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Re-plan time against cluster size on an emulated cluster: median "
      "time from a policy switch to the new plan in force, per number of "
      "backends.");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
