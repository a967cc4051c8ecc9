#include "scheduler/policy_registry.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

namespace tessera {
namespace {

struct Table {
  absl::Mutex mu;
  std::map<std::string, PolicyFactory> factories ABSL_GUARDED_BY(mu);
};

Table& GetTable() {
  static Table* const table = new Table();  // never destroyed
  return *table;
}

}  // namespace

bool PolicyRegistry::Register(const std::string& name, PolicyFactory factory) {
  Table& table = GetTable();
  absl::MutexLock lock(&table.mu);
  return table.factories.emplace(name, std::move(factory)).second;
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> PolicyRegistry::Create(
    const std::string& name, const PolicyOptions& options) {
  PolicyFactory factory;
  {
    Table& table = GetTable();
    absl::MutexLock lock(&table.mu);
    auto it = table.factories.find(name);
    if (it != table.factories.end()) factory = it->second;
  }
  if (!factory) {
    return absl::NotFoundError(
        absl::StrCat("unknown scheduling policy '", name,
                     "'; known policies: ", absl::StrJoin(Names(), ", ")));
  }
  return factory(options);
}

std::vector<std::string> PolicyRegistry::Names() {
  Table& table = GetTable();
  absl::MutexLock lock(&table.mu);
  std::vector<std::string> names;
  for (const auto& [name, factory] : table.factories) names.push_back(name);
  return names;
}

}  // namespace tessera
