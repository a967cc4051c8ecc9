#include "scheduler/mlp_inss_actor.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "scheduler/inss_environment.h"

namespace tessera {
namespace {

// y = W x + b for one layer ([outputs, inputs] row-major W).
std::vector<float> Affine(const InssActorWeights::Layer& layer,
                          const std::vector<float>& x) {
  std::vector<float> y(layer.bias().begin(), layer.bias().end());
  const float* w = layer.weight().data();
  for (int o = 0; o < layer.outputs(); ++o) {
    const float* row = w + static_cast<size_t>(o) * layer.inputs();
    float sum = 0;
    for (int i = 0; i < layer.inputs(); ++i) sum += row[i] * x[i];
    y[o] += sum;
  }
  return y;
}

// Softmax over [begin, begin + n) of `logits`, appended to `out`.
void AppendSoftmax(const std::vector<float>& logits, size_t begin, int n,
                   std::vector<float>* out) {
  const float top =
      *std::max_element(logits.begin() + begin, logits.begin() + begin + n);
  double sum = 0;
  std::vector<double> e(n);
  for (int k = 0; k < n; ++k) {
    e[k] = std::exp(static_cast<double>(logits[begin + k] - top));
    sum += e[k];
  }
  for (int k = 0; k < n; ++k) out->push_back(static_cast<float>(e[k] / sum));
}

absl::Status CheckStateSize(const InssCheckpointInfo& info) {
  const int expected =
      InssEnvironment::StateSize(info.max_models(), info.gpus());
  if (info.state_size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state_size ", info.state_size(), " but ", info.max_models(),
        " model slots and ", info.gpus(), " gpus make ", expected));
  }
  return absl::OkStatus();
}

absl::Status CheckShape(const InssCheckpointInfo& info,
                        const InssActorWeights& weights) {
  const int outputs = info.max_models() * (info.gpus() + info.share_units());
  const std::vector<std::pair<int, int>> want = {
      {info.state_size(), info.hidden1_size()},
      {info.hidden1_size(), info.hidden2_size()},
      {info.hidden2_size(), outputs}};
  if (weights.layers_size() != static_cast<int>(want.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the actor has ", weights.layers_size(), " layers, not 3"));
  }
  for (int l = 0; l < weights.layers_size(); ++l) {
    const InssActorWeights::Layer& layer = weights.layers(l);
    const auto [in, out] = want[l];
    if (layer.inputs() != in || layer.outputs() != out ||
        layer.weight_size() != in * out || layer.bias_size() != out) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer ", l, " is ", layer.inputs(), " -> ", layer.outputs(), " (",
          layer.weight_size(), " weights, ", layer.bias_size(),
          " biases) but the checkpoint info asks for ", in, " -> ", out));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string MlpInssActor::Stem(const std::string& path) {
  for (const char* ext : {".actor.binpb", ".pt", ".pbtxt"}) {
    if (absl::EndsWith(path, ext)) {
      return path.substr(0, path.size() - std::string(ext).size());
    }
  }
  return path;
}

absl::StatusOr<InssCheckpointInfo> MlpInssActor::ReadInfo(
    const std::string& stem) {
  InssCheckpointInfo info;
  if (absl::Status s = ReadTextProto(stem + ".pbtxt", &info); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("InSS checkpoint info: ", s.message()));
  }
  if (absl::Status s = CheckStateSize(info); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(stem, ".pbtxt: ", s.message()));
  }
  return info;
}

absl::StatusOr<InssActorWeights> MlpInssActor::ReadWeights(
    const std::string& stem) {
  const std::string path = stem + ".actor.binpb";
  std::ifstream in(path, std::ios::binary);
  InssActorWeights weights;
  if (!in || !weights.ParseFromIstream(&in)) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the InSS actor's weights from '", path, "'"));
  }
  return weights;
}

absl::StatusOr<std::shared_ptr<const MlpInssActor>> MlpInssActor::Create(
    InssCheckpointInfo info, InssActorWeights weights) {
  RETURN_IF_ERROR(CheckStateSize(info));
  RETURN_IF_ERROR(CheckShape(info, weights));
  return std::shared_ptr<const MlpInssActor>(
      new MlpInssActor(std::move(info), std::move(weights)));
}

absl::StatusOr<std::shared_ptr<const MlpInssActor>> MlpInssActor::Untrained(
    InssCheckpointInfo info, uint64_t seed) {
  const int outputs = info.max_models() * (info.gpus() + info.share_units());
  const std::vector<std::pair<int, int>> shape = {
      {info.state_size(), info.hidden1_size()},
      {info.hidden1_size(), info.hidden2_size()},
      {info.hidden2_size(), outputs}};
  std::mt19937_64 rng(seed);
  InssActorWeights weights;
  for (const auto& [in, out] : shape) {
    InssActorWeights::Layer* layer = weights.add_layers();
    layer->set_inputs(in);
    layer->set_outputs(out);
    const float bound = in > 0 ? 1.0f / std::sqrt(static_cast<float>(in)) : 0;
    std::uniform_real_distribution<float> u(-bound, bound);
    for (int i = 0; i < in * out; ++i) layer->add_weight(u(rng));
    for (int i = 0; i < out; ++i) layer->add_bias(u(rng));
  }
  return Create(std::move(info), std::move(weights));
}

absl::StatusOr<std::shared_ptr<const MlpInssActor>> MlpInssActor::LoadOrShipped(
    const std::string& path) {
  if (!path.empty()) return Load(path);
  std::string shipped = TESSERA_INSS_DEFAULT_CHECKPOINT;
  if (!std::filesystem::exists(shipped + ".pbtxt")) {
    shipped = "learner/checkpoints/inss_v100";
  }
  return Load(shipped);
}

absl::StatusOr<std::shared_ptr<const MlpInssActor>> MlpInssActor::Load(
    const std::string& path) {
  const std::string stem = Stem(path);
  ASSIGN_OR_RETURN(InssCheckpointInfo info, ReadInfo(stem));
  ASSIGN_OR_RETURN(InssActorWeights weights, ReadWeights(stem));
  auto actor = Create(std::move(info), std::move(weights));
  if (!actor.ok()) {
    return absl::Status(actor.status().code(),
                        absl::StrCat(stem, ": ", actor.status().message()));
  }
  return actor;
}

absl::StatusOr<std::vector<float>> MlpInssActor::Probabilities(
    const std::vector<float>& state) const {
  if (static_cast<int>(state.size()) != info_.state_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("InSS state has ", state.size(), " values, the actor ",
                     info_.state_size()));
  }
  std::vector<float> x = state;
  for (int l = 0; l < weights_.layers_size(); ++l) {
    x = Affine(weights_.layers(l), x);
    if (l + 1 < weights_.layers_size()) {
      for (float& v : x) v = std::max(v, 0.0f);
    }
  }
  // Device heads: a device the state lacks (its first feature not set)
  // gets the learner's -1e9 logit.
  const int slots = info_.max_models(), gpus = info_.gpus(),
            levels = info_.share_units();
  const int device_offset = InssEnvironment::kSlotFeatures * slots;
  for (int k = 0; k < gpus; ++k) {
    if (state[device_offset + k * InssEnvironment::kDeviceFeatures] > 0.5f) {
      continue;
    }
    for (int i = 0; i < slots; ++i) x[i * gpus + k] = -1e9f;
  }
  std::vector<float> probabilities;
  probabilities.reserve(x.size());
  for (int i = 0; i < slots; ++i)
    AppendSoftmax(x, i * gpus, gpus, &probabilities);
  for (int i = 0; i < slots; ++i) {
    AppendSoftmax(x, slots * gpus + i * levels, levels, &probabilities);
  }
  return probabilities;
}

}  // namespace tessera
