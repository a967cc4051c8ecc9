#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace tessera {

// One headline claim of a paper against its reproduction.
struct ReproductionClaim {
  std::string claim, paper, ours, verdict, reason;
};

// "holds" when the paper's number is met (within the caller's tolerance),
// "holds in direction" when the paper's system is at least ahead of the
// baseline, else "does not hold".
std::string ClaimVerdict(bool holds, bool in_direction);

// The claims as a table: claim | paper | Tessera | verdict | measured
// reason.
void PrintClaims(const std::vector<ReproductionClaim>& claims, std::FILE* out);

}  // namespace tessera
