#include "sim/reproduction_claim.h"

namespace tessera {

std::string ClaimVerdict(bool holds, bool in_direction) {
  return holds          ? "holds"
         : in_direction ? "holds in direction"
                        : "does not hold";
}

void PrintClaims(const std::vector<ReproductionClaim>& claims, std::FILE* out) {
  std::fprintf(out, "\nclaim | paper | Tessera | verdict | measured reason\n");
  for (const auto& c : claims) {
    std::fprintf(out, "%s | %s | %s | %s | %s\n", c.claim.c_str(),
                 c.paper.c_str(), c.ours.c_str(), c.verdict.c_str(),
                 c.reason.c_str());
  }
  std::fflush(out);
}

}  // namespace tessera
