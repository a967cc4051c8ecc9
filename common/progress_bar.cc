#include "common/progress_bar.h"

#include <algorithm>

namespace tessera {

std::string ProgressBar(int done, int total, int width) {
  const int filled =
      total > 0 ? std::clamp(width * done / total, 0, width) : width;
  return "[" + std::string(filled, '#') + std::string(width - filled, ' ') +
         "]";
}

}  // namespace tessera
