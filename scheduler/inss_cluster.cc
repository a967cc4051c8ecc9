#include "scheduler/inss_cluster.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/model_instance.h"
#include "common/status_macros.h"
#include "scheduler/profile_fits.h"

namespace tessera {

namespace {

// The SLO as a multiple of batch-1 whole-device latency must lie within
// the factors the actor was trained on, with a margin of 1.5x either way
// (none listed: trained on the configured SLOs, nothing to check).
absl::Status CheckSloCovered(const InssCheckpointInfo& info,
                             const std::string& model, double slo_ms,
                             double base_ms) {
  if (info.slo_factors().empty() || base_ms <= 0) return absl::OkStatus();
  const auto [lo, hi] =
      std::minmax_element(info.slo_factors().begin(), info.slo_factors().end());
  constexpr double kMargin = 1.5;
  const double factor = slo_ms / base_ms;
  if (factor < *lo / kMargin || factor > *hi * kMargin) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "model '%s' has an SLO of %.1fx its batch-1 latency; the InSS "
        "checkpoint covers %.1fx to %.1fx",
        model, factor, *lo / kMargin, *hi * kMargin));
  }
  return absl::OkStatus();
}

}  // namespace

InssCheckpointInfo InssCluster::CoveringInfo(const ClusterSnapshot& snapshot) {
  InssCheckpointInfo info;
  std::set<std::string> bases;
  int with_traffic = 0;
  for (const ModelSnapshot& m : snapshot.models) {
    if (m.rate_rps <= 0) continue;
    bases.insert(BaseModelName(m.config.name()));
    ++with_traffic;
  }
  for (const std::string& b : bases) info.add_models(b);
  info.set_max_models(std::max(1, with_traffic));
  info.set_gpus(static_cast<int>(snapshot.devices.size()));
  if (!snapshot.devices.empty()) {
    info.set_profile_key(snapshot.devices[0].profile_key);
  }
  info.set_share_unit_percent(10);
  info.set_share_units(10);
  return info;
}

absl::StatusOr<InssCluster> InssCluster::FromSnapshot(
    const ClusterSnapshot& snapshot, const PolicyOptions& options,
    const InssCheckpointInfo& info) {
  if (info.models().empty() || info.gpus() <= 0 || info.max_models() <= 0 ||
      info.share_units() <= 0 || info.share_unit_percent() <= 0) {
    return absl::InvalidArgumentError(
        "InSS checkpoint info needs models, gpus > 0, max_models > 0 and "
        "share units");
  }
  InssCluster c;
  c.share_unit_percent_ = info.share_unit_percent();
  c.share_units_ = info.share_units();
  c.max_gpus_ = info.gpus();
  c.interference_owner_ = options.interference;
  c.interference_ = options.interference.get();
  if (snapshot.devices.empty() ||
      static_cast<int>(snapshot.devices.size()) > info.gpus()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the InSS checkpoint covers 1 to ", info.gpus(),
                     " devices; the cluster has ", snapshot.devices.size()));
  }
  for (const DeviceSnapshot& d : snapshot.devices) {
    if (d.profile_key != info.profile_key()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the InSS checkpoint was trained for '",
                       info.profile_key(), "' devices; device ", d.backend_id,
                       "/", d.device_id, " is '", d.profile_key, "'"));
    }
    c.devices_.push_back(d);
    if (d.memory_bytes > 0) {
      c.gpu_memory_bytes_ = c.gpu_memory_bytes_ == 0
                                ? d.memory_bytes
                                : std::min(c.gpu_memory_bytes_, d.memory_bytes);
    }
  }
  std::vector<const ModelSnapshot*> served;
  for (const ModelSnapshot& m : snapshot.models) {
    if (m.rate_rps <= 0) continue;
    const std::string base = BaseModelName(m.config.name());
    if (std::find(info.models().begin(), info.models().end(), base) ==
        info.models().end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model '", m.config.name(),
          "' is no instance of the models the InSS checkpoint was trained "
          "for (",
          absl::StrJoin(info.models(), ", "), ")"));
    }
    served.push_back(&m);
  }
  if (static_cast<int>(served.size()) > info.max_models()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the InSS checkpoint covers at most ", info.max_models(),
                     " models with traffic; the snapshot has ", served.size()));
  }
  std::sort(served.begin(), served.end(), [](const auto* a, const auto* b) {
    return a->config.name() < b->config.name();
  });
  auto models = std::make_shared<std::map<std::string, LatencyModel>>();
  for (const ModelSnapshot* m : served) {
    const std::string& name = m->config.name();
    auto p = m->profiles.find(info.profile_key());
    if (p == m->profiles.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("model '", name, "' has no profile for '",
                       info.profile_key(), "' devices"));
    }
    InssModelSlot slot;
    slot.name = name;
    slot.latency = options.fits
                       ? options.fits->FindModel(ProfileFits::KeyOf(p->second))
                       : nullptr;
    if (slot.latency == nullptr) {
      ASSIGN_OR_RETURN(auto lm, LatencyModel::FromProfile(p->second));
      slot.latency = &models->emplace(name, std::move(lm)).first->second;
    }
    slot.latency_scale = options.rules.inss().latency_headroom();
    slot.queueing_check = options.rules.inss().fill_wait();
    slot.queueing_tail = options.rules.inss().queueing_tail();
    const SharedRules& shared = options.rules.shared();
    slot.burst_tail = shared.burst_bound() ? shared.burst_tail() : 0;
    slot.bulk_queue_wait = shared.bulk_queue_wait();
    slot.slo_ms = m->config.slo_ms();
    slot.max_batch = std::min({32, std::max(1, m->config.max_batch_size()),
                               slot.latency->max_batch()});
    slot.memory_bytes = slot.latency->memory_bytes();
    slot.base_latency_ms = slot.latency->LatencyMs(1, 100);
    slot.reference_rps = 1000.0 / slot.base_latency_ms;
    RETURN_IF_ERROR(
        CheckSloCovered(info, name, slot.slo_ms, slot.base_latency_ms));
    slot.batch8_ratio =
        slot.latency->LatencyMs(8, 100) / (8 * slot.base_latency_ms);
    slot.half_share_ratio =
        slot.latency->LatencyMs(1, 50) / slot.base_latency_ms;
    c.slots_.push_back(slot);
    c.rates_rps_.push_back(m->rate_rps * options.rules.inss().rate_headroom());
  }
  while (static_cast<int>(c.slots_.size()) < info.max_models()) {
    c.slots_.emplace_back();
    c.rates_rps_.push_back(0);
  }
  c.models_ = std::move(models);
  c.fits_ = options.fits;
  return c;
}

int InssCluster::TrustedMaxBatch(int slot, double share_percent) const {
  const InssModelSlot& s = slots_[slot];
  const LatencyModel& lm = *s.latency;
  int trusted = 0;
  for (size_t i = 0; i < lm.shares().size(); ++i) {
    if (lm.shares()[i] <= share_percent + 1e-9) trusted = lm.ProfiledUpTo(i);
  }
  return std::min(trusted, s.max_batch);
}

double InssCluster::SoloMs(int slot, int batch, double share_percent) const {
  const InssModelSlot& s = slots_[slot];
  return s.latency->LatencyMs(batch, share_percent) * s.latency_scale;
}

}  // namespace tessera
