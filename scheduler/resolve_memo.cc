#include "scheduler/resolve_memo.h"

namespace tessera {

bool ResolveMemo::Resolve(const InterferenceModel* interference,
                          GpuLayout* layout) {
  std::vector<SlotKey> slots;
  for (const GpuLayout::Slot& slot : layout->slots()) {
    // Resolve starts from the slots' batches: only unsolved layouts are
    // alike by their slots alone.
    if (!slot.schedule.batches.empty()) return layout->Resolve(interference);
    std::vector<SliceKey> slices;
    for (const Slice& s : slot.slices) {
      slices.emplace_back(s.demand, s.rate_rps);
    }
    slots.emplace_back(slot.share_percent, std::move(slices));
  }
  Key key(interference, layout->occupancy_weighted_interference(),
          layout->interference_headroom(), std::move(slots));
  auto it = memo_.find(key);
  if (it != memo_.end()) {
    ++hits_;
    if (!it->second) return false;
    for (size_t i = 0; i < layout->slots().size(); ++i) {
      layout->slots()[i].schedule = (*it->second)[i];
    }
    return true;
  }
  ++misses_;
  // A failure keeps no schedule (Resolve may have solved some slots).
  const bool ok = layout->Resolve(interference);
  std::optional<std::vector<GpuletSchedule>> answer;
  if (ok) {
    answer.emplace();
    for (const GpuLayout::Slot& slot : layout->slots()) {
      answer->push_back(slot.schedule);
    }
  }
  memo_.emplace(std::move(key), std::move(answer));
  return ok;
}

}  // namespace tessera
