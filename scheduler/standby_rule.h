#pragma once

#include <cstdint>

namespace tessera {

// iGniter's shadow processes, as the frontend and the simulator both apply
// them: a gpulet planned with a standby (GpuletPlan.standby_share_percent)
// moves to it for good once, over a window of at least
// kStandbyMinAnswered answered calls (checked about every second), more
// than 1 % of its calls missed their SLO.
inline constexpr int64_t kStandbyMinAnswered = 20;

inline bool ShouldSwitchToStandby(int64_t answered, int64_t late) {
  return answered >= kStandbyMinAnswered && late * 100 > answered;
}

}  // namespace tessera
