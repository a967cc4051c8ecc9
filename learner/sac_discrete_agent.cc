#include "learner/sac_discrete_agent.h"

#include <torch/torch.h>

#include <cmath>
#include <exception>
#include <fstream>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

torch::nn::Sequential Mlp(const SacOptions& o) {
  const int outputs = o.slots * (o.gpus + o.levels);
  return torch::nn::Sequential(
      torch::nn::Linear(o.state_size, o.hidden1_size), torch::nn::ReLU(),
      torch::nn::Linear(o.hidden1_size, o.hidden2_size), torch::nn::ReLU(),
      torch::nn::Linear(o.hidden2_size, outputs));
}

// [B, K]: whether each device exists in each state.
torch::Tensor DevicesPresent(const torch::Tensor& state, const SacOptions& o) {
  if (o.device_offset < 0) {
    return torch::ones({state.size(0), o.gpus}, torch::kBool);
  }
  return state.narrow(1, o.device_offset, o.gpus * o.device_stride)
             .reshape({state.size(0), o.gpus, o.device_stride})
             .select(2, 0) > 0.5;
}

// A [B, I (K + U)] output of `state` split into the device heads
// [B, I, K], devices the state lacks masked, and the share heads
// [B, I, U].
std::pair<torch::Tensor, torch::Tensor> Split(const torch::Tensor& out,
                                              const torch::Tensor& state,
                                              const SacOptions& o) {
  const int64_t b = out.size(0);
  auto gpu = out.narrow(1, 0, o.slots * o.gpus).reshape({b, o.slots, o.gpus});
  if (o.device_offset >= 0) {
    gpu = gpu.masked_fill(DevicesPresent(state, o).logical_not().unsqueeze(1),
                          -1e9);
  }
  auto level = out.narrow(1, o.slots * o.gpus, o.slots * o.levels)
                   .reshape({b, o.slots, o.levels});
  return {gpu, level};
}

absl::Status Validate(const SacOptions& o) {
  if (o.state_size <= 0 || o.slots <= 0 || o.gpus <= 0 || o.levels <= 0 ||
      o.hidden1_size <= 0 || o.hidden2_size <= 0 || o.minibatch_size <= 0 ||
      o.replay_size < o.minibatch_size ||
      (o.device_offset >= 0 &&
       o.device_offset + o.gpus * o.device_stride > o.state_size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SAC options need positive sizes and replay >= minibatch (state ",
        o.state_size, ", slots ", o.slots, ", gpus ", o.gpus, ", levels ",
        o.levels, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

struct SacDiscreteAgent::Impl {
  SacOptions o;
  torch::nn::Sequential actor{nullptr}, q1{nullptr}, q2{nullptr},
      q1_target{nullptr}, q2_target{nullptr};
  torch::Tensor log_temperature;       // [2 I]: device heads, then share heads
  torch::Tensor level_target_entropy;  // [I]: the share heads' targets
  std::unique_ptr<torch::optim::Adam> actor_opt, q_opt, temperature_opt;
  // Replay ring.
  torch::Tensor states, actions, rewards, next_states;
  int count = 0, next = 0;

  void InitTraining() {
    q1 = Mlp(o);
    q2 = Mlp(o);
    q1_target = Mlp(o);
    q2_target = Mlp(o);
    {
      torch::NoGradGuard no_grad;
      auto copy = [](torch::nn::Sequential& to, torch::nn::Sequential& from) {
        auto t = to->parameters();
        auto f = from->parameters();
        for (size_t i = 0; i < t.size(); ++i) t[i].copy_(f[i]);
      };
      copy(q1_target, q1);
      copy(q2_target, q2);
    }
    log_temperature = torch::full(
        {2 * o.slots}, std::log(o.initial_temperature), torch::requires_grad());
    // The device heads' targets depend on the devices each state has
    // (Update computes them per state).
    level_target_entropy = torch::full(
        {o.slots},
        static_cast<float>(o.target_entropy_ratio * std::log(o.levels)));
    actor_opt = std::make_unique<torch::optim::Adam>(
        actor->parameters(), torch::optim::AdamOptions(o.policy_learning_rate));
    std::vector<torch::Tensor> q_params = q1->parameters();
    for (const auto& p : q2->parameters()) q_params.push_back(p);
    q_opt = std::make_unique<torch::optim::Adam>(
        q_params, torch::optim::AdamOptions(o.q_learning_rate));
    temperature_opt = std::make_unique<torch::optim::Adam>(
        std::vector<torch::Tensor>{log_temperature},
        torch::optim::AdamOptions(o.temperature_learning_rate));
    states = torch::zeros({o.replay_size, o.state_size});
    next_states = torch::zeros({o.replay_size, o.state_size});
    actions = torch::zeros({o.replay_size, 2 * o.slots}, torch::kLong);
    rewards = torch::zeros({o.replay_size});
  }

  torch::Tensor State(const std::vector<float>& s) const {
    return torch::from_blob(const_cast<float*>(s.data()),
                            {1, static_cast<int64_t>(s.size())}, torch::kFloat)
        .clone();
  }
};

SacDiscreteAgent::SacDiscreteAgent(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
SacDiscreteAgent::~SacDiscreteAgent() = default;

absl::StatusOr<std::unique_ptr<SacDiscreteAgent>> SacDiscreteAgent::Create(
    const SacOptions& options) {
  if (auto s = Validate(options); !s.ok()) return s;
  torch::manual_seed(options.seed);
  torch::set_num_threads(std::max(1, options.threads));
  auto impl = std::make_unique<Impl>();
  impl->o = options;
  impl->actor = Mlp(options);
  impl->InitTraining();
  return std::unique_ptr<SacDiscreteAgent>(
      new SacDiscreteAgent(std::move(impl)));
}

namespace {

// The network `options` describe, for a mismatch message.
std::string Shape(const SacOptions& options) {
  return absl::StrCat("state ", options.state_size, ", hidden ",
                      options.hidden1_size, "/", options.hidden2_size, ", ",
                      options.slots, " models, ", options.gpus, " devices, ",
                      options.levels, " share units");
}

}  // namespace

std::unique_ptr<SacDiscreteAgent::Impl> SacDiscreteAgent::PlanningImpl(
    const SacOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->o = options;
  impl->actor = Mlp(options);
  return impl;
}

absl::StatusOr<std::unique_ptr<SacDiscreteAgent>> SacDiscreteAgent::LoadActor(
    const SacOptions& options, const std::string& path) {
  if (auto s = Validate(options); !s.ok()) return s;
  std::unique_ptr<Impl> impl = PlanningImpl(options);
  // torch::load replaces parameters whatever their shape: compare with
  // the network the options describe.
  std::vector<std::vector<int64_t>> expected;
  for (const auto& p : impl->actor->parameters()) {
    expected.push_back(p.sizes().vec());
  }
  try {
    torch::load(impl->actor, path);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot load the InSS actor from '", path, "': ", e.what()));
  }
  const auto loaded = impl->actor->parameters();
  for (size_t i = 0; i < loaded.size(); ++i) {
    if (i >= expected.size() || loaded[i].sizes().vec() != expected[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot load the InSS actor from '", path,
          "': its layers do not have the shape its .pbtxt describes (",
          Shape(options), ")"));
    }
  }
  impl->actor->eval();
  return std::unique_ptr<SacDiscreteAgent>(
      new SacDiscreteAgent(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<SacDiscreteAgent>> SacDiscreteAgent::LoadActor(
    const SacOptions& options, const InssActorWeights& weights) {
  if (auto s = Validate(options); !s.ok()) return s;
  std::unique_ptr<Impl> impl = PlanningImpl(options);
  torch::NoGradGuard no_grad;
  int l = 0;
  for (const auto& module : impl->actor->children()) {
    auto* linear = module->as<torch::nn::Linear>();
    if (linear == nullptr) continue;  // ReLU
    if (l >= weights.layers_size() ||
        weights.layers(l).weight_size() != linear->weight.numel() ||
        weights.layers(l).bias_size() != linear->bias.numel() ||
        weights.layers(l).inputs() != linear->weight.size(1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the InSS actor's layer ", l,
                       " does not have the shape its .pbtxt describes (",
                       Shape(options), ")"));
    }
    const InssActorWeights::Layer& layer = weights.layers(l++);
    linear->weight.copy_(
        torch::from_blob(const_cast<float*>(layer.weight().data()),
                         linear->weight.sizes(), torch::kFloat));
    linear->bias.copy_(torch::from_blob(const_cast<float*>(layer.bias().data()),
                                        linear->bias.sizes(), torch::kFloat));
  }
  if (l != weights.layers_size()) {
    return absl::InvalidArgumentError(absl::StrCat("the InSS actor has ",
                                                   weights.layers_size(),
                                                   " layers, the network ", l));
  }
  impl->actor->eval();
  return std::unique_ptr<SacDiscreteAgent>(
      new SacDiscreteAgent(std::move(impl)));
}

std::vector<float> SacDiscreteAgent::Probabilities(
    const std::vector<float>& state) const {
  torch::InferenceMode guard;
  const SacOptions& o = impl_->o;
  const torch::Tensor x = impl_->State(state);
  auto [gpu, level] = Split(impl_->actor->forward(x), x, o);
  auto probs = torch::cat({torch::softmax(gpu, -1).reshape({-1}),
                           torch::softmax(level, -1).reshape({-1})})
                   .contiguous();
  return std::vector<float>(probs.data_ptr<float>(),
                            probs.data_ptr<float>() + probs.numel());
}

std::vector<int> SacDiscreteAgent::Act(const std::vector<float>& state,
                                       bool sample) {
  torch::NoGradGuard no_grad;
  const SacOptions& o = impl_->o;
  const torch::Tensor x = impl_->State(state);
  auto [gpu, level] = Split(impl_->actor->forward(x), x, o);
  auto pick = [&](const torch::Tensor& logits) {
    auto p = torch::softmax(logits[0], -1);  // [I, n]
    return sample ? torch::multinomial(p, 1).reshape({-1})
                  : p.argmax(-1).reshape({-1});
  };
  auto a = torch::cat({pick(gpu), pick(level)}).contiguous();
  std::vector<int> out(a.numel());
  for (int64_t i = 0; i < a.numel(); ++i) out[i] = a[i].item<int64_t>();
  return out;
}

double SacDiscreteAgent::Imitate(const std::vector<std::vector<float>>& states,
                                 const std::vector<std::vector<int>>& actions) {
  Impl& m = *impl_;
  const SacOptions& o = m.o;
  ABSL_RAW_CHECK(m.actor_opt, "Imitate on an actor loaded for planning");
  ABSL_RAW_CHECK(states.size() == actions.size() && !states.empty(),
                 "Imitate needs one action per state");
  const int64_t b = static_cast<int64_t>(states.size());
  torch::Tensor s = torch::empty({b, o.state_size});
  torch::Tensor a = torch::empty({b, 2 * o.slots}, torch::kLong);
  for (int64_t i = 0; i < b; ++i) {
    ABSL_RAW_CHECK(static_cast<int>(states[i].size()) == o.state_size &&
                       static_cast<int>(actions[i].size()) == 2 * o.slots,
                   "Imitate: a state or action of the wrong size");
    s[i].copy_(m.State(states[i])[0]);
    std::vector<int64_t> row(actions[i].begin(), actions[i].end());
    a[i].copy_(torch::tensor(row, torch::kLong));
  }
  auto [lg, ll] = Split(m.actor->forward(s), s, o);
  auto nll = [](const torch::Tensor& logits, const torch::Tensor& target) {
    auto trained = target >= 0;  // [B, I]
    auto picked = torch::log_softmax(logits, -1)
                      .gather(2, target.clamp_min(0).unsqueeze(2))
                      .squeeze(2);
    return std::make_pair(-(picked * trained).sum(), trained.sum());
  };
  auto [loss_g, count_g] = nll(lg, a.narrow(1, 0, o.slots));
  auto [loss_l, count_l] = nll(ll, a.narrow(1, o.slots, o.slots));
  auto loss = (loss_g + loss_l) / (count_g + count_l).clamp_min(1);
  m.actor_opt->zero_grad();
  loss.backward();
  m.actor_opt->step();
  return loss.item<double>();
}

void SacDiscreteAgent::Remember(const std::vector<float>& state,
                                const std::vector<int>& action, double reward,
                                const std::vector<float>& next_state) {
  Impl& m = *impl_;
  ABSL_RAW_CHECK(m.q1, "Remember on an actor loaded for planning");
  torch::NoGradGuard no_grad;
  m.states[m.next].copy_(m.State(state)[0]);
  m.next_states[m.next].copy_(m.State(next_state)[0]);
  std::vector<int64_t> a(action.begin(), action.end());
  m.actions[m.next].copy_(torch::tensor(a, torch::kLong));
  m.rewards[m.next] = reward;
  m.next = (m.next + 1) % m.o.replay_size;
  m.count = std::min(m.count + 1, m.o.replay_size);
}

std::optional<SacDiscreteAgent::UpdateStats> SacDiscreteAgent::Update() {
  Impl& m = *impl_;
  const SacOptions& o = m.o;
  if (!m.q1 || m.count < o.minibatch_size) return std::nullopt;
  auto idx = torch::randint(m.count, {o.minibatch_size}, torch::kLong);
  auto s = m.states.index_select(0, idx);
  auto s2 = m.next_states.index_select(0, idx);
  auto a = m.actions.index_select(0, idx);               // [B, 2I]
  auto r = m.rewards.index_select(0, idx).unsqueeze(1);  // [B, 1]
  auto a_gpu = a.narrow(1, 0, o.slots).unsqueeze(2);
  auto a_level = a.narrow(1, o.slots, o.slots).unsqueeze(2);
  auto temperature = m.log_temperature.exp().detach();
  auto t_gpu = temperature.narrow(0, 0, o.slots).unsqueeze(0).unsqueeze(2);
  auto t_level =
      temperature.narrow(0, o.slots, o.slots).unsqueeze(0).unsqueeze(2);

  // Soft targets per head: r + gamma pi(s')^T [min Q'(s') - tau log pi(s')].
  torch::Tensor y_gpu, y_level;
  {
    torch::NoGradGuard no_grad;
    auto [lg, ll] = Split(m.actor->forward(s2), s2, o);
    auto [q1g, q1l] = Split(m.q1_target->forward(s2), s2, o);
    auto [q2g, q2l] = Split(m.q2_target->forward(s2), s2, o);
    auto value = [](const torch::Tensor& logits, const torch::Tensor& qa,
                    const torch::Tensor& qb, const torch::Tensor& t) {
      auto logp = torch::log_softmax(logits, -1);
      return (logp.exp() * (torch::min(qa, qb) - t * logp)).sum(-1);  // [B,I]
    };
    y_gpu = r + o.discount * value(lg, q1g, q2g, t_gpu);
    y_level = r + o.discount * value(ll, q1l, q2l, t_level);
  }
  auto [q1g, q1l] = Split(m.q1->forward(s), s, o);
  auto [q2g, q2l] = Split(m.q2->forward(s), s, o);
  auto td = [](const torch::Tensor& q, const torch::Tensor& act,
               const torch::Tensor& y) {
    return 0.5 * (q.gather(2, act).squeeze(2) - y).pow(2).mean();
  };
  auto q_loss = td(q1g, a_gpu, y_gpu) + td(q2g, a_gpu, y_gpu) +
                td(q1l, a_level, y_level) + td(q2l, a_level, y_level);
  m.q_opt->zero_grad();
  q_loss.backward();
  m.q_opt->step();

  // Actor: pi^T (tau log pi - min Q), per head.
  auto [lg, ll] = Split(m.actor->forward(s), s, o);
  torch::Tensor min_g, min_l;
  {
    torch::NoGradGuard no_grad;
    auto [a1g, a1l] = Split(m.q1->forward(s), s, o);
    auto [a2g, a2l] = Split(m.q2->forward(s), s, o);
    min_g = torch::min(a1g, a2g);
    min_l = torch::min(a1l, a2l);
  }
  auto logp_g = torch::log_softmax(lg, -1);
  auto logp_l = torch::log_softmax(ll, -1);
  auto p_g = logp_g.exp();
  auto p_l = logp_l.exp();
  auto policy_loss = (p_g * (t_gpu * logp_g - min_g)).sum(-1).mean() +
                     (p_l * (t_level * logp_l - min_l)).sum(-1).mean();
  m.actor_opt->zero_grad();
  policy_loss.backward();
  m.actor_opt->step();

  // Temperatures: J = log tau (H - target), per head; a device head's
  // target is the ratio times log(devices the state has).
  auto entropy_g = -(p_g * logp_g).sum(-1);  // [B, I]
  auto entropy_l = -(p_l * logp_l).sum(-1);
  auto devices = DevicesPresent(s, o).sum(1).to(torch::kFloat);  // [B]
  auto target_g = o.target_entropy_ratio * devices.log().unsqueeze(1);
  auto entropy = torch::cat({entropy_g.mean(0), entropy_l.mean(0)}).detach();
  auto gap = torch::cat({(entropy_g - target_g).mean(0),
                         entropy_l.mean(0) - m.level_target_entropy})
                 .detach();  // [2I]
  auto temperature_loss = (m.log_temperature * gap).mean();
  m.temperature_opt->zero_grad();
  temperature_loss.backward();
  m.temperature_opt->step();

  {
    torch::NoGradGuard no_grad;
    auto soft = [&](torch::nn::Sequential& target, torch::nn::Sequential& net) {
      auto t = target->parameters();
      auto n = net->parameters();
      for (size_t i = 0; i < t.size(); ++i) {
        t[i].mul_(1 - o.target_smoothing).add_(n[i], o.target_smoothing);
      }
    };
    soft(m.q1_target, m.q1);
    soft(m.q2_target, m.q2);
  }
  UpdateStats stats;
  stats.q_loss = q_loss.item<double>();
  stats.policy_loss = policy_loss.item<double>();
  stats.mean_temperature = m.log_temperature.exp().mean().item<double>();
  stats.mean_entropy = entropy.mean().item<double>();
  return stats;
}

namespace {

void WriteModule(torch::serialize::OutputArchive& archive,
                 const std::string& key, const torch::nn::Sequential& m) {
  torch::serialize::OutputArchive sub;
  m->save(sub);
  archive.write(key, sub);
}

void ReadModule(torch::serialize::InputArchive& archive, const std::string& key,
                torch::nn::Sequential& m) {
  torch::serialize::InputArchive sub;
  archive.read(key, sub);
  m->load(sub);
}

template <typename Optimizer>
void WriteOptimizer(torch::serialize::OutputArchive& archive,
                    const std::string& key, const Optimizer& opt) {
  torch::serialize::OutputArchive sub;
  opt.save(sub);
  archive.write(key, sub);
}

template <typename Optimizer>
void ReadOptimizer(torch::serialize::InputArchive& archive,
                   const std::string& key, Optimizer& opt) {
  torch::serialize::InputArchive sub;
  archive.read(key, sub);
  opt.load(sub);
}

}  // namespace

absl::Status SacDiscreteAgent::SaveTraining(const std::string& path) const {
  const Impl& m = *impl_;
  if (!m.q1) {
    return absl::FailedPreconditionError(
        "an actor loaded for planning has no training state");
  }
  try {
    torch::serialize::OutputArchive archive;
    WriteModule(archive, "actor", m.actor);
    WriteModule(archive, "q1", m.q1);
    WriteModule(archive, "q2", m.q2);
    WriteModule(archive, "q1_target", m.q1_target);
    WriteModule(archive, "q2_target", m.q2_target);
    archive.write("log_temperature", m.log_temperature, /*is_buffer=*/true);
    WriteOptimizer(archive, "actor_opt", *m.actor_opt);
    WriteOptimizer(archive, "q_opt", *m.q_opt);
    WriteOptimizer(archive, "temperature_opt", *m.temperature_opt);
    archive.write("states", m.states, true);
    archive.write("next_states", m.next_states, true);
    archive.write("actions", m.actions, true);
    archive.write("rewards", m.rewards, true);
    archive.write("ring",
                  torch::tensor({static_cast<int64_t>(m.count),
                                 static_cast<int64_t>(m.next)}),
                  true);
    archive.write("torch_rng", at::detail::getDefaultCPUGenerator().get_state(),
                  true);
    archive.save_to(path);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(
        "cannot write the InSS training state to '", path, "': ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status SacDiscreteAgent::LoadTraining(const std::string& path) {
  Impl& m = *impl_;
  if (!m.q1) {
    return absl::FailedPreconditionError(
        "an actor loaded for planning cannot resume training");
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    ReadModule(archive, "actor", m.actor);
    ReadModule(archive, "q1", m.q1);
    ReadModule(archive, "q2", m.q2);
    ReadModule(archive, "q1_target", m.q1_target);
    ReadModule(archive, "q2_target", m.q2_target);
    torch::Tensor t;
    archive.read("log_temperature", t, true);
    {
      torch::NoGradGuard no_grad;
      m.log_temperature.copy_(t);
    }
    ReadOptimizer(archive, "actor_opt", *m.actor_opt);
    ReadOptimizer(archive, "q_opt", *m.q_opt);
    ReadOptimizer(archive, "temperature_opt", *m.temperature_opt);
    torch::Tensor states, next_states, actions, rewards, ring, rng;
    archive.read("states", states, true);
    archive.read("next_states", next_states, true);
    archive.read("actions", actions, true);
    archive.read("rewards", rewards, true);
    archive.read("ring", ring, true);
    archive.read("torch_rng", rng, true);
    if (states.sizes() != m.states.sizes() ||
        actions.sizes() != m.actions.sizes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "' holds a replay of another shape (",
                       states.size(0), " x ", states.size(1), "; this agent ",
                       m.states.size(0), " x ", m.states.size(1), ")"));
    }
    m.states = states;
    m.next_states = next_states;
    m.actions = actions;
    m.rewards = rewards;
    m.count = static_cast<int>(ring[0].item<int64_t>());
    m.next = static_cast<int>(ring[1].item<int64_t>());
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    generator.set_state(rng);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot resume InSS training from '", path, "': ", e.what()));
  }
  return absl::OkStatus();
}

int SacDiscreteAgent::replay_count() const { return impl_->count; }

std::vector<float> SacDiscreteAgent::ReplayState(int index) const {
  auto row = impl_->states[index].contiguous();
  return std::vector<float>(row.data_ptr<float>(),
                            row.data_ptr<float>() + row.numel());
}

InssActorWeights SacDiscreteAgent::ActorWeights() const {
  torch::NoGradGuard no_grad;
  InssActorWeights weights;
  for (const auto& module : impl_->actor->children()) {
    auto* linear = module->as<torch::nn::Linear>();
    if (linear == nullptr) continue;  // ReLU
    const torch::Tensor w =
        linear->weight.detach().contiguous().to(torch::kFloat);
    const torch::Tensor b =
        linear->bias.detach().contiguous().to(torch::kFloat);
    InssActorWeights::Layer* layer = weights.add_layers();
    layer->set_inputs(static_cast<int>(w.size(1)));
    layer->set_outputs(static_cast<int>(w.size(0)));
    layer->mutable_weight()->Add(w.data_ptr<float>(),
                                 w.data_ptr<float>() + w.numel());
    layer->mutable_bias()->Add(b.data_ptr<float>(),
                               b.data_ptr<float>() + b.numel());
  }
  return weights;
}

absl::Status SacDiscreteAgent::SaveActorWeights(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !ActorWeights().SerializeToOstream(&out) || !out.flush()) {
    return absl::InternalError(
        absl::StrCat("cannot write the InSS actor's weights to '", path, "'"));
  }
  return absl::OkStatus();
}

absl::Status SacDiscreteAgent::SaveActor(const std::string& path) const {
  try {
    torch::save(impl_->actor, path);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("cannot write the InSS actor to '",
                                            path, "': ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace tessera
