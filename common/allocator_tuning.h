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

// Makes every thread allocate from glibc's main arena. malloc_trim gives
// back a thread arena's free chunks but never the free space at its top,
// and with the trim threshold above that space is never shrunk on free
// either, so a burst served by a thread arena stays resident for good (the
// frontend 30 s after a 3x overload over streams: 11 MiB over idle in
// anonymous memory after a forced trim; one thread arena kept a 37 MiB
// top). Call at the start of main, before any thread allocates; a thread
// that already has an arena keeps it.
void KeepOneHeapArena();

// glibc reads GLIBC_TUNABLES only when a process starts. Restarts this one
// (execv of /proc/self/exe: same pid, arguments and environment) with
// `tunable` ("name=value") added to GLIBC_TUNABLES, unless the variable
// already names the tunable (the operator's own choice, or this process
// after its restart). The restarted process takes back its command's name
// (an exec of /proc/self/exe would show it as "exe" in ps and pgrep).
// Returns if the exec fails, with a warning. Call first thing in main,
// before any thread starts.
void RestartWithGlibcTunable(char** argv, const char* tunable);

// The frontend's tunable: no per-thread cache of freed small blocks. Each
// thread keeps up to 7 blocks of each size in its cache, for as long as it
// lives, so after a burst the caches of threads gRPC started hold blocks
// scattered over the heap, and each pins its page. Measured with one arena,
// a minute after 3x unary overload (bench/frontend_overload.sh): anonymous
// memory over idle +3.7 to +4.3 MiB with glibc's 7 per size, +1.8 to +2.1
// with 1, +0.9 with 0; frontend CPU per call (uncapped, 4,000 unary or
// 8,000 stream calls/s, three alternating runs) 103 and 51.6 us with 0
// against 103 and 51.9 us with 7. Every small allocation then takes the
// arena's lock: where many threads allocate at once (--event_loops on many
// cores), GLIBC_TUNABLES=glibc.malloc.tcache_count=7 restores the caches.
inline constexpr char kFrontendGlibcTunable[] = "glibc.malloc.tcache_count=0";

constexpr int kMmapThresholdBytes = 64 << 20;
constexpr int kTrimThresholdBytes = 256 << 20;

}  // namespace tessera
