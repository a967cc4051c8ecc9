#include "proxy/emulated_group_runner.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "overlap/service_catalog.h"
#include "proxy/emulated_outputs.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<EmulatedGroupRunner>>
EmulatedGroupRunner::Create(const std::map<std::string, ModelConfig>& configs,
                            Options options) {
  if (!(options.time_scale > 0)) {
    return absl::InvalidArgumentError("emulated A100: time_scale must be > 0");
  }
  if (options.ground_truth_dir.empty()) {
    return absl::FailedPreconditionError(
        "emulated A100: no ground-truth directory (the backend's "
        "--a100_ground_truth_dir)");
  }
  const ServiceCatalog& a100 = ServiceCatalog::A100();
  for (const auto& [name, config] : configs) {
    if (config.segment_count() == 0) continue;
    ASSIGN_OR_RETURN(int id, a100.IdOf(name));
    if (config.segment_count() != a100.service(id).operators) {
      return absl::InvalidArgumentError(
          absl::StrCat("emulated A100: model '", name, "' has segment_count ",
                       config.segment_count(), "; the A100 data's ", name,
                       " has ", a100.service(id).operators, " operators"));
    }
  }
  ASSIGN_OR_RETURN(auto truth,
                   A100GroundTruth::Create(options.ground_truth_dir, 4));
  if (!options.sleep) {
    options.sleep = [](absl::Duration d) { absl::SleepFor(d); };
  }
  return std::unique_ptr<EmulatedGroupRunner>(
      new EmulatedGroupRunner(configs, std::move(truth), std::move(options)));
}

EmulatedGroupRunner::EmulatedGroupRunner(
    std::map<std::string, ModelConfig> configs,
    std::unique_ptr<A100GroundTruth> truth, Options options)
    : configs_(std::move(configs)),
      truth_(std::move(truth)),
      options_(std::move(options)),
      rng_(options_.seed) {
  for (const auto& [name, config] : configs_) {
    if (config.segment_count() == 0) continue;
    services_[name] = Service{*ServiceCatalog::A100().IdOf(name), &config};
  }
}

int EmulatedGroupRunner::OperatorCount(const std::string& model) const {
  auto it = services_.find(model);
  return it == services_.end() ? 0 : it->second.config->segment_count();
}

absl::StatusOr<EmulatedGroupRunner::Queries::Query*> EmulatedGroupRunner::Admit(
    const GroupMemberRun& m, OperatorGroup* group) {
  auto service = services_.find(m.model);
  const int ops =
      service == services_.end() ? 0 : service->second.config->segment_count();
  auto start = [&](const GroupMemberRun& first) -> absl::StatusOr<QueryState> {
    if (first.inputs.empty() || first.inputs[0].shape.empty() ||
        first.inputs[0].shape[0] < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "query ", first.query_id, ": its first range has no batched inputs"));
    }
    QueryState state;
    state.batch = static_cast<int>(first.inputs[0].shape[0]);
    if (ServiceCatalog::A100().service(service->second.id).sequence_input) {
      if (first.inputs[0].shape.size() < 2) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", first.model, "' needs [batch, sequence] inputs"));
      }
      state.seqlen = static_cast<int>(first.inputs[0].shape[1]);
    }
    state.row_sums = InputRowChecksums(first.inputs, state.batch);
    return state;
  };
  ASSIGN_OR_RETURN(auto q, queries_.Admit(m, ops, start));
  group->push_back(GroupMember{service->second.id, m.start_op, m.end_op,
                               q->state.batch, q->state.seqlen});
  return q;
}

absl::StatusOr<std::vector<std::vector<TensorView>>>
EmulatedGroupRunner::RunGroup(const std::vector<GroupMemberRun>& members,
                              absl::Duration* exec_time) {
  const absl::Time start = absl::Now();
  OperatorGroup group;
  std::vector<int> ids;
  std::vector<Queries::Query*> queries;
  absl::Status admitted =
      members.empty() || members.size() > 4
          ? absl::InvalidArgumentError(absl::StrCat(
                "a group has 1 to 4 members, not ", members.size()))
          : absl::OkStatus();
  for (size_t i = 0; admitted.ok() && i < members.size(); ++i) {
    auto q = Admit(members[i], &group);
    admitted = q.status();
    if (!q.ok()) break;
    queries.push_back(*q);
    ids.push_back(group.back().service);
  }
  if (admitted.ok() &&
      std::set<int>(ids.begin(), ids.end()).size() != ids.size()) {
    admitted =
        absl::InvalidArgumentError("a group runs at most one query per model");
  }
  if (admitted.ok() && !truth_->Covers(ids)) {
    admitted = absl::FailedPreconditionError(
        "the A100 data measured no group of these models (pairs of any "
        "two; three or four only of resnet101, resnet152, vgg19, bert)");
  }
  if (!admitted.ok()) {
    for (const GroupMemberRun& m : members) queries_.Forget(m.query_id);
    return admitted;
  }
  const absl::Duration latency = absl::Microseconds(
      truth_->SampleMs(group, rng_) * options_.time_scale * 1000);
  std::vector<std::vector<TensorView>> outputs(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const GroupMemberRun& m = members[i];
    queries[i]->next_op = m.end_op;
    if (m.end_op < services_.at(m.model).config->segment_count()) continue;
    auto written =
        WriteEmulatedOutputs(configs_.at(m.model), queries[i]->state.row_sums,
                             m.out, m.out_capacity);
    queries_.Forget(m.query_id);  // whether or not the outputs were written
    if (!written.ok()) return written.status();
    outputs[i] = std::move(*written);
  }
  const absl::Duration left = start + latency - absl::Now();
  if (left > absl::ZeroDuration()) options_.sleep(left);
  *exec_time = latency;
  return outputs;
}

}  // namespace tessera
