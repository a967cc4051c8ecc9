#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"
#include "learner/sac_discrete_agent.h"
#include "scheduler/inss_cluster.h"
#include "scheduler/inss_environment.h"
#include "scheduler/inss_placement_search.h"
#include "scheduler/inss_workload_sampler.h"

namespace tessera {

// Trains InSS's actor network by imitation of a search (a Tessera
// addition, tessera_inss_train --teacher=search; the paper trains it with
// SAC-Discrete on Eq. 3, InssTrainer). The states are the training
// environment's: workloads the sampler draws (never a held-out one), the
// episode's SLO factor and rates, and, after the first state of an
// episode, the provisioning in force. For each, InssPlacementSearch finds
// the action on which BDA batches the most growth of the rates; the actor
// learns those actions with a cross-entropy loss
// (SacDiscreteAgent::Imitate). Each epoch ends with a validation on states
// drawn with another seed: the room of the actor's argmax action over the
// teacher's (geometric mean, and the share at >= 0.95). Writes a CSV row
// per epoch, the actor of the best validation ("<stem>-best") and the last
// ("<stem>"), each with its InssCheckpointInfo.
struct InssImitationOptions {
  int samples = 20000;
  int validation_samples = 400;
  // States per drawn workload: its first, then one every `steps_between`
  // environment steps (the rates drift; the teacher's provisioning is in
  // force).
  int samples_per_episode = 4;
  int steps_between = 10;
  // Per first state of an episode, copies with every rate times m, m
  // log-uniform such that 1 to 8 times the rates fit (the teacher's room
  // over m): the best placement does not change with m (room scales as
  // 1 / m), so the copies show the actor the same answer at the loads a
  // search for the SLO-preserved maximum asks it about.
  int scaled_copies = 0;
  int epochs = 40;
  int minibatch = 100;
  InssSearchOptions search;
  int threads = 2;  // generating the states
  uint64_t seed = 1;
  std::string out_stem;
  std::string csv_path;  // empty: none
  std::FILE* progress = nullptr;
};

struct InssImitationEpoch {
  int epoch = 0;
  double loss = 0;        // mean cross-entropy per head over the epoch
  double room_ratio = 0;  // geometric mean, actor / teacher
  double at_95 = 0;       // share of validation states at >= 0.95
  // The same geometric mean on as many training states: how well the
  // actor fits what it was shown.
  double train_room_ratio = 0;
  double seconds = 0;  // since the start, generation included
};

class InssImitationTrainer {
 public:
  // One state and what the teacher chose there.
  struct Sample {
    std::vector<float> state;
    // I device choices then I 0-based level indices; -1 for slots
    // without traffic.
    std::vector<int> action;
    InssCluster cluster;
    std::vector<double> rates_rps;
    double teacher_room = 0;
    // The first state of its episode: no provisioning in force, no
    // backlog.
    bool fresh = false;
  };

  InssImitationTrainer(const InssWorkloadSampler* sampler,
                       InssEnvironmentOptions env_options,
                       SacDiscreteAgent* agent, InssCheckpointInfo info,
                       InssImitationOptions options)
      : sampler_(sampler),
        env_options_(std::move(env_options)),
        agent_(agent),
        info_(std::move(info)),
        options_(std::move(options)) {}

  absl::StatusOr<std::vector<InssImitationEpoch>> Run();

  // `count` states from environments seeded `seed`, `seed` + 1, ... (one
  // per thread), with the teacher's actions.
  std::vector<Sample> Generate(int count, uint64_t seed, int threads) const;
  // The actor's argmax action made feasible (FromAction) and its room
  // over the teacher's, per sample.
  std::vector<double> RoomRatios(const std::vector<Sample>& samples) const;
  // Appends options_.scaled_copies scaled copies of each fresh sample
  // (InssImitationOptions::scaled_copies).
  void AddScaledCopies(std::vector<Sample>* samples) const;

 private:
  std::vector<Sample> GenerateOne(int count, uint64_t seed,
                                  std::atomic<int>* done) const;
  absl::Status Save(const std::string& stem, int epochs) const;

  const InssWorkloadSampler* sampler_;
  InssEnvironmentOptions env_options_;
  SacDiscreteAgent* agent_;
  InssCheckpointInfo info_;
  InssImitationOptions options_;
};

}  // namespace tessera
