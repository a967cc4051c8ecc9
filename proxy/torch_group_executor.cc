#include "proxy/torch_group_executor.h"

#include <ATen/Parallel.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/cpu_affinity.h"
#include "common/model_repository.h"
#include "common/status_macros.h"
#include "proxy/torch_tensors.h"

namespace tessera {

struct TorchGroupExecutor::Impl {
  std::string repository;
  std::unique_ptr<ServiceCatalog> catalog;
  std::vector<torch::jit::Module> modules;
  std::vector<std::vector<at::Tensor>> inputs;  // per service
  int threads_per_member = 1;
  std::vector<int> cores;  // this process's cores; member i runs on i % n
  torch::Device device = torch::kCPU;

  std::vector<at::Tensor> RunRange(int service, std::vector<at::Tensor> state,
                                   int start, int end) {
    c10::InferenceMode guard;
    c10::List<at::Tensor> list;
    for (at::Tensor& t : state) list.push_back(t);
    auto out = modules[service].get_method("run_range")(
        {list, static_cast<int64_t>(start), static_cast<int64_t>(end)});
    std::vector<at::Tensor> result;
    for (const c10::IValue& v : out.toList()) result.push_back(v.toTensor());
    return result;
  }
};

namespace {

at::Tensor RandomInput(const TensorConfig& t, int batch) {
  std::vector<int64_t> shape = {batch};
  for (size_t i = 1; i < static_cast<size_t>(t.dims_size()); ++i) {
    shape.push_back(t.dims(i));
  }
  switch (t.data_type()) {
    case TYPE_INT64:
      return torch::randint(0, 1000, shape, torch::kInt64);
    case TYPE_INT32:
      return torch::ones(shape, torch::kInt32);
    default:
      return torch::randn(shape);
  }
}

}  // namespace

TorchGroupExecutor::TorchGroupExecutor(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
TorchGroupExecutor::~TorchGroupExecutor() = default;

absl::StatusOr<std::unique_ptr<TorchGroupExecutor>> TorchGroupExecutor::Create(
    const std::string& repository, const std::vector<std::string>& models,
    int batch, int threads_per_member, bool cuda) {
  ASSIGN_OR_RETURN(torch::Device device, RunnerDevice(cuda));
  ASSIGN_OR_RETURN(
      auto repo, ModelRepository::Load(repository,
                                       ModelRepository::InvalidEntries::kSkip));
  auto impl = std::make_unique<Impl>();
  impl->threads_per_member = std::max(1, threads_per_member);
  impl->device = device;
  impl->repository = repository;
  ASSIGN_OR_RETURN(impl->cores, GetCpuAffinity(0));
  std::vector<OverlapService> services;
  torch::manual_seed(0);
  for (const std::string& name : models) {
    const ModelRepository::Entry* entry = repo->Find(name);
    if (entry == nullptr || entry->config.segment_count() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model '", name, "' is not a segmentable model of ",
                       repository, " (config segment_count)"));
    }
    if (batch < 1 || batch > entry->config.max_batch_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch ", batch, " is outside 1..",
                       entry->config.max_batch_size(), " of ", name));
    }
    const std::string path =
        absl::StrCat(repository, "/", name, "/1/segments.pt");
    try {
      impl->modules.push_back(torch::jit::load(path, device));
      impl->modules.back().eval();
      const int64_t count =
          impl->modules.back().get_method("segment_count")({}).toInt();
      if (count != entry->config.segment_count()) {
        return absl::FailedPreconditionError(
            absl::StrCat(path, " has ", count, " segments; the config says ",
                         entry->config.segment_count()));
      }
    } catch (const std::exception& e) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot load ", path, ": ", e.what(),
                       " (models/generate_models.py writes it)"));
    }
    std::vector<at::Tensor> in;
    for (const TensorConfig& t : entry->config.input()) {
      in.push_back(RandomInput(t, batch).to(device));
    }
    impl->inputs.push_back(std::move(in));
    services.push_back({name, entry->config.segment_count(), false});
  }
  impl->catalog = std::make_unique<ServiceCatalog>(std::move(services));
  // Intra-op threads of the (process-wide) pool each member's range uses.
  at::set_num_threads(impl->threads_per_member);
  // No graph re-optimisation while measuring: the profiling executor would
  // specialise run_range anew for each new range and state shape, and a
  // group's time would then depend on what ran before it.
  torch::jit::setGraphExecutorOptimize(false);
  return std::unique_ptr<TorchGroupExecutor>(
      new TorchGroupExecutor(std::move(impl)));
}

const ServiceCatalog& TorchGroupExecutor::catalog() const {
  return *impl_->catalog;
}

absl::StatusOr<double> TorchGroupExecutor::RunMs(const OperatorGroup& group) {
  const int n = static_cast<int>(group.size());
  std::vector<std::vector<at::Tensor>> states(n);
  for (int i = 0; i < n; ++i) {
    const GroupMember& m = group[i];
    if (m.service < 0 || m.service >= impl_->catalog->size() ||
        m.start_op < 0 || m.end_op < m.start_op ||
        m.end_op > impl_->catalog->service(m.service).operators) {
      return absl::InvalidArgumentError("group member out of range");
    }
    try {
      states[i] = m.start_op == 0
                      ? impl_->inputs[m.service]
                      : impl_->RunRange(m.service, impl_->inputs[m.service], 0,
                                        m.start_op);
    } catch (const std::exception& e) {
      return absl::InternalError(e.what());
    }
  }
  try {
    SynchronizeCurrentStream(impl_->device);  // the untimed prefixes
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  }
  const auto start = std::chrono::steady_clock::now();
  // One core per member, so that ranges overlap as on a device's execution
  // units and do not migrate between cores mid-range.
  const std::vector<absl::Status> ran =
      RunPinnedInParallel(n, impl_->cores, [&](int i) -> absl::Status {
        try {
          RunOnOwnStream(impl_->device, [&] {
            states[i] = impl_->RunRange(group[i].service, std::move(states[i]),
                                        group[i].start_op, group[i].end_op);
          });
          return absl::OkStatus();
        } catch (const std::exception& e) {
          return absl::InternalError(e.what());
        }
      });
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  for (const absl::Status& s : ran) {
    if (!s.ok()) return s;
  }
  return ms;
}

namespace {

std::vector<std::vector<float>> Flatten(const std::vector<at::Tensor>& ts) {
  std::vector<std::vector<float>> out;
  for (const at::Tensor& t : ts) {
    at::Tensor f = t.to(torch::kCPU).to(torch::kFloat32).contiguous();
    out.emplace_back(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<float>>>
TorchGroupExecutor::RunWholeModel(int service) {
  const std::string path =
      absl::StrCat(impl_->repository, "/",
                   impl_->catalog->service(service).name, "/1/model.pt");
  try {
    torch::jit::Module whole = torch::jit::load(path, impl_->device);
    whole.eval();
    c10::InferenceMode guard;
    std::vector<c10::IValue> args(impl_->inputs[service].begin(),
                                  impl_->inputs[service].end());
    const c10::IValue out = whole.forward(args);
    std::vector<at::Tensor> tensors;
    if (out.isTuple()) {
      for (const c10::IValue& v : out.toTuple()->elements()) {
        tensors.push_back(v.toTensor());
      }
    } else {
      tensors.push_back(out.toTensor());
    }
    return Flatten(tensors);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(path, ": ", e.what()));
  }
}

absl::StatusOr<std::vector<std::vector<float>>> TorchGroupExecutor::RunInPieces(
    int service, const std::vector<int>& cuts) {
  std::vector<at::Tensor> state = impl_->inputs[service];
  int from = 0;
  std::vector<int> ends = cuts;
  ends.push_back(impl_->catalog->service(service).operators);
  try {
    for (int end : ends) {
      state = impl_->RunRange(service, std::move(state), from, end);
      from = end;
    }
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  }
  return Flatten(state);
}

}  // namespace tessera
