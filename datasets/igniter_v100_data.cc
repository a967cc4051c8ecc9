#include "datasets/igniter_v100_data.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "datasets/json_lines.h"
#include "nlohmann/json.hpp"

namespace tessera {
namespace {

using Json = nlohmann::json;

// batch -> share -> value, from {"1": {"20": v, ...}, ...}.
std::map<int, std::map<double, double>> Grid(const Json& j) {
  std::map<int, std::map<double, double>> grid;
  for (const auto& [b, row] : j.items()) {
    int batch;
    if (!absl::SimpleAtoi(b, &batch)) continue;
    for (const auto& [s, v] : row.items()) {
      double share;
      if (absl::SimpleAtod(s, &share) && v.is_number()) {
        grid[batch][share] = v.get<double>();
      }
    }
  }
  return grid;
}

}  // namespace

absl::StatusOr<Share100Rule> ParseShare100Rule(const std::string& name) {
  if (name == "batch1-ratio") return Share100Rule::kBatch1Ratio;
  if (name == "same-as-80") return Share100Rule::kSameAs80;
  if (name == "omit") return Share100Rule::kOmit;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown L(b,100%) rule '", name,
                   "'; known: batch1-ratio, same-as-80, omit"));
}

absl::StatusOr<IgniterV100Data> LoadIgniterV100(const std::string& path,
                                                Share100Rule rule) {
  ASSIGN_OR_RETURN(auto lines, ReadJsonLines(path));
  std::map<std::string, std::map<std::string, Json>> fields;
  Json interference_latency, interference_std;
  for (const Json& j : lines) {
    for (const auto& [model, body] : j.items()) {
      for (const auto& [field, value] : body.items()) {
        if (model == "interference") {
          (field == "latency" ? interference_latency : interference_std) =
              value;
        } else {
          fields[model][field] = value;
        }
      }
    }
  }
  IgniterV100Data data;
  for (const auto& [model, f] : fields) {
    if (!f.count("latency")) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": model '", model, "' has no latency grid"));
    }
    auto latency = Grid(f.at("latency"));
    auto l2 = f.count("l2cache") ? Grid(f.at("l2cache"))
                                 : std::map<int, std::map<double, double>>();
    auto dram = f.count("dram") ? Grid(f.at("dram"))
                                : std::map<int, std::map<double, double>>();
    const double ratio = latency[1].count(100) && latency[1].count(80)
                             ? latency[1][100] / latency[1][80]
                             : 1.0;
    ModelProfile& p = data.profiles[model];
    p.set_model(model);
    p.set_device_kind("v100");
    p.set_source(absl::StrCat(
        "iGniter public V100 measurements (", path, "); L(b>1,100%) ",
        rule == Share100Rule::kBatch1Ratio ? "= L(b,80%) * L(1,100)/L(1,80)"
        : rule == Share100Rule::kSameAs80  ? "= L(b,80%)"
                                           : "not available"));
    for (const auto& [b, row] : latency) {
      std::map<double, double> shares = row;
      if (b > 1 && !shares.count(100) && shares.count(80) &&
          rule != Share100Rule::kOmit) {
        shares[100] =
            shares[80] * (rule == Share100Rule::kBatch1Ratio ? ratio : 1.0);
      }
      for (const auto& [s, ms] : shares) {
        LatencyPoint* pt = p.add_latency();
        pt->set_batch_size(b);
        pt->set_share_percent(s);
        pt->set_latency_ms(ms);
        // Counters at 100 % for b > 1 are not measured either: use 80 %'s.
        const double cs = (l2[b].count(s) || s != 100) ? s : 80;
        if (l2[b].count(cs)) pt->set_l2_util_percent(l2[b][cs]);
        if (dram[b].count(cs)) pt->set_dram_util_percent(dram[b][cs]);
      }
    }
  }
  if (interference_latency.is_array()) {
    for (size_t i = 0; i < interference_latency.size(); ++i) {
      const Json& r = interference_latency[i];
      if (!r.is_array() || r.size() != 7) continue;
      IgniterCoLocationRow row;
      row.model1 = r[0].get<std::string>();
      row.model2 = r[1].get<std::string>();
      row.batch1 = r[2].get<int>();
      row.batch2 = r[3].get<int>();
      row.share1 = r[4].get<double>();
      row.latency1_ms = r[5].get<double>();
      row.latency2_ms = r[6].get<double>();
      if (interference_std.is_array() && i < interference_std.size() &&
          interference_std[i].size() == 7) {
        row.std1_ms = interference_std[i][5].get<double>();
        row.std2_ms = interference_std[i][6].get<double>();
      }
      data.colocation.push_back(row);
    }
  }
  return data;
}

std::vector<CoLocationSample> ToSamples(
    const std::vector<IgniterCoLocationRow>& rows,
    const std::map<std::string, LatencyModel>& models) {
  std::vector<CoLocationSample> samples;
  for (const auto& r : rows) {
    auto a = models.find(r.model1);
    auto b = models.find(r.model2);
    if (a == models.end() || b == models.end()) continue;
    const Placement p1{&a->second, r.batch1, r.share1};
    const Placement p2{&b->second, r.batch2, 100 - r.share1};
    samples.push_back({p1, p2, r.latency1_ms});
    samples.push_back({p2, p1, r.latency2_ms});
  }
  return samples;
}

}  // namespace tessera
