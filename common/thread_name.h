#pragma once

#include <string>

namespace tessera {

// Names the calling thread (cut to the kernel's 15 characters) for /proc,
// perf, gdb and the tests that look threads up by name.
void NameThisThread(const std::string& name);

}  // namespace tessera
