#include "overlap/mlp_trainer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

// One dense layer with its Adam state.
struct Layer {
  int in = 0, out = 0;
  bool relu = false;
  std::vector<double> w, b, gw, gb, mw, vw, mb, vb;
};

void AdamStep(std::vector<double>& p, std::vector<double>& g,
              std::vector<double>& m, std::vector<double>& v, double lr,
              int t) {
  constexpr double kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;
  const double c1 = 1 - std::pow(kB1, t), c2 = 1 - std::pow(kB2, t);
  for (size_t i = 0; i < p.size(); ++i) {
    m[i] = kB1 * m[i] + (1 - kB1) * g[i];
    v[i] = kB2 * v[i] + (1 - kB2) * g[i] * g[i];
    p[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + kEps);
    g[i] = 0;
  }
}

void SgdStep(std::vector<double>& p, std::vector<double>& g, double lr) {
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] -= lr * g[i];
    g[i] = 0;
  }
}

class Network {
 public:
  Network(int inputs, const MlpTrainerOptions& o, std::mt19937_64& rng) {
    int in = inputs;
    for (int k = 0; k <= o.hidden_layers; ++k) {
      Layer l;
      l.in = in;
      l.out = k < o.hidden_layers ? o.hidden_width : 1;
      l.relu = k < o.hidden_layers;
      // He initialisation for ReLU layers.
      std::normal_distribution<double> init(0, std::sqrt(2.0 / l.in));
      l.w.resize(l.in * l.out);
      for (double& w : l.w) w = init(rng);
      l.b.assign(l.out, 0);
      l.gw.assign(l.w.size(), 0);
      l.mw = l.vw = l.gw;
      l.gb.assign(l.out, 0);
      l.mb = l.vb = l.gb;
      layers_.push_back(std::move(l));
      in = layers_.back().out;
    }
    acts_.resize(layers_.size() + 1);
  }

  // Forward; keeps the activations for Backward.
  double Forward(const std::vector<double>& x) {
    acts_[0] = x;
    for (size_t k = 0; k < layers_.size(); ++k) {
      const Layer& l = layers_[k];
      std::vector<double>& y = acts_[k + 1];
      y.assign(l.out, 0);
      for (int o = 0; o < l.out; ++o) {
        double s = l.b[o];
        for (int i = 0; i < l.in; ++i) s += l.w[o * l.in + i] * acts_[k][i];
        y[o] = l.relu ? std::max(s, 0.0) : s;
      }
    }
    return acts_.back()[0];
  }

  // Accumulates the gradients for an output gradient dy (of the last Forward).
  void Backward(double dy) {
    std::vector<double> grad = {dy};
    for (int k = static_cast<int>(layers_.size()) - 1; k >= 0; --k) {
      Layer& l = layers_[k];
      const std::vector<double>& x = acts_[k];
      const std::vector<double>& y = acts_[k + 1];
      std::vector<double> down(l.in, 0);
      for (int o = 0; o < l.out; ++o) {
        const double g = l.relu && y[o] <= 0 ? 0 : grad[o];
        if (g == 0) continue;
        l.gb[o] += g;
        for (int i = 0; i < l.in; ++i) {
          l.gw[o * l.in + i] += g * x[i];
          down[i] += g * l.w[o * l.in + i];
        }
      }
      grad.swap(down);
    }
  }

  void Step(double lr, int t, bool adam) {
    for (Layer& l : layers_) {
      if (adam) {
        AdamStep(l.w, l.gw, l.mw, l.vw, lr, t);
        AdamStep(l.b, l.gb, l.mb, l.vb, lr, t);
      } else {
        SgdStep(l.w, l.gw, lr);
        SgdStep(l.b, l.gb, lr);
      }
    }
  }

  MlpProto ToProto() const {
    MlpProto p;
    for (const Layer& l : layers_) {
      DenseLayerProto* d = p.add_layers();
      d->set_inputs(l.in);
      d->set_outputs(l.out);
      d->set_relu(l.relu);
      for (double w : l.w) d->add_weights(static_cast<float>(w));
      for (double b : l.b) d->add_biases(static_cast<float>(b));
    }
    return p;
  }

 private:
  std::vector<Layer> layers_;
  std::vector<std::vector<double>> acts_;
};

}  // namespace

MlpTrainerOptions ArtifactTraining() {
  MlpTrainerOptions o;
  o.learning_rate = 0.001;
  o.standardize_inputs = false;
  o.log_target = false;
  o.adam = false;
  return o;
}

absl::StatusOr<Mlp> TrainMlp(const std::vector<MlpSample>& samples,
                             const MlpTrainerOptions& options) {
  if (samples.empty()) return absl::InvalidArgumentError("no samples");
  const size_t n = samples[0].features.size();
  for (const MlpSample& s : samples) {
    if (s.features.size() != n || !(s.latency_ms > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("samples need ", n, " features and a positive latency"));
    }
  }
  // Standardise each input: offset = mean, scale = 1/std (1 when constant).
  std::vector<double> mean(n, 0), sq(n, 0);
  for (const MlpSample& s : samples) {
    for (size_t i = 0; i < n; ++i) {
      mean[i] += s.features[i];
      sq[i] += s.features[i] * s.features[i];
    }
  }
  std::vector<float> offset(n, 0.0f), scale(n, 1.0f);
  for (size_t i = 0; options.standardize_inputs && i < n; ++i) {
    const double m = mean[i] / samples.size();
    const double var = sq[i] / samples.size() - m * m;
    offset[i] = static_cast<float>(m);
    scale[i] = var > 1e-12 ? static_cast<float>(1 / std::sqrt(var)) : 1.0f;
  }
  std::vector<std::vector<double>> x(samples.size(), std::vector<double>(n));
  std::vector<double> y(samples.size());
  for (size_t k = 0; k < samples.size(); ++k) {
    for (size_t i = 0; i < n; ++i) {
      x[k][i] = (samples[k].features[i] - offset[i]) * scale[i];
    }
    y[k] = options.log_target ? std::log(samples[k].latency_ms)
                              : samples[k].latency_ms;
  }

  std::mt19937_64 rng(options.seed);
  Network net(static_cast<int>(n), options, rng);
  std::vector<size_t> order(samples.size());
  std::iota(order.begin(), order.end(), 0);
  const int batches_per_epoch = static_cast<int>(
      (samples.size() + options.batch_size - 1) / options.batch_size);
  const int total_steps = options.epochs * batches_per_epoch;
  int step = 0;
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t start = 0; start < order.size(); start += options.batch_size) {
      const size_t end = std::min(order.size(), start + options.batch_size);
      for (size_t k = start; k < end; ++k) {
        const double out = net.Forward(x[order[k]]);
        net.Backward((out - y[order[k]]) / (end - start));
      }
      ++step;
      const double lr = options.learning_rate * 0.5 *
                        (1 + std::cos(M_PI * step / total_steps));
      net.Step(lr, step, options.adam);
    }
  }
  MlpProto proto = net.ToProto();
  if (options.standardize_inputs) {
    proto.mutable_input_offset()->Add(offset.begin(), offset.end());
    proto.mutable_input_scale()->Add(scale.begin(), scale.end());
  }
  proto.set_log_output(options.log_target);
  return Mlp::FromProto(proto);
}

double MeanAbsolutePercentageError(const Mlp& mlp,
                                   const std::vector<MlpSample>& samples) {
  if (samples.empty()) return 0;
  double sum = 0;
  for (const MlpSample& s : samples) {
    sum += std::abs(mlp.Predict(s.features) - s.latency_ms) / s.latency_ms;
  }
  return sum / samples.size();
}

}  // namespace tessera
