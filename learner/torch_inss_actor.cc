#include "learner/torch_inss_actor.h"

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "scheduler/inss_environment.h"

namespace tessera {

std::string TorchInssActor::Stem(const std::string& path) {
  for (const char* ext : {".actor.binpb", ".pt", ".pbtxt"}) {
    if (absl::EndsWith(path, ext)) {
      return path.substr(0, path.size() - std::string(ext).size());
    }
  }
  return path;
}

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
  const std::string stem = Stem(path);
  InssCheckpointInfo info;
  if (auto s = ReadTextProto(stem + ".pbtxt", &info); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("InSS checkpoint info: ", s.message()));
  }
  const int expected =
      InssEnvironment::StateSize(info.max_models(), info.gpus());
  if (info.state_size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(stem, ".pbtxt: state_size ", info.state_size(), " but ",
                     info.max_models(), " model slots and ", info.gpus(),
                     " gpus make ", expected));
  }
  // The planning format ("<stem>.actor.binpb") when there is one, else
  // the LibTorch archive.
  std::unique_ptr<SacDiscreteAgent> agent;
  if (std::ifstream in(stem + ".actor.binpb", std::ios::binary); in) {
    InssActorWeights weights;
    if (!weights.ParseFromIstream(&in)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot parse '", stem, ".actor.binpb'"));
    }
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
