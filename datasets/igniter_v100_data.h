#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perfmodel/interference_model.h"
#include "perfmodel/latency_model.h"
#include "profile.pb.h"

namespace tessera {

// How to fill L(b, 100%) for b > 1, which the V100 data does not have (it
// measures 100 % only at batch 1).
enum class Share100Rule {
  // L(b,100) = L(b,80) * L(1,100) / L(1,80): the batch-1 speed-up from 80 %
  // to 100 % holds at every batch (the default).
  kBatch1Ratio,
  // L(b,100) = L(b,80): no gain past 80 % (pessimistic).
  kSameAs80,
  // Leave it out: 100 % is usable at batch 1 only.
  kOmit,
};

// "batch1-ratio", "same-as-80" or "omit"; INVALID_ARGUMENT otherwise.
absl::StatusOr<Share100Rule> ParseShare100Rule(const std::string& name);

// A co-location measurement of the V100 data: model1 at share1 % beside
// model2 at (100 - share1) %, both running at the same time.
struct IgniterCoLocationRow {
  std::string model1, model2;
  int batch1 = 0, batch2 = 0;
  double share1 = 0;
  double latency1_ms = 0, latency2_ms = 0;
  double std1_ms = 0, std2_ms = 0;
};

struct IgniterV100Data {
  std::map<std::string, ModelProfile> profiles;  // device_kind "v100"
  std::vector<IgniterCoLocationRow> colocation;
};

// Reads iGniter's public V100 measurements (`profile.jsonl`, see
// shared/data/README.md) at run time. Never copied into the repository.
absl::StatusOr<IgniterV100Data> LoadIgniterV100(const std::string& path,
                                                Share100Rule rule);

// Two samples per row (each model as `self`), pointing into `models`.
std::vector<CoLocationSample> ToSamples(
    const std::vector<IgniterCoLocationRow>& rows,
    const std::map<std::string, LatencyModel>& models);

}  // namespace tessera
