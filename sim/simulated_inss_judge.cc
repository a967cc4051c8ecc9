#include "sim/simulated_inss_judge.h"

#include <map>
#include <string>

#include "scheduler/inss_plan.h"

namespace tessera {

SimOptions SimulatedInssJudge::StepOptions() {
  SimOptions o;
  o.duration = absl::Seconds(1);
  o.warmup = absl::Milliseconds(250);
  o.min_requests = 0;
  return o;
}

std::vector<double> SimulatedInssJudge::ViolationFractions(
    const InssCluster& cluster, const InssProvisioning& provisioning,
    const InssBatchResult& bda, const std::vector<double>& rates_rps,
    uint64_t seed) const {
  const int n = static_cast<int>(cluster.slots().size());
  std::vector<double> out(n, 0);
  std::map<std::string, ModelConfig> configs;
  std::map<std::string, double> rates;
  std::map<std::string, int> slot_of;
  for (int i = 0; i < n; ++i) {
    if (rates_rps[i] <= 0) continue;
    const InssModelSlot& s = cluster.slots()[i];
    ModelConfig c;
    c.set_name(s.name);
    c.set_slo_ms(s.slo_ms);
    c.set_max_batch_size(s.max_batch);
    configs[s.name] = c;
    rates[s.name] = rates_rps[i];
    slot_of[s.name] = i;
    // The inss policy serves no plan BDA cannot batch within the SLO.
    if (bda.batch.empty() || bda.batch[i] <= 0 || !bda.feasible[i]) {
      out[i] = 1;
    }
  }
  const Plan plan = InssPlan::Build(cluster, provisioning, bda, "inss", "step");
  SimOptions options = options_;
  options.seed = seed;
  const ClusterSimulator simulator(truth_, std::move(configs));
  const SimResult result = simulator.Run(plan, rates, options);
  for (const ModelResult& m : result.models) {
    auto it = slot_of.find(m.model);
    if (it != slot_of.end() && out[it->second] < 1) {
      out[it->second] = m.violation_fraction();
    }
  }
  return out;
}

}  // namespace tessera
