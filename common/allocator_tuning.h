#pragma once

namespace tessera {

// Keeps large buffers (tensor payloads of a few hundred KB to tens of MB)
// in the heap between requests instead of glibc's default per-allocation
// mmap/munmap and heap trimming, which make a request fault in and zero
// its pages again (perf showed page faults as the frontend's top cost on
// 600 KB requests). Measured with serving_overhead_bench: it halved the
// one-hop echo of 600 KB (~1.3 ms to ~0.65 ms p50); in the serving
// processes (together with kStreamLookaheadBytes), resnet18's
// overhead went from 3059 to 2286 us, means of three alternating runs
// (docs/benchmarks.md). A process keeps up to kTrimThresholdBytes of freed
// heap. Call once at the start of main; the environment (GLIBC_TUNABLES /
// MALLOC_*_) is not consulted after it.
void TuneAllocatorForLargeMessages();

constexpr int kMmapThresholdBytes = 64 << 20;
constexpr int kTrimThresholdBytes = 256 << 20;

}  // namespace tessera
