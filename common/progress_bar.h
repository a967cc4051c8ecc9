#pragma once

#include <string>

namespace tessera {

// "[#####     ]": `done` of `total` as a bar of `width` characters between
// brackets, for progress lines on a terminal (full when `total` is 0).
std::string ProgressBar(int done, int total, int width = 30);

}  // namespace tessera
