#include "datasets/igniter_coefficients.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "datasets/json_lines.h"
#include "nlohmann/json.hpp"

namespace tessera {
namespace {

using Json = nlohmann::json;

// The authors' solo grid (Profile/ scripts): rows batch, columns share.
constexpr int kGridBatch[3] = {1, 16, 32};
constexpr double kGridShare[3] = {10, 50, 100};

absl::Status Missing(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": missing or malformed '", what, "'"));
}

bool Is3x3(const Json& j) {
  if (!j.is_array() || j.size() != 3) return false;
  for (const auto& row : j) {
    if (!row.is_array() || row.size() != 3) return false;
    for (const auto& v : row) {
      if (!v.is_number()) return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<IgniterCoefficients> LoadIgniterCoefficients(
    const std::string& path) {
  ASSIGN_OR_RETURN(auto lines, ReadJsonLines(path));
  std::map<std::string, std::map<std::string, Json>> f;
  for (const Json& j : lines) {
    for (const auto& [owner, body] : j.items()) {
      if (!body.is_object()) continue;
      for (const auto& [field, value] : body.items()) f[owner][field] = value;
    }
  }
  IgniterCoefficients out;
  auto& hw_fields = f["hardware"];
  auto number = [&](const std::map<std::string, Json>& m,
                    const std::string& key, double* v) {
    auto it = m.find(key);
    if (it == m.end() || !it->second.is_number()) return false;
    *v = it->second.get<double>();
    return true;
  };
  IgniterHardware& hw = out.hardware;
  if (!number(hw_fields, "idlepower", &hw.idle_power_w)) {
    return Missing(path, "hardware.idlepower");
  }
  if (!number(hw_fields, "maxGPUpower", &hw.max_power_w)) {
    return Missing(path, "hardware.maxGPUpower");
  }
  if (!number(hw_fields, "maxGPUfrequency", &hw.max_clock_mhz)) {
    return Missing(path, "hardware.maxGPUfrequency");
  }
  if (!number(hw_fields, "unit", &hw.share_unit_percent)) {
    return Missing(path, "hardware.unit");
  }
  if (!number(hw_fields, "bandwidth", &hw.bandwidth_bytes_per_ms)) {
    return Missing(path, "hardware.bandwidth");
  }
  const Json& power = hw_fields["power"];
  const Json& clock = hw_fields["frequency"];
  const Json& gaps = hw_fields["idletime"];
  if (!power.is_array() || !clock.is_array() || !gaps.is_array() ||
      power.size() != clock.size() || gaps.size() != clock.size() ||
      clock.size() < 3) {
    return Missing(path, "hardware.power/frequency/idletime (N copies each)");
  }
  const double F = hw.max_clock_mhz;
  const size_t copies = clock.size();
  // Scheduling: per-kernel gap at N copies, normalised to full clock, minus
  // the solo gap; linear in N over N >= 2.
  {
    std::vector<double> n, delta;
    const double gap1 = gaps[0].get<double>() * clock[0].get<double>() / F;
    for (size_t i = 1; i < copies; ++i) {
      n.push_back(static_cast<double>(i + 1));
      delta.push_back(gaps[i].get<double>() * clock[i].get<double>() / F -
                      gap1);
    }
    const auto line_fit = FitLine(n, delta);
    hw.alpha_sch_ms = line_fit[0];
    hw.beta_sch_ms = line_fit[1];
    hw.scheduling_enabled = true;
  }
  // Clock: demand above the cap is not observable (the reading saturates);
  // extrapolate with the mean per-copy power of the unthrottled runs.
  {
    size_t unthrottled = 0;
    while (unthrottled < copies && clock[unthrottled].get<double>() >= F) {
      ++unthrottled;
    }
    if (unthrottled < 2 || unthrottled == copies) {
      out.notes.push_back(
          "hardware: no throttled (or too few unthrottled) runs; power and "
          "clock terms off");
    } else {
      const double p_last = power[unthrottled - 1].get<double>();
      const double per_copy =
          (p_last - power[0].get<double>()) / (unthrottled - 1);
      double sxy = 0, sxx = 0;
      for (size_t i = unthrottled; i < copies; ++i) {
        const double demand = p_last + per_copy * (i - (unthrottled - 1));
        const double x = demand - hw.max_power_w;
        sxy += x * (clock[i].get<double>() - F);
        sxx += x * x;
      }
      hw.alpha_f_mhz_per_w = sxx > 0 ? sxy / sxx : 0;
      hw.power_enabled = sxx > 0;
    }
  }
  for (const auto& [model, m] : f) {
    if (model == "hardware") continue;
    IgniterWorkload w;
    w.model = model;
    const auto gl = m.find("gpulatency");
    const auto pw = m.find("power");
    const auto fr = m.find("frequency");
    if (gl == m.end() || !Is3x3(gl->second) || pw == m.end() ||
        !Is3x3(pw->second) || fr == m.end() || !Is3x3(fr->second)) {
      return Missing(path, model + ".gpulatency/power/frequency (3x3)");
    }
    if (!number(m, "inputdata", &w.input_bytes) ||
        !number(m, "outputdata", &w.output_bytes) ||
        !number(m, "idletime_1", &w.solo_sched_ms)) {
      return Missing(path, model + ".inputdata/outputdata/idletime_1");
    }
    double kernels = 0;
    if (number(m, "kernel", &kernels)) {
      w.kernels = static_cast<int>(kernels);
    } else {
      out.notes.push_back(absl::StrCat(
          model,
          ": no kernel count in the file; its scheduling delay does "
          "not grow with co-runners (delta_sch term off)"));
    }
    std::vector<ActiveTimeSample> samples;
    std::vector<double> ability, above_idle;
    for (int bi = 0; bi < 3; ++bi) {
      for (int si = 0; si < 3; ++si) {
        const double lat = gl->second[bi][si].get<double>();
        const double fq = fr->second[bi][si].get<double>();
        const double act = lat * fq / F - w.solo_sched_ms;
        samples.push_back({kGridBatch[bi], kGridShare[si], act});
        if (fq >= F) {
          ability.push_back(1000.0 * kGridBatch[bi] / act);
          above_idle.push_back(pw->second[bi][si].get<double>() -
                               hw.idle_power_w);
        }
      }
    }
    ASSIGN_OR_RETURN(auto k, FitActiveTime(samples));
    w.k = k;
    w.min_share_percent = kGridShare[0];
    const auto pfit = FitLine(ability, above_idle);
    w.alpha_power = pfit[0];
    w.beta_power = pfit[1];
    const auto l2s = m.find("l2caches");
    if (l2s == m.end() || !l2s->second.is_array() || l2s->second.size() != 3) {
      return Missing(path, model + ".l2caches");
    }
    std::vector<double> diag_ability, l2;
    for (int i = 0; i < 3; ++i) {
      diag_ability.push_back(1000.0 * kGridBatch[i] /
                             samples[i * 3 + i].active_ms);
      l2.push_back(l2s->second[i].get<double>());
    }
    const auto cfit = FitLine(diag_ability, l2);
    w.alpha_l2 = cfit[0];
    w.beta_l2 = cfit[1];
    double act1 = 0, act2 = 0, f2 = 0, c = 0;
    if (number(m, "activetime_1", &act1) && number(m, "activetime_2", &act2) &&
        number(m, "frequency_2", &f2) && number(m, "l2cache", &c) && c > 0 &&
        act1 > 0) {
      w.alpha_cache = ((act2 * f2 / F) / act1 - 1) / c;
    } else {
      out.notes.push_back(absl::StrCat(
          model, ": no two-copy run; its L2 interference term is off"));
    }
    out.workloads[model] = w;
  }
  if (out.workloads.empty()) return Missing(path, "any workload");
  return out;
}

}  // namespace tessera
