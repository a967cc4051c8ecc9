#include "overlap/mlp.h"

#include <algorithm>
#include <cmath>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"

namespace tessera {

absl::StatusOr<Mlp> Mlp::FromProto(const MlpProto& proto) {
  if (proto.layers_size() == 0) {
    return absl::InvalidArgumentError("an MLP needs at least one layer");
  }
  for (int i = 0; i < proto.layers_size(); ++i) {
    const DenseLayerProto& l = proto.layers(i);
    if (l.inputs() <= 0 || l.outputs() <= 0 ||
        l.weights_size() != l.inputs() * l.outputs() ||
        l.biases_size() != l.outputs()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer ", i, ": ", l.inputs(), "x", l.outputs(), " with ",
          l.weights_size(), " weights and ", l.biases_size(), " biases"));
    }
    if (i > 0 && l.inputs() != proto.layers(i - 1).outputs()) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer ", i, " takes ", l.inputs(),
                       " inputs but the previous layer gives ",
                       proto.layers(i - 1).outputs()));
    }
  }
  if (proto.layers(proto.layers_size() - 1).outputs() != 1) {
    return absl::InvalidArgumentError("the last layer must have one output");
  }
  const int n = proto.layers(0).inputs();
  if ((proto.input_offset_size() != 0 && proto.input_offset_size() != n) ||
      proto.input_scale_size() != proto.input_offset_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input normalisation must have ", n, " values or none"));
  }
  return Mlp(proto);
}

absl::StatusOr<Mlp> Mlp::FromStateDict(const StateDict& dict,
                                       const std::vector<std::string>& names) {
  MlpProto proto;
  for (size_t i = 0; i < names.size(); ++i) {
    auto w = dict.find(names[i] + ".weight");
    auto b = dict.find(names[i] + ".bias");
    if (w == dict.end() || b == dict.end() || w->second.shape.size() != 2) {
      return absl::InvalidArgumentError("checkpoint has no linear layer " +
                                        names[i]);
    }
    DenseLayerProto* l = proto.add_layers();
    l->set_outputs(w->second.shape[0]);
    l->set_inputs(w->second.shape[1]);
    l->mutable_weights()->Add(w->second.values.begin(), w->second.values.end());
    l->mutable_biases()->Add(b->second.values.begin(), b->second.values.end());
    l->set_relu(i + 1 < names.size());
  }
  return FromProto(proto);
}

double Mlp::Predict(const std::vector<float>& x) const {
  // Small fixed-size buffers: the widest layer here is 32.
  ABSL_RAW_CHECK(static_cast<int>(x.size()) == inputs(), "MLP input width");
  std::vector<float> in(x);
  if (proto_.input_offset_size() > 0) {
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = (in[i] - proto_.input_offset(i)) * proto_.input_scale(i);
    }
  }
  std::vector<float> out;
  for (const DenseLayerProto& l : proto_.layers()) {
    out.assign(l.outputs(), 0.0f);
    const float* w = l.weights().data();
    for (int o = 0; o < l.outputs(); ++o) {
      float sum = l.biases(o);
      const float* row = w + static_cast<size_t>(o) * l.inputs();
      for (int i = 0; i < l.inputs(); ++i) sum += row[i] * in[i];
      out[o] = l.relu() ? std::max(sum, 0.0f) : sum;
    }
    in.swap(out);
  }
  return proto_.log_output() ? std::exp(static_cast<double>(in[0])) : in[0];
}

}  // namespace tessera
