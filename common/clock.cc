#include "common/clock.h"

namespace tessera {

RealClock* RealClock::Get() {
  static RealClock* const clock = new RealClock();
  return clock;
}

}  // namespace tessera
