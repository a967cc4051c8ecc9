#include "proxy/torch_group_runner.h"

#include <ATen/Parallel.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/cpu_affinity.h"
#include "proxy/torch_tensors.h"

namespace tessera {

struct TorchGroupRunner::Impl {
  struct Model {
    ModelConfig config;
    torch::jit::Module segments;
  };
  struct Query {
    std::string model;
    int next_op = 0;
    std::vector<at::Tensor> state;
  };
  std::map<std::string, Model> models;
  std::vector<int> cores;
  std::map<uint64_t, Query> queries;

  // The member's query, its state set up for the range (copied inputs for
  // a first range).
  absl::StatusOr<Query*> Admit(const GroupMemberRun& m) {
    auto model = models.find(m.model);
    if (model == models.end()) {
      return absl::NotFoundError(absl::StrCat(
          "model '", m.model, "' is not run by operator range on this proxy"));
    }
    const int ops = model->second.config.segment_count();
    if (!(m.start_op >= 0 && m.start_op < m.end_op && m.end_op <= ops)) {
      return absl::InvalidArgumentError(
          absl::StrCat("range [", m.start_op, ", ", m.end_op, ") of '", m.model,
                       "' is not inside [0, ", ops, ")"));
    }
    auto q = queries.find(m.query_id);
    if (m.start_op == 0) {
      if (q != queries.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("query ", m.query_id, " started twice"));
      }
      Query query;
      query.model = m.model;
      for (const TensorView& in : m.inputs) {
        auto t = TensorOverView(in);
        if (!t.ok()) return t.status();
        query.state.push_back(t->clone());  // the region slot is reused
      }
      q = queries.emplace(m.query_id, std::move(query)).first;
    } else if (q == queries.end() || q->second.model != m.model ||
               q->second.next_op != m.start_op) {
      return absl::InvalidArgumentError(absl::StrCat(
          "query ", m.query_id, ": range [", m.start_op, ", ", m.end_op,
          ") does not continue where its last range ended"));
    }
    return &q->second;
  }

  std::vector<at::Tensor> RunRange(torch::jit::Module& module,
                                   std::vector<at::Tensor> state, int start,
                                   int end) {
    c10::InferenceMode guard;
    c10::List<at::Tensor> list;
    for (at::Tensor& t : state) list.push_back(t);
    auto out = module.get_method("run_range")(
        {list, static_cast<int64_t>(start), static_cast<int64_t>(end)});
    std::vector<at::Tensor> result;
    for (const c10::IValue& v : out.toList()) result.push_back(v.toTensor());
    return result;
  }
};

TorchGroupRunner::TorchGroupRunner(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
TorchGroupRunner::~TorchGroupRunner() = default;

absl::StatusOr<std::unique_ptr<TorchGroupRunner>> TorchGroupRunner::Create(
    const std::map<std::string, std::string>& segment_paths,
    const std::map<std::string, ModelConfig>& configs, std::vector<int> cores) {
  auto impl = std::make_unique<Impl>();
  if (cores.empty()) {
    auto own = GetCpuAffinity(0);
    if (!own.ok()) return own.status();
    cores = *own;
  }
  impl->cores = std::move(cores);
  for (const auto& [name, path] : segment_paths) {
    auto config = configs.find(name);
    if (config == configs.end() || config->second.segment_count() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model '", name, "' has no segment_count"));
    }
    Impl::Model model;
    model.config = config->second;
    try {
      model.segments = torch::jit::load(path);
      model.segments.eval();
      const int64_t count =
          model.segments.get_method("segment_count")({}).toInt();
      if (count != model.config.segment_count()) {
        return absl::FailedPreconditionError(
            absl::StrCat(path, " has ", count, " segments; the config says ",
                         model.config.segment_count()));
      }
    } catch (const std::exception& e) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot load ", path, ": ", e.what(),
                       " (models/generate_models.py writes it)"));
    }
    impl->models.emplace(name, std::move(model));
  }
  at::set_num_threads(1);
  torch::jit::setGraphExecutorOptimize(false);
  return std::unique_ptr<TorchGroupRunner>(
      new TorchGroupRunner(std::move(impl)));
}

int TorchGroupRunner::OperatorCount(const std::string& model) const {
  auto it = impl_->models.find(model);
  return it == impl_->models.end() ? 0 : it->second.config.segment_count();
}

absl::StatusOr<std::vector<std::vector<TensorView>>> TorchGroupRunner::RunGroup(
    const std::vector<GroupMemberRun>& members, absl::Duration* exec_time) {
  const int n = static_cast<int>(members.size());
  std::vector<Impl::Query*> queries;
  absl::Status admitted = absl::OkStatus();
  std::set<uint64_t> ids;
  for (const GroupMemberRun& m : members) {
    if (!ids.insert(m.query_id).second) {
      admitted = absl::InvalidArgumentError("a query appears twice");
      break;
    }
    auto q = impl_->Admit(m);
    if (!q.ok()) {
      admitted = q.status();
      break;
    }
    queries.push_back(*q);
  }
  auto forget = [&] {
    for (const GroupMemberRun& m : members) impl_->queries.erase(m.query_id);
  };
  if (!admitted.ok()) {
    forget();
    return admitted;
  }
  std::vector<std::string> errors(n);
  const absl::Time start = absl::Now();
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([this, &members, &queries, &errors, i] {
        const absl::Status pinned =
            SetCpuAffinity({impl_->cores[i % impl_->cores.size()]});
        if (!pinned.ok()) {
          errors[i] = std::string(pinned.message());
          return;
        }
        try {
          Impl::Query& q = *queries[i];
          q.state = impl_->RunRange(impl_->models.at(q.model).segments,
                                    std::move(q.state), members[i].start_op,
                                    members[i].end_op);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  *exec_time = absl::Now() - start;
  for (int i = 0; i < n; ++i) {
    if (!errors[i].empty()) {
      forget();
      return absl::InternalError(
          absl::StrCat("model '", members[i].model, "' failed: ", errors[i]));
    }
  }
  std::vector<std::vector<TensorView>> outputs(n);
  for (int i = 0; i < n; ++i) {
    const GroupMemberRun& m = members[i];
    Impl::Query& q = *queries[i];
    q.next_op = m.end_op;
    if (m.end_op < OperatorCount(m.model)) continue;
    std::vector<torch::Tensor> results;
    for (at::Tensor& t : q.state) results.push_back(t.contiguous());
    auto copied = CopyOutputs(impl_->models.at(m.model).config, results, m.out,
                              m.out_capacity);
    impl_->queries.erase(m.query_id);
    if (!copied.ok()) return copied.status();
    outputs[i] = std::move(*copied);
  }
  return outputs;
}

}  // namespace tessera
