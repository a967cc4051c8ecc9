#include "proxy/torch_group_runner.h"

#include <ATen/Parallel.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/cpu_affinity.h"
#include "common/status_macros.h"
#include "proxy/error_text.h"
#include "proxy/group_queries.h"
#include "proxy/torch_tensors.h"

namespace tessera {

struct TorchGroupRunner::Impl {
  struct Model {
    ModelConfig config;
    torch::jit::Module segments;
  };
  using Queries = GroupQueries<std::vector<at::Tensor>>;
  std::map<std::string, Model> models;
  std::vector<int> cores;
  torch::Device device = torch::kCPU;
  Queries queries;

  // The member's query; a first range's state is a copy of its inputs on
  // the device (the region slot is reused).
  absl::StatusOr<Queries::Query*> Admit(const GroupMemberRun& m) {
    auto model = models.find(m.model);
    const int ops =
        model == models.end() ? 0 : model->second.config.segment_count();
    return queries.Admit(
        m, ops,
        [this](const GroupMemberRun& first)
            -> absl::StatusOr<std::vector<at::Tensor>> {
          std::vector<at::Tensor> state;
          for (const TensorView& in : first.inputs) {
            ASSIGN_OR_RETURN(auto t, TensorOverView(in));
            try {
              state.push_back(device.is_cuda() ? t.to(device) : t.clone());
            } catch (const std::exception& e) {
              return absl::ResourceExhaustedError(absl::StrCat(
                  "copying model '", first.model,
                  "''s inputs failed: ", ShortModelError(e.what())));
            }
          }
          return state;
        });
  }

  // Runs the member's range: on the cores, or launched on a CUDA stream
  // of its own and waited for.
  void RunMember(Queries::Query& q, const GroupMemberRun& member) {
    torch::jit::Module& module = models.at(q.model).segments;
    RunOnOwnStream(device, [&] {
      q.state =
          RunRange(module, std::move(q.state), member.start_op, member.end_op);
    });
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
    const std::map<std::string, ModelConfig>& configs, Options options) {
  auto impl = std::make_unique<Impl>();
  if (options.cores.empty()) {
    ASSIGN_OR_RETURN(options.cores, GetCpuAffinity(0));
  }
  impl->cores = std::move(options.cores);
  ASSIGN_OR_RETURN(impl->device, RunnerDevice(options.cuda));
  for (const auto& [name, path] : segment_paths) {
    auto config = configs.find(name);
    if (config == configs.end() || config->second.segment_count() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model '", name, "' has no segment_count"));
    }
    Impl::Model model;
    model.config = config->second;
    try {
      model.segments = torch::jit::load(path, impl->device);
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
  std::vector<Impl::Queries::Query*> queries;
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
    for (const GroupMemberRun& m : members) impl_->queries.Forget(m.query_id);
  };
  if (!admitted.ok()) {
    forget();
    return admitted;
  }
  try {
    SynchronizeCurrentStream(impl_->device);
  } catch (const std::exception& e) {
    forget();
    return absl::InternalError(absl::StrCat("copying a group's inputs failed: ",
                                            ShortModelError(e.what())));
  }
  const absl::Time start = absl::Now();
  const std::vector<absl::Status> ran =
      RunPinnedInParallel(n, impl_->cores, [&](int i) -> absl::Status {
        try {
          impl_->RunMember(*queries[i], members[i]);
          return absl::OkStatus();
        } catch (const std::exception& e) {
          return absl::InternalError(
              absl::StrCat("model '", members[i].model,
                           "' failed: ", ShortModelError(e.what())));
        }
      });
  *exec_time = absl::Now() - start;
  for (const absl::Status& s : ran) {
    if (!s.ok()) {
      forget();
      return s;
    }
  }
  std::vector<std::vector<TensorView>> outputs(n);
  for (int i = 0; i < n; ++i) {
    const GroupMemberRun& m = members[i];
    Impl::Queries::Query& q = *queries[i];
    q.next_op = m.end_op;
    if (m.end_op < OperatorCount(m.model)) continue;
    std::vector<torch::Tensor> results;
    try {
      for (at::Tensor& t : q.state) {
        results.push_back(t.to(torch::kCPU).contiguous());
      }
    } catch (const std::exception& e) {
      impl_->queries.Forget(m.query_id);
      return absl::InternalError(
          absl::StrCat("copying model '", m.model,
                       "''s outputs failed: ", ShortModelError(e.what())));
    }
    auto copied = CopyOutputs(impl_->models.at(m.model).config, results, m.out,
                              m.out_capacity);
    impl_->queries.Forget(m.query_id);  // whether or not the copy worked
    if (!copied.ok()) return copied.status();
    outputs[i] = std::move(*copied);
  }
  return outputs;
}

}  // namespace tessera
