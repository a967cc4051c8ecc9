#include "bench/overhead_probes.h"

#include <cctype>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/cpu_affinity.h"
#include "common/percentile.h"
#include "grpcpp/grpcpp.h"
#include "tests/integration/local_cluster.h"

namespace tessera {

bool Call(inference::GRPCInferenceService::Stub* stub,
          const inference::ModelInferRequest& request, double* us,
          inference::ModelInferResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  const absl::Time start = absl::Now();
  grpc::Status s = stub->ModelInfer(&context, request, response);
  *us = absl::ToDoubleMicroseconds(absl::Now() - start);
  if (!s.ok()) {
    std::fprintf(stderr, "request failed: %s\n", s.error_message().c_str());
  }
  return s.ok();
}

namespace {

// A thread's name without its trailing number ("fe-loop-0" -> "fe-loop").
std::string ThreadKind(std::string name) {
  while (!name.empty() &&
         std::isdigit(static_cast<unsigned char>(name.back()))) {
    name.pop_back();
  }
  while (!name.empty() && (name.back() == '-' || name.back() == '_')) {
    name.pop_back();
  }
  return name.empty() ? "(unnamed)" : name;
}

}  // namespace

ProcessCounters PerRequest(const ProcessCounters& now,
                           const ProcessCounters& before, int n) {
  const double per = 1.0 / std::max(1, n);
  ProcessCounters d;
  d.cpu_us = (now.cpu_us - before.cpu_us) * per;
  d.switches = (now.switches - before.switches) * per;
  for (const auto& [kind, us] : now.cpu_us_by_thread) {
    auto it = before.cpu_us_by_thread.find(kind);
    const double was = it == before.cpu_us_by_thread.end() ? 0 : it->second;
    if (us - was > 0) d.cpu_us_by_thread[kind] = (us - was) * per;
  }
  return d;
}

ProcessCounters ReadCounters(pid_t pid) {
  ProcessCounters c;
  for (const auto& [tid, name] : testing::ThreadNames(pid)) {
    const testing::ThreadCounters t = testing::ReadThreadCounters(pid, tid);
    if (t.on_cpu_ns > 0) {
      c.cpu_us += t.on_cpu_ns / 1e3;
      c.cpu_us_by_thread[ThreadKind(name)] += t.on_cpu_ns / 1e3;
    }
    if (t.voluntary_switches > 0) c.switches += t.voluntary_switches;
    if (t.involuntary_switches > 0) c.switches += t.involuntary_switches;
  }
  return c;
}

Samples Difference(const Samples& a, const Samples& b) {
  Samples d;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d.push_back(a[i] - b[i]);
  }
  return d;
}

double WakeRoundTripUs(int client_core, int server_core) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds) != 0) return -1;
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    close(fds[0]);
    (void)SetCpuAffinity({server_core});
    char buffer[256];
    ssize_t n;
    while ((n = recv(fds[1], buffer, sizeof(buffer), 0)) > 0) {
      if (send(fds[1], buffer, n, 0) != n) break;
    }
    _exit(0);
  }
  close(fds[1]);
  auto mine = GetCpuAffinity(0);
  (void)SetCpuAffinity({client_core});
  char buffer[256] = {};
  Samples rtt;
  for (int i = 0; i < 550; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
    const absl::Time start = absl::Now();
    if (send(fds[0], buffer, 100, 0) != 100 ||
        recv(fds[0], buffer, sizeof(buffer), 0) <= 0) {
      break;
    }
    if (i >= 50) rtt.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  close(fds[0]);
  waitpid(child, nullptr, 0);
  if (mine.ok()) (void)SetCpuAffinity(*mine);
  return rtt.empty() ? -1 : Percentile(rtt, .5);
}

absl::StatusOr<int> ClientCore(const std::string& flag,
                               const std::vector<int>& cores) {
  if (flag == "none") return -1;
  if (flag == "last") return cores.size() < 2 ? -1 : cores.back();
  int core = -1;
  if (!absl::SimpleAtoi(flag, &core)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", flag, "' is not a core number, \"last\" or \"none\""));
  }
  if (std::find(cores.begin(), cores.end(), core) == cores.end() ||
      cores.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("core ", core, " is not one of this process's cores (",
                     FormatCoreList(cores),
                     ") or leaves no other core for the servers; \"none\" runs "
                     "unpinned"));
  }
  return core;
}

}  // namespace tessera
