#include "scheduler/inss_cluster.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {

absl::StatusOr<InssCluster> InssCluster::FromSnapshot(
    const ClusterSnapshot& snapshot, const PolicyOptions& options,
    const InssCheckpointInfo& info) {
  if (info.models().empty() || info.gpus() <= 0 || info.share_units() <= 0 ||
      info.share_unit_percent() <= 0) {
    return absl::InvalidArgumentError(
        "InSS checkpoint info needs models, gpus > 0 and share units");
  }
  InssCluster c;
  c.share_unit_percent_ = info.share_unit_percent();
  c.share_units_ = info.share_units();
  c.interference_owner_ = options.interference;
  c.interference_ = options.interference.get();
  if (static_cast<int>(snapshot.devices.size()) != info.gpus()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the InSS checkpoint was trained for ", info.gpus(),
                     " devices; the cluster has ", snapshot.devices.size()));
  }
  for (const DeviceSnapshot& d : snapshot.devices) {
    if (d.profile_key != info.profile_key()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the InSS checkpoint was trained for '",
                       info.profile_key(), "' devices; device ", d.backend_id,
                       "/", d.device_id, " is '", d.profile_key, "'"));
    }
    c.devices_.push_back(&d);
    if (d.memory_bytes > 0) {
      c.gpu_memory_bytes_ = c.gpu_memory_bytes_ == 0
                                ? d.memory_bytes
                                : std::min(c.gpu_memory_bytes_, d.memory_bytes);
    }
  }
  std::map<std::string, const ModelSnapshot*> by_name;
  for (const ModelSnapshot& m : snapshot.models) {
    by_name[m.config.name()] = &m;
    const bool known = std::find(info.models().begin(), info.models().end(),
                                 m.config.name()) != info.models().end();
    if (!known && m.rate_rps > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("model '", m.config.name(),
                       "' is not one the InSS checkpoint was trained for (",
                       absl::StrJoin(info.models(), ", "), ")"));
    }
  }
  auto models = std::make_shared<std::map<std::string, LatencyModel>>();
  for (const std::string& name : info.models()) {
    auto it = by_name.find(name);
    InssModelSlot slot;
    slot.name = name;
    double rate = 0;
    if (it != by_name.end()) {
      const ModelSnapshot& m = *it->second;
      auto p = m.profiles.find(info.profile_key());
      if (p == m.profiles.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("model '", name, "' has no profile for '",
                         info.profile_key(), "' devices"));
      }
      auto lm = LatencyModel::FromProfile(p->second);
      if (!lm.ok()) return lm.status();
      auto [pos, inserted] = models->emplace(name, std::move(*lm));
      slot.latency = &pos->second;
      slot.latency_scale = options.rules.inss().latency_headroom();
      slot.queueing_check = options.rules.inss().fill_wait();
      const SharedRules& shared = options.rules.shared();
      slot.burst_tail = shared.burst_bound() ? shared.burst_tail() : 0;
      slot.slo_ms = m.config.slo_ms();
      slot.max_batch = std::min({32, std::max(1, m.config.max_batch_size()),
                                 slot.latency->max_batch()});
      slot.memory_bytes = slot.latency->memory_bytes();
      slot.base_latency_ms = slot.latency->LatencyMs(1, 100);
      slot.reference_rps = 1000.0 / slot.base_latency_ms;
      rate = m.rate_rps * options.rules.inss().rate_headroom();
    }
    c.slots_.push_back(slot);
    c.rates_rps_.push_back(rate);
  }
  c.models_ = std::move(models);
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
