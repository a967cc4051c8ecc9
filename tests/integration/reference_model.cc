#include "tests/integration/reference_model.h"

#include <ATen/Parallel.h>
#include <torch/script.h>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace testing {
namespace {

c10::ScalarType ToTorch(DataType t) {
  switch (t) {
    case TYPE_INT32:
      return c10::kInt;
    case TYPE_INT64:
      return c10::kLong;
    case TYPE_FP64:
      return c10::kDouble;
    default:
      return c10::kFloat;
  }
}

DataType FromTorch(c10::ScalarType t) {
  switch (t) {
    case c10::kInt:
      return TYPE_INT32;
    case c10::kLong:
      return TYPE_INT64;
    case c10::kDouble:
      return TYPE_FP64;
    case c10::kFloat:
      return TYPE_FP32;
    default:
      return TYPE_INVALID;
  }
}

}  // namespace

struct ReferenceModel::Impl {
  torch::jit::script::Module module;
};

ReferenceModel::ReferenceModel(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
ReferenceModel::~ReferenceModel() = default;

absl::StatusOr<std::unique_ptr<ReferenceModel>> ReferenceModel::Load(
    const std::string& path, int num_threads) {
  at::set_num_threads(num_threads);
  auto impl = std::make_unique<Impl>();
  try {
    impl->module = torch::jit::load(path, torch::kCPU);
    impl->module.eval();
  } catch (const std::exception& ex) {
    return absl::InternalError(absl::StrCat("load ", path, ": ", ex.what()));
  }
  return std::unique_ptr<ReferenceModel>(new ReferenceModel(std::move(impl)));
}

absl::StatusOr<std::vector<RawTensor>> ReferenceModel::Run(
    const std::vector<RawTensor>& inputs) {
  std::vector<torch::jit::IValue> args;
  for (const RawTensor& in : inputs) {
    args.emplace_back(
        torch::from_blob(const_cast<char*>(in.bytes.data()), in.shape,
                         torch::TensorOptions().dtype(ToTorch(in.data_type)))
            .clone());
  }
  std::vector<torch::Tensor> outs;
  try {
    c10::InferenceMode guard;
    auto value = impl_->module.forward(args);
    if (value.isTuple()) {
      for (const auto& e : value.toTuple()->elements()) {
        outs.push_back(e.toTensor().contiguous());
      }
    } else {
      outs.push_back(value.toTensor().contiguous());
    }
  } catch (const std::exception& ex) {
    return absl::InternalError(ex.what());
  }
  std::vector<RawTensor> result;
  for (const auto& t : outs) {
    RawTensor r;
    r.data_type = FromTorch(t.scalar_type());
    r.shape.assign(t.sizes().begin(), t.sizes().end());
    r.bytes.assign(static_cast<const char*>(t.data_ptr()), t.nbytes());
    result.push_back(std::move(r));
  }
  return result;
}

}  // namespace testing
}  // namespace tessera
