#include "learner/sac_discrete_agent.h"

#include <torch/torch.h>

#include <cmath>
#include <exception>

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

// A [B, I (K + U)] output split into the device heads [B, I, K] and the
// share heads [B, I, U].
std::pair<torch::Tensor, torch::Tensor> Split(const torch::Tensor& out,
                                              const SacOptions& o) {
  const int64_t b = out.size(0);
  auto gpu = out.narrow(1, 0, o.slots * o.gpus).reshape({b, o.slots, o.gpus});
  auto level = out.narrow(1, o.slots * o.gpus, o.slots * o.levels)
                   .reshape({b, o.slots, o.levels});
  return {gpu, level};
}

absl::Status Validate(const SacOptions& o) {
  if (o.state_size <= 0 || o.slots <= 0 || o.gpus <= 0 || o.levels <= 0 ||
      o.hidden1_size <= 0 || o.hidden2_size <= 0 || o.minibatch_size <= 0 ||
      o.replay_size < o.minibatch_size) {
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
  torch::Tensor log_temperature;  // [2 I]: device heads, then share heads
  torch::Tensor target_entropy;   // [2 I]
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
    std::vector<float> target;
    for (int i = 0; i < o.slots; ++i) {
      target.push_back(o.target_entropy_ratio * std::log(o.gpus));
    }
    for (int i = 0; i < o.slots; ++i) {
      target.push_back(o.target_entropy_ratio * std::log(o.levels));
    }
    target_entropy = torch::tensor(target);
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

absl::StatusOr<std::unique_ptr<SacDiscreteAgent>> SacDiscreteAgent::LoadActor(
    const SacOptions& options, const std::string& path) {
  if (auto s = Validate(options); !s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  impl->o = options;
  impl->actor = Mlp(options);
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
          "': its layers do not have the shape its .pbtxt describes (state ",
          options.state_size, ", hidden ", options.hidden1_size, "/",
          options.hidden2_size, ", ", options.slots, " models, ", options.gpus,
          " devices, ", options.levels, " share units)"));
    }
  }
  impl->actor->eval();
  return std::unique_ptr<SacDiscreteAgent>(
      new SacDiscreteAgent(std::move(impl)));
}

std::vector<float> SacDiscreteAgent::Probabilities(
    const std::vector<float>& state) const {
  torch::InferenceMode guard;
  const SacOptions& o = impl_->o;
  auto [gpu, level] = Split(impl_->actor->forward(impl_->State(state)), o);
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
  auto [gpu, level] = Split(impl_->actor->forward(impl_->State(state)), o);
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
    auto [lg, ll] = Split(m.actor->forward(s2), o);
    auto [q1g, q1l] = Split(m.q1_target->forward(s2), o);
    auto [q2g, q2l] = Split(m.q2_target->forward(s2), o);
    auto value = [](const torch::Tensor& logits, const torch::Tensor& qa,
                    const torch::Tensor& qb, const torch::Tensor& t) {
      auto logp = torch::log_softmax(logits, -1);
      return (logp.exp() * (torch::min(qa, qb) - t * logp)).sum(-1);  // [B,I]
    };
    y_gpu = r + o.discount * value(lg, q1g, q2g, t_gpu);
    y_level = r + o.discount * value(ll, q1l, q2l, t_level);
  }
  auto [q1g, q1l] = Split(m.q1->forward(s), o);
  auto [q2g, q2l] = Split(m.q2->forward(s), o);
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
  auto [lg, ll] = Split(m.actor->forward(s), o);
  torch::Tensor min_g, min_l;
  {
    torch::NoGradGuard no_grad;
    auto [a1g, a1l] = Split(m.q1->forward(s), o);
    auto [a2g, a2l] = Split(m.q2->forward(s), o);
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

  // Temperatures: J = log tau (H - target), per head.
  auto entropy = torch::cat({-(p_g * logp_g).sum(-1).mean(0),
                             -(p_l * logp_l).sum(-1).mean(0)})
                     .detach();  // [2I]
  auto temperature_loss =
      (m.log_temperature * (entropy - m.target_entropy)).mean();
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
