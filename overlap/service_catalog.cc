#include "overlap/service_catalog.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace tessera {

const ServiceCatalog& ServiceCatalog::A100() {
  static const ServiceCatalog* catalog = new ServiceCatalog({
      {"resnet50", 18, false},
      {"resnet101", 35, false},
      {"resnet152", 52, false},
      {"inception_v3", 14, false},
      {"vgg16", 19, false},
      {"vgg19", 22, false},
      {"bert", 12, true},
  });
  return *catalog;
}

absl::StatusOr<int> ServiceCatalog::IdOf(const std::string& name) const {
  for (int i = 0; i < size(); ++i) {
    if (services_[i].name == name) return i;
  }
  std::vector<std::string> names;
  for (const OverlapService& s : services_) names.push_back(s.name);
  return absl::InvalidArgumentError("unknown service '" + name +
                                    "'; known: " + absl::StrJoin(names, ", "));
}

absl::StatusOr<std::vector<int>> ServiceCatalog::ParseSet(
    const std::string& names) const {
  std::vector<int> ids;
  for (absl::string_view n :
       absl::StrSplit(names, absl::ByAnyChar(",+"), absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(auto id, IdOf(std::string(n)));
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  if (ids.empty() || std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
    return absl::InvalidArgumentError(
        "a co-location set names distinct services: '" + names + "'");
  }
  return ids;
}

std::string ServiceCatalog::SetName(const std::vector<int>& ids) const {
  std::vector<std::string> names;
  for (int id : ids) names.push_back(services_[id].name);
  return absl::StrJoin(names, "+");
}

std::vector<float> ServiceCatalog::Features(OperatorGroup group) const {
  std::stable_sort(group.begin(), group.end(),
                   [](const GroupMember& a, const GroupMember& b) {
                     return a.service < b.service;
                   });
  std::vector<float> x(size(), 0.0f);
  for (const GroupMember& m : group) {
    x[m.service] += 1;
  }
  for (const GroupMember& m : group) {
    x.push_back(m.start_op);
    x.push_back(m.end_op);
    x.push_back(m.batch);
    x.push_back(services_[m.service].sequence_input ? m.seqlen : 0);
  }
  return x;
}

absl::StatusOr<double> AbacusA100QosMs(const std::vector<int>& set, bool peak) {
  // Ids: 0 resnet50, 1 resnet101, 2 resnet152, 3 inception_v3, 4 vgg16,
  // 5 vgg19, 6 bert. Values from the artifact's experiment scripts.
  static const std::map<std::vector<int>, double>* table =
      new std::map<std::vector<int>, double>{
          {{0, 1}, 100},    {{0, 2}, 150},       {{0, 3}, 100},
          {{0, 4}, 50},     {{0, 5}, 50},        {{0, 6}, 75},
          {{1, 2}, 160},    {{1, 3}, 150},       {{1, 4}, 90},
          {{1, 5}, 80},     {{1, 6}, 130},       {{2, 3}, 150},
          {{2, 4}, 150},    {{2, 5}, 150},       {{2, 6}, 150},
          {{3, 4}, 80},     {{3, 5}, 80},        {{3, 6}, 80},
          {{4, 5}, 30},     {{4, 6}, 60},        {{5, 6}, 60},
          {{1, 2, 5}, 100}, {{1, 2, 6}, 150},    {{1, 5, 6}, 80},
          {{2, 5, 6}, 80},  {{1, 2, 5, 6}, 100},
      };
  std::vector<int> key = set;
  std::sort(key.begin(), key.end());
  if (peak && key == std::vector<int>{4, 5}) return 40.0;
  auto it = table->find(key);
  if (it == table->end()) {
    return absl::NotFoundError(
        "the Abacus artifact gives no QoS target for this set");
  }
  return it->second;
}

}  // namespace tessera
