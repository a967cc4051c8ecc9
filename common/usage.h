#pragma once

#include "absl/strings/string_view.h"

namespace tessera {

// Sets a binary's --help text and makes --help list the flags its own
// *_main.cc (or *_bench.cc) defines. Abseil's default lists the flags of a
// file named after the program, which ours are not, so --help printed "No
// flags matched". Call first thing in main(), before parsing.
void SetUsage(absl::string_view message);

}  // namespace tessera
