#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"
#include "perfmodel/interference_model.h"
#include "perfmodel/latency_model.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// One model slot of InSS's state and action (the checkpoint's order).
struct InssModelSlot {
  std::string name;
  const LatencyModel* latency = nullptr;
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
  // Its burst bound (FixedBatchWaitMs' burst_tail; 0: off).
  double burst_tail = 0;
};

// What InSS plans over: the model slots and the devices, with the
// latency models built once. Value type (latency models shared); the
// training environment copies it and changes the SLOs per episode.
class InssCluster {
 public:
  // Slots in `info.models` order; every model of the snapshot with
  // traffic must be one of them and the devices must be `info.gpus`
  // devices of `info.profile_key` (FAILED_PRECONDITION naming the
  // mismatch otherwise). Slots the snapshot lacks or that have no
  // traffic get rate 0 in rates_rps() and are not planned.
  static absl::StatusOr<InssCluster> FromSnapshot(
      const ClusterSnapshot& snapshot, const PolicyOptions& options,
      const InssCheckpointInfo& info);

  const std::vector<InssModelSlot>& slots() const { return slots_; }
  std::vector<InssModelSlot>& mutable_slots() { return slots_; }
  int gpus() const { return static_cast<int>(devices_.size()); }
  const std::vector<const DeviceSnapshot*>& devices() const { return devices_; }
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
  std::shared_ptr<const std::map<std::string, LatencyModel>> models_;
  std::vector<InssModelSlot> slots_;
  std::vector<const DeviceSnapshot*> devices_;
  int64_t gpu_memory_bytes_ = 0;
  double share_unit_percent_ = 10;
  int share_units_ = 10;
  const InterferenceModel* interference_ = nullptr;
  std::shared_ptr<const InterferenceModel> interference_owner_;
  std::vector<double> rates_rps_;
};

}  // namespace tessera
