#include "proxy/torch_model_runner.h"

#include <ATen/Parallel.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/data_type.h"
#include "common/status_macros.h"
#include "proxy/error_text.h"
#include "proxy/torch_tensors.h"
#include "spdlog/spdlog.h"

namespace tessera {

absl::StatusOr<torch::Device> RunnerDevice(bool cuda) {
  if (!cuda) return torch::Device(torch::kCPU);
  if (!torch::cuda::is_available()) {
    return absl::FailedPreconditionError(
        "device cuda: this LibTorch build has no CUDA or sees no GPU "
        "(build against a CUDA LibTorch: docs/cuda.md)");
  }
  return torch::Device(torch::kCUDA, 0);
}

void RunOnOwnStream(const torch::Device& device,
                    const std::function<void()>& body) {
  if (!device.is_cuda()) {
    body();
    return;
  }
  const c10::impl::VirtualGuardImpl cuda(device.type());
  const c10::Stream stream = cuda.getStreamFromGlobalPool(device);
  {
    const c10::StreamGuard on_stream(stream);
    body();
  }
  cuda.synchronizeStream(stream);
}

void SynchronizeCurrentStream(const torch::Device& device) {
  if (!device.is_cuda()) return;
  const c10::impl::VirtualGuardImpl cuda(device.type());
  cuda.synchronizeStream(cuda.getStream(device));
}

absl::StatusOr<c10::ScalarType> ToScalarType(DataType type) {
  switch (type) {
    case TYPE_BOOL:
      return c10::kBool;
    case TYPE_UINT8:
      return c10::kByte;
    case TYPE_INT8:
      return c10::kChar;
    case TYPE_INT16:
      return c10::kShort;
    case TYPE_INT32:
      return c10::kInt;
    case TYPE_INT64:
      return c10::kLong;
    case TYPE_FP16:
      return c10::kHalf;
    case TYPE_FP32:
      return c10::kFloat;
    case TYPE_FP64:
      return c10::kDouble;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("no torch type for ", DataType_Name(type)));
  }
}

absl::StatusOr<torch::Tensor> TensorOverView(const TensorView& view) {
  ASSIGN_OR_RETURN(auto type, ToScalarType(view.data_type));
  // The shape must describe exactly the bytes the view holds: a larger one
  // would read past them (another call's tensors in the shared region).
  auto needed = TensorBytes(view.shape, view.data_type);
  if (!needed.ok() || static_cast<uint64_t>(*needed) != view.size_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", view.name, "': shape ", ShapeToString(view.shape),
        " does not match its ", view.size_bytes, " bytes"));
  }
  return torch::from_blob(view.data, view.shape,
                          torch::TensorOptions().dtype(type));
}

absl::StatusOr<std::vector<TensorView>> CopyOutputs(
    const ModelConfig& model, const std::vector<torch::Tensor>& results,
    uint8_t* out, size_t capacity) {
  const auto& configs = model.output();
  if (static_cast<int>(results.size()) != configs.size()) {
    return absl::InternalError(
        absl::StrCat("model '", model.name(), "' returned ", results.size(),
                     " outputs; its config declares ", configs.size()));
  }
  std::vector<TensorView> outputs;
  size_t offset = 0;
  for (int i = 0; i < configs.size(); ++i) {
    const torch::Tensor& t = results[i];
    ASSIGN_OR_RETURN(auto type, ToScalarType(configs[i].data_type()));
    if (t.scalar_type() != type) {
      return absl::InternalError(absl::StrCat(
          "model '", model.name(), "' output '", configs[i].name(), "' is ",
          c10::toString(t.scalar_type()), "; config says ",
          DataType_Name(configs[i].data_type())));
    }
    TensorView view;
    view.name = configs[i].name();
    view.data_type = configs[i].data_type();
    view.shape.assign(t.sizes().begin(), t.sizes().end());
    view.size_bytes = t.nbytes();
    offset = AlignUp64(offset);
    if (offset + view.size_bytes > capacity) {
      return absl::ResourceExhaustedError(
          absl::StrCat("model '", model.name(), "' outputs need more than the ",
                       capacity, " bytes reserved for them"));
    }
    view.data = out + offset;
    std::memcpy(view.data, t.data_ptr(), view.size_bytes);
    offset += view.size_bytes;
    outputs.push_back(std::move(view));
  }
  return outputs;
}

struct TorchModelRunner::Impl {
  struct Model {
    ModelConfig config;
    torch::jit::script::Module module;
  };
  std::map<std::string, Model> models;
  // Models whose file did not load: why.
  std::map<std::string, absl::Status> failed;
  torch::Device device = torch::kCPU;
};

TorchModelRunner::TorchModelRunner(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
TorchModelRunner::~TorchModelRunner() = default;

absl::StatusOr<std::unique_ptr<TorchModelRunner>> TorchModelRunner::Create(
    const std::map<std::string, std::string>& model_paths,
    const std::map<std::string, ModelConfig>& configs, const Options& options) {
  at::set_num_threads(std::max(1, options.num_threads));
  auto impl = std::make_unique<Impl>();
  ASSIGN_OR_RETURN(impl->device, RunnerDevice(options.cuda));
  for (const auto& [name, path] : model_paths) {
    auto cit = configs.find(name);
    if (cit == configs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("no config for model '", name, "'"));
    }
    Impl::Model model;
    model.config = cit->second;
    try {
      c10::InferenceMode guard;
      model.module = torch::jit::load(path, impl->device);
      model.module.eval();
    } catch (const std::exception& ex) {
      // c10::Error's what() ends in a C++ backtrace; its message is first.
      const auto* c10 = dynamic_cast<const c10::Error*>(&ex);
      const std::string why = ShortModelError(
          c10 != nullptr ? c10->what_without_backtrace() : ex.what());
      spdlog::error("model '{}' from {} does not load; serving the others: {}",
                    name, path, why);
      impl->failed[name] = absl::UnavailableError(
          absl::StrCat("model '", name, "' failed to load on its proxy (", why,
                       "); replace its file, then RepositoryModelLoad"));
      continue;
    }
    impl->models.emplace(name, std::move(model));
  }
  return std::unique_ptr<TorchModelRunner>(
      new TorchModelRunner(std::move(impl)));
}

absl::Status TorchModelRunner::ModelStatus(const std::string& model) const {
  auto f = impl_->failed.find(model);
  return f == impl_->failed.end() ? absl::OkStatus() : f->second;
}

void TorchModelRunner::Drop(const std::string& name) {
  impl_->models.erase(name);
  impl_->failed.erase(name);
}

absl::StatusOr<std::vector<TensorView>> TorchModelRunner::Run(
    const std::string& name, const std::vector<TensorView>& inputs,
    uint8_t* out, size_t out_capacity, absl::Duration* exec_time) {
  if (auto f = impl_->failed.find(name); f != impl_->failed.end()) {
    return f->second;
  }
  auto it = impl_->models.find(name);
  if (it == impl_->models.end()) {
    return absl::NotFoundError(
        absl::StrCat("model '", name, "' is not loaded in this proxy"));
  }
  Impl::Model& model = it->second;
  std::vector<torch::jit::IValue> args;
  args.reserve(inputs.size());
  for (const TensorView& in : inputs) {
    ASSIGN_OR_RETURN(auto t, TensorOverView(in));
    args.emplace_back(impl_->device.is_cuda() ? t.to(impl_->device) : t);
  }
  std::vector<torch::Tensor> results;
  const absl::Time start = absl::Now();
  try {
    c10::InferenceMode guard;
    torch::jit::IValue value = model.module.forward(args);
    if (value.isTensor()) {
      results.push_back(value.toTensor());
    } else if (value.isTuple()) {
      for (const auto& e : value.toTuple()->elements()) {
        results.push_back(e.toTensor());
      }
    } else if (value.isTensorList()) {
      for (const auto& t : value.toTensorList()) results.push_back(t);
    } else {
      return absl::InternalError(
          absl::StrCat("model '", name, "' returned ", value.tagKind(),
                       "; expected a tensor or a tuple of tensors"));
    }
    // Outputs come back to host memory; on CUDA the copy waits for the
    // kernels, so the time below is the batch's device time.
    for (auto& t : results) t = t.to(torch::kCPU).contiguous();
  } catch (const std::exception& ex) {
    // Logged whole here; the client gets the error's last line.
    spdlog::warn("model '{}' failed: {}", name, ex.what());
    return absl::InternalError(absl::StrCat(
        "model '", name, "' failed: ", ShortModelError(ex.what())));
  }
  *exec_time = absl::Now() - start;

  return CopyOutputs(model.config, results, out, out_capacity);
}

}  // namespace tessera
