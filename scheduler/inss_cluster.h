#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"
#include "perfmodel/interference_model.h"
#include "perfmodel/latency_model.h"
#include "scheduler/queue_wait.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// One model slot of InSS's state and action. A padding slot has no name
// and no latency model.
struct InssModelSlot {
  std::string name;
  const LatencyModel* latency = nullptr;
  // What the actor sees of the model beside its rate and SLO (so that one
  // actor serves any instances of the models it was trained on):
  // L(8, 100 %) / (8 L(1, 100 %)), how much batching gains, and
  // L(1, 50 %) / L(1, 100 %), how much a half share slows it.
  double batch8_ratio = 1;
  double half_share_ratio = 1;
  // Planning headroom on every latency (PolicyOptions::latency_headroom).
  double latency_scale = 1;
  double slo_ms = 0;
  // Largest batch BDA may pick: min(32, config max, profiled max).
  int max_batch = 1;
  int64_t memory_bytes = 0;
  // H_i of the reward (Eq. 3): batch-1 throughput on a whole device.
  double reference_rps = 0;
  // Batch-1 latency on a whole device (ms), the SLO's natural unit.
  double base_latency_ms = 0;
  // Add the planning wait of batches (FixedBatchWaitMs) to Eq. 2
  // (PolicyOptions::queueing_check).
  bool queueing_check = true;
  // The tail of that wait (InssRules.queueing_tail).
  double queueing_tail = kQueueingTail;
  // Its burst bound (FixedBatchWaitMs' burst_tail; 0: off).
  double burst_tail = 0;
  // That wait from the bulk-service queue (SharedRules.bulk_queue_wait).
  bool bulk_queue_wait = false;
};

// What InSS plans over: the model slots and the devices, with the
// latency models built once. Value type (latency models shared); the
// training environment copies it and changes the SLOs per episode.
class InssCluster {
 public:
  // The snapshot's models with traffic, in name order, then padding up to
  // `info.max_models` slots; its devices, 1 to `info.gpus` of
  // `info.profile_key`. A snapshot beyond what the checkpoint covers (more
  // models with traffic or devices, another device kind, a model that is
  // no instance of `info.models`, an SLO outside 1/1.5 of the lowest to
  // 1.5 x the highest of `info.slo_factors` x batch-1 latency) is
  // FAILED_PRECONDITION naming the limit.
  static absl::StatusOr<InssCluster> FromSnapshot(
      const ClusterSnapshot& snapshot, const PolicyOptions& options,
      const InssCheckpointInfo& info);
  // An info covering exactly `snapshot` (its models with traffic, its
  // devices, 10 % units): for the placements that plan with BDA but no
  // actor (inss-rr, bda-gpulet, the random placements of the studies).
  static InssCheckpointInfo CoveringInfo(const ClusterSnapshot& snapshot);

  const std::vector<InssModelSlot>& slots() const { return slots_; }
  std::vector<InssModelSlot>& mutable_slots() { return slots_; }
  // Devices of this cluster (K) and the most the actor covers.
  int gpus() const { return static_cast<int>(devices_.size()); }
  int max_gpus() const { return max_gpus_; }
  const std::vector<DeviceSnapshot>& devices() const { return devices_; }
  // 0: unlimited.
  int64_t gpu_memory_bytes() const { return gpu_memory_bytes_; }
  double share_unit_percent() const { return share_unit_percent_; }
  int share_units() const { return share_units_; }
  const InterferenceModel* interference() const { return interference_; }
  // Observed rates (headroom included), by slot.
  const std::vector<double>& rates_rps() const { return rates_rps_; }

  // The largest batch whose latency was profiled at the largest profiled
  // share <= `share_percent` (0: none), capped by the slot's max_batch.
  int TrustedMaxBatch(int slot, double share_percent) const;
  // Solo latency with headroom.
  double SoloMs(int slot, int batch, double share_percent) const;

 private:
  // The latency models the slots point into: built here, or the fits'.
  std::shared_ptr<const std::map<std::string, LatencyModel>> models_;
  std::shared_ptr<const ProfileFits> fits_;
  std::vector<InssModelSlot> slots_;
  std::vector<DeviceSnapshot> devices_;
  int max_gpus_ = 0;
  int64_t gpu_memory_bytes_ = 0;
  double share_unit_percent_ = 10;
  int share_units_ = 10;
  const InterferenceModel* interference_ = nullptr;
  std::shared_ptr<const InterferenceModel> interference_owner_;
  std::vector<double> rates_rps_;
};

}  // namespace tessera
