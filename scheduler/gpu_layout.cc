#include "scheduler/gpu_layout.h"

#include "common/status_macros.h"
#include "google/protobuf/util/message_differencer.h"
#include "scheduler/resolve_memo.h"
#include "scheduler/time_share_solver.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera {

bool GpuLayout::used() const {
  for (const Slot& s : slots_) {
    if (!s.free()) return true;
  }
  return false;
}

void GpuLayout::ApplyChargeRules(const GpuletRules& rules) {
  set_occupancy_weighted_interference(rules.occupancy_weighted_interference());
  set_interference_within_headroom(rules.interference_within_headroom());
  if (rules.interference_headroom() > 0) {
    set_interference_headroom(rules.interference_headroom());
  }
}

int GpuLayout::Split(double share) {
  if (share >= 100) return 0;
  slots_ = {Slot{share, {}, {}}, Slot{100 - share, {}, {}}};
  return 0;
}

bool GpuLayout::Resolve(const InterferenceModel* interference) {
  const int rounds = interference == nullptr ? 1 : 3;
  for (int round = 0; round < rounds; ++round) {
    // A round in which no slot's batches change leaves every slot's
    // neighbours, hence the next round's input, as they were: done.
    bool changed = false;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].free()) continue;
      const std::vector<int> before = slots_[i].schedule.batches;
      if (!ResolveSlot(i, interference)) return false;
      changed = changed || slots_[i].schedule.batches != before;
    }
    if (!changed) break;
  }
  return true;
}

bool GpuLayout::ResolveSlot(size_t i, const InterferenceModel* interference) {
  Slot& slot = slots_[i];
  if (slot.free()) return true;
  SliceLatencyFn latency = SoloLatency;
  // The neighbours are fixed while this slot is solved: list them once
  // (SolveTimeShare evaluates each (model, batch) once).
  std::vector<Placement> neighbours;
  // Occupancy weighting: per neighbour, its gpulet and busy fraction.
  std::vector<size_t> neighbour_slot;
  std::vector<double> neighbour_busy;
  if (interference != nullptr) {
    for (size_t k = 0; k < slots_.size(); ++k) {
      const Slot& other = slots_[k];
      if (k == i || other.free()) continue;
      for (size_t j = 0; j < other.slices.size(); ++j) {
        const bool solved = j < other.schedule.batches.size();
        const int nb = solved ? other.schedule.batches[j] : 1;
        neighbours.push_back(Placement{other.slices[j].demand->latency, nb,
                                       other.share_percent});
        neighbour_slot.push_back(k);
        neighbour_busy.push_back(
            solved && other.schedule.duty_cycle_ms > 0
                ? std::min(1.0, other.schedule.exec_ms[j] /
                                    other.schedule.duty_cycle_ms)
                : 1.0);
      }
    }
    // The planned latency from the solo one and an interference factor.
    auto planned = [h = interference_headroom_](const Slice& s, double solo,
                                                double factor) {
      const double scale = s.demand->latency_scale;
      return solo * (h > 0 ? std::max(scale, h * factor) : scale * factor);
    };
    if (!neighbours.empty() && occupancy_weighted_) {
      latency = [interference, &neighbours, &neighbour_slot, &neighbour_busy,
                 planned,
                 n = slots_.size()](const Slice& s, int b, double share) {
        const Placement self{s.demand->latency, b, share};
        std::vector<double> excess(n, 0.0);
        for (size_t k = 0; k < neighbours.size(); ++k) {
          excess[neighbour_slot[k]] +=
              neighbour_busy[k] *
              (interference->Factor(self, neighbours[k]) - 1);
        }
        const double worst = *std::max_element(excess.begin(), excess.end());
        return planned(s, s.demand->latency->LatencyMs(b, share), 1 + worst);
      };
    } else if (!neighbours.empty()) {
      latency = [interference, &neighbours, planned](const Slice& s, int b,
                                                     double share) {
        const Placement self{s.demand->latency, b, share};
        const double solo = s.demand->latency->LatencyMs(b, share);
        return planned(s, solo,
                       interference->LatencyMs(self, neighbours) / solo);
      };
    }
  }
  auto schedule = SolveTimeShare(slot.slices, slot.share_percent, latency);
  if (!schedule) return false;
  slot.schedule = *schedule;
  return true;
}

PolicyInputs::PolicyInputs() : resolve_memo_(std::make_unique<ResolveMemo>()) {}

PolicyInputs::~PolicyInputs() = default;

absl::StatusOr<std::unique_ptr<PolicyInputs>> PolicyInputs::FromSnapshot(
    const ClusterSnapshot& snapshot, const PolicyOptions& options) {
  auto inputs = std::unique_ptr<PolicyInputs>(new PolicyInputs());
  if (snapshot.devices.empty()) {
    return absl::FailedPreconditionError("the cluster has no devices");
  }
  inputs->shared_rules_ = options.rules.shared();
  const std::string& key = snapshot.devices.front().profile_key;
  for (const DeviceSnapshot& d : snapshot.devices) inputs->gpus_.push_back(&d);
  inputs->share_grid_ = ShareGrid(inputs->gpus_);
  for (const ModelSnapshot& m : snapshot.models) {
    auto it = m.profiles.find(key);
    if (it == m.profiles.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("model '", m.config.name(), "' has no profile for '",
                       key, "' devices"));
    }
    const LatencyModel* model = nullptr;
    if (options.fits) {
      const std::string& key = inputs->profile_keys_[m.config.name()] =
          ProfileFits::KeyOf(it->second);
      model = options.fits->FindModel(key);
    }
    if (model == nullptr) {
      ASSIGN_OR_RETURN(auto built, LatencyModel::FromProfile(it->second));
      model = &inputs->owned_models_
                   .insert_or_assign(m.config.name(), std::move(built))
                   .first->second;
    }
    inputs->models_[m.config.name()] = model;
  }
  inputs->fits_ = options.fits;
  for (const ModelSnapshot& m : snapshot.models) {
    if (m.rate_rps <= 0) continue;  // nothing to serve
    ModelDemand d;
    d.name = m.config.name();
    const SharedRules& rules = options.rules.shared();
    d.rate_rps = m.rate_rps * rules.rate_headroom();
    d.latency_scale = rules.latency_headroom();
    d.whole_gpu_latency_scale =
        std::min(rules.whole_gpu_latency_headroom(), d.latency_scale);
    d.queueing_check = rules.queueing_check();
    d.queueing_tail = rules.queueing_tail();
    d.round_queueing_tail = rules.round_queueing_tail();
    d.burst_caps = rules.burst_caps();
    d.burst_tail = rules.burst_bound() ? rules.burst_tail() : 0;
    d.burst_max_marginal_load = rules.burst_max_marginal_load();
    d.bulk_queue_wait = rules.bulk_queue_wait();
    d.round_robin_arrivals = rules.round_robin_arrivals();
    d.lone_batch_queue = rules.lone_batch_queue();
    d.lone_queue_expiry = rules.lone_queue_expiry();
    d.lone_queue_dispatcher =
        rules.lone_queue_expiry() && rules.lone_queue_dispatcher();
    d.slo_ms = m.config.slo_ms();
    const LatencyModel& lm = *inputs->models_.at(d.name);
    d.max_batch =
        std::min(std::max(1, m.config.max_batch_size()), lm.max_batch());
    d.latency = &lm;
    if (auto key = inputs->profile_keys_.find(d.name);
        key != inputs->profile_keys_.end()) {
      d.profile_key = &key->second;
    }
    inputs->demands_.push_back(d);
  }
  return inputs;
}

bool PolicyInputs::BuiltUnder(const SharedRules& rules) const {
  return google::protobuf::util::MessageDifferencer::Equals(shared_rules_,
                                                            rules);
}

const ProfileFits::IgniterFit* PolicyInputs::IgniterFitOf(
    const ModelDemand& d) const {
  if (!fits_ || !d.profile_key) return nullptr;
  return fits_->FindIgniter(*d.profile_key, d.max_batch, d.latency_scale);
}

const LasCoefficients* PolicyInputs::LasFitOf(const ModelDemand& d) const {
  if (!fits_ || !d.profile_key) return nullptr;
  return fits_->FindLas(*d.profile_key, d.max_batch, d.latency_scale);
}

Plan BuildPlan(const std::vector<GpuLayout>& gpus, const std::string& policy,
               const std::string& reason) {
  Plan plan;
  plan.set_policy(policy);
  plan.set_reason(reason);
  for (const GpuLayout& gpu : gpus) {
    if (!gpu.used()) continue;
    DevicePlan* device = plan.add_devices();
    device->set_backend_id(gpu.device()->backend_id);
    device->set_device_id(gpu.device()->device_id);
    int k = 0;
    for (const GpuLayout::Slot& slot : gpu.slots()) {
      if (slot.free()) continue;
      GpuletPlan* g = device->add_gpulets();
      g->set_gpulet_id(absl::StrCat(gpu.device()->backend_id, "/",
                                    gpu.device()->device_id, "/g", k++));
      g->set_share_percent(slot.share_percent);
      for (size_t j = 0; j < slot.slices.size(); ++j) {
        ModelAssignment* a = g->add_models();
        a->set_model(slot.slices[j].demand->name);
        // The dispatcher's cap: room above the nominal batch to absorb
        // bursts without breaking the round's SLOs.
        a->set_batch_size(slot.schedule.caps.empty() ? slot.schedule.batches[j]
                                                     : slot.schedule.caps[j]);
        a->set_duty_cycle_ms(slot.schedule.duty_cycle_ms);
        a->set_rate_rps(slot.slices[j].rate_rps);
      }
    }
  }
  return plan;
}

absl::Status Unschedulable(const ModelDemand& m, const std::string& why) {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "model '%s' (%.1f req/s, SLO %.1f ms) is unschedulable: %s", m.name,
      m.rate_rps, m.slo_ms, why));
}

}  // namespace tessera
