#include "scheduler/inss_workload_sampler.h"

#include <algorithm>
#include <map>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/model_instance.h"
#include "common/status_macros.h"

namespace tessera {

absl::StatusOr<InssWorkloadSampler> InssWorkloadSampler::Create(
    ClusterSnapshot pool, PolicyOptions policy_options, InssCheckpointInfo info,
    InssWorkloadSamplerOptions options) {
  if (options.min_gpus < 1 || options.min_gpus > options.max_gpus ||
      options.max_gpus > info.gpus() ||
      options.max_gpus > static_cast<int>(pool.devices.size()) ||
      options.min_models < 1 || options.min_models > options.max_models ||
      options.max_models > info.max_models()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "InSS workloads of ", options.min_models, "-", options.max_models,
        " models on ", options.min_gpus, "-", options.max_gpus,
        " devices do not fit a checkpoint of ", info.max_models(),
        " models and ", info.gpus(), " devices over a pool of ",
        pool.devices.size(), " devices"));
  }
  for (const std::string& m : info.models()) {
    const bool found = std::any_of(
        pool.models.begin(), pool.models.end(),
        [&](const ModelSnapshot& s) { return s.config.name() == m; });
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("the InSS workload pool lacks model '", m, "'"));
    }
  }
  InssWorkloadSampler s;
  s.pool_ = std::move(pool);
  s.policy_options_ = std::move(policy_options);
  s.info_ = std::move(info);
  s.options_ = std::move(options);
  for (const std::string& m : s.info_.models()) {
    ASSIGN_OR_RETURN(auto probe, s.Make({m}, s.options_.max_gpus));
  }
  return s;
}

std::string InssWorkloadSampler::Key(const std::vector<std::string>& models,
                                     int gpus) {
  std::map<std::string, int> count;
  for (const std::string& m : models) ++count[BaseModelName(m)];
  std::vector<std::string> parts;
  for (const auto& [name, c] : count) {
    parts.push_back(c == 1 ? name : absl::StrCat(name, "*", c));
  }
  return absl::StrCat(absl::StrJoin(parts, "+"), "@", gpus);
}

absl::StatusOr<InssWorkloadSampler::Workload> InssWorkloadSampler::ParseKey(
    const std::string& key) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "InSS workload '", key, "': ", why,
        " (want model[*count]+...@devices, e.g. alexnet*2+vgg19@4)"));
  };
  const std::vector<std::string> halves = absl::StrSplit(key, '@');
  Workload w;
  if (halves.size() != 2 || !absl::SimpleAtoi(halves[1], &w.gpus) ||
      w.gpus < 1) {
    return bad("no device count after '@'");
  }
  for (absl::string_view part : absl::StrSplit(halves[0], '+')) {
    const std::vector<std::string> mc = absl::StrSplit(part, '*');
    int count = 1;
    if (mc[0].empty() || mc.size() > 2 ||
        (mc.size() == 2 && (!absl::SimpleAtoi(mc[1], &count) || count < 1))) {
      return bad(absl::StrCat("'", part, "' is no model[*count]"));
    }
    for (int i = 0; i < count; ++i) w.models.push_back(mc[0]);
  }
  return w;
}

absl::StatusOr<InssCluster> InssWorkloadSampler::Make(
    const std::vector<std::string>& models, int gpus) const {
  if (gpus < 1 || gpus > static_cast<int>(pool_.devices.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the InSS workload pool has ", pool_.devices.size(),
                     " devices, not ", gpus));
  }
  ClusterSnapshot snapshot;
  snapshot.now = pool_.now;
  snapshot.devices.assign(pool_.devices.begin(), pool_.devices.begin() + gpus);
  std::map<std::string, int> seen;
  for (const std::string& base : models) {
    auto it = std::find_if(
        pool_.models.begin(), pool_.models.end(),
        [&](const ModelSnapshot& s) { return s.config.name() == base; });
    if (it == pool_.models.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the InSS workload pool lacks model '", base, "'"));
    }
    ModelSnapshot m = *it;
    m.config.set_name(absl::StrCat(base, "/", ++seen[base]));
    m.rate_rps = 1;
    snapshot.models.push_back(std::move(m));
  }
  return InssCluster::FromSnapshot(snapshot, policy_options_, info_);
}

InssCluster InssWorkloadSampler::Sample(std::mt19937_64& rng) const {
  const int bases = info_.models_size();
  for (;;) {
    const int gpus = std::uniform_int_distribution<int>(options_.min_gpus,
                                                        options_.max_gpus)(rng);
    int most = options_.max_models;
    if (options_.max_models_per_gpu > 0) {
      most = std::min(most, options_.max_models_per_gpu * gpus);
    }
    if (most < options_.min_models) continue;
    const int m =
        std::uniform_int_distribution<int>(options_.min_models, most)(rng);
    std::vector<std::string> models;
    for (int i = 0; i < m; ++i) {
      models.push_back(
          info_.models(std::uniform_int_distribution<int>(0, bases - 1)(rng)));
    }
    const std::string key = Key(models, gpus);
    if (std::find(options_.held_out.begin(), options_.held_out.end(), key) !=
        options_.held_out.end()) {
      continue;
    }
    auto cluster = Make(models, gpus);
    ABSL_RAW_CHECK(cluster.ok(), "a validated pool makes every workload");
    return *std::move(cluster);
  }
}

}  // namespace tessera
