#include "perfmodel/inss_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera {

double InssModel::WorstTaskMs(int batch, double rate_rps, double exec_ms,
                              double backlog) {
  const double fill_ms = rate_rps > 0 ? 1000.0 * batch / rate_rps
                                      : std::numeric_limits<double>::infinity();
  const double in_flight_ms = std::max(0.0, exec_ms - fill_ms);
  const double w = std::max(0.0, backlog) + 1;
  if (w >= batch) {
    return in_flight_ms + std::ceil(w / batch) * exec_ms;
  }
  const double wait_ms = rate_rps > 0 ? 1000.0 * (batch - w) / rate_rps
                                      : std::numeric_limits<double>::infinity();
  return std::max(in_flight_ms, wait_ms) + exec_ms;
}

}  // namespace tessera
