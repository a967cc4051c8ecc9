#pragma once

#include <string>

namespace tessera {

// The id of the standby (shadow) proxy of gpulet `id`, which a plan asks
// for with `standby_share_percent`: the backend starts it under this id and
// the frontend routes to it while a share change is switched over.
inline std::string StandbyGpuletId(const std::string& id) {
  return id + "/standby";
}

}  // namespace tessera
