#include "learner/torch_inss_actor.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/inss_environment.h"
#include "scheduler/mlp_inss_actor.h"

namespace tessera {

SacOptions TorchInssActor::NetworkOptions(const InssCheckpointInfo& info) {
  SacOptions o;
  o.state_size = info.state_size();
  o.slots = info.max_models();
  o.gpus = info.gpus();
  o.device_offset = InssEnvironment::kSlotFeatures * info.max_models();
  o.device_stride = InssEnvironment::kDeviceFeatures;
  o.levels = info.share_units();
  o.hidden1_size = info.hidden1_size();
  o.hidden2_size = info.hidden2_size();
  return o;
}

absl::StatusOr<std::shared_ptr<const TorchInssActor>> TorchInssActor::Load(
    const std::string& path) {
  const std::string stem = MlpInssActor::Stem(path);
  ASSIGN_OR_RETURN(InssCheckpointInfo info, MlpInssActor::ReadInfo(stem));
  // The planning format ("<stem>.actor.binpb") when there is one, else
  // the LibTorch archive.
  std::unique_ptr<SacDiscreteAgent> agent;
  if (std::filesystem::exists(stem + ".actor.binpb")) {
    ASSIGN_OR_RETURN(InssActorWeights weights, MlpInssActor::ReadWeights(stem));
    ASSIGN_OR_RETURN(
        agent, SacDiscreteAgent::LoadActor(NetworkOptions(info), weights));
  } else {
    ASSIGN_OR_RETURN(
        agent, SacDiscreteAgent::LoadActor(NetworkOptions(info), stem + ".pt"));
  }
  return std::shared_ptr<const TorchInssActor>(
      new TorchInssActor(std::move(info), std::move(agent)));
}

absl::StatusOr<std::shared_ptr<const TorchInssActor>> TorchInssActor::Untrained(
    const InssCheckpointInfo& info, uint64_t seed) {
  SacOptions o = NetworkOptions(info);
  o.seed = seed;
  o.replay_size = o.minibatch_size;
  ASSIGN_OR_RETURN(auto agent, SacDiscreteAgent::Create(o));
  return std::shared_ptr<const TorchInssActor>(
      new TorchInssActor(info, std::move(agent)));
}

absl::StatusOr<std::vector<float>> TorchInssActor::Probabilities(
    const std::vector<float>& state) const {
  if (static_cast<int>(state.size()) != info_.state_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("InSS state has ", state.size(), " values, the actor ",
                     info_.state_size()));
  }
  return agent_->Probabilities(state);
}

}  // namespace tessera
