#include "bench/overhead_report.h"

#include <cstdio>

#include "absl/strings/str_format.h"
#include "common/percentile.h"

namespace tessera {
namespace {

std::string P50P99(const Samples& x) {
  return absl::StrFormat("%6.0f / %6.0f", Percentile(x, .5),
                         Percentile(x, .99));
}

void PrintLatencyTable(const std::vector<std::string>& models,
                       const std::map<std::string, ModelOverhead>& results,
                       int iterations) {
  std::printf(
      "\nServing-path overhead at batch 1 (%d requests each, microseconds; "
      "p50 / p99)\n\n",
      iterations);
  std::printf(
      "%-10s %9s %15s %15s %15s %15s %15s %8s %8s %15s %8s %15s %8s %15s "
      "%8s\n",
      "model", "req bytes", "echo b2b", "echo alt", "end-to-end", "proxy exec",
      "overhead", "ovh/alt", "ovh/b2b", "in-proc exec", "exec/inp",
      "in-proc paced", "exec/pcd", "in-proc w/ echo", "exec/w-e");
  for (const auto& m : models) {
    const ModelOverhead& r = results.at(m);
    const Timed& e = r.e2e;
    const Samples& exec = e.params.at("tessera.exec_us");
    const Samples overhead = Difference(e.total, exec);
    const size_t bytes = r.request_bytes;
    const double ovh = Percentile(overhead, .5);
    std::printf(
        "%-10s %9zu %15s %15s %15s %15s %15s %8.2f %8.2f %15s %8.3f %15s "
        "%8.3f %15s %8.3f\n",
        m.c_str(), bytes, P50P99(r.floor_b2b).c_str(), P50P99(r.floor).c_str(),
        P50P99(e.total).c_str(), P50P99(exec).c_str(), P50P99(overhead).c_str(),
        ovh / Percentile(r.floor, .5), ovh / Percentile(r.floor_b2b, .5),
        P50P99(r.inproc).c_str(),
        Percentile(exec, .5) / Percentile(r.inproc, .5),
        P50P99(r.paced).c_str(), Percentile(exec, .5) / Percentile(r.paced, .5),
        P50P99(r.with_echo).c_str(),
        Percentile(exec, .5) / Percentile(r.with_echo, .5));
  }
  std::printf(
      "\necho b2b: echo calls back to back; echo alt: echo calls alternating "
      "with the end-to-end calls (the floor under the same conditions: "
      "processes idle between calls, caches cold).\nin-proc: the proxy's "
      "runner in this process on the proxy's cores, back to back; paced: "
      "idle between runs for the measured overhead; w/ echo: one echo call "
      "between runs (gRPC work on the machine's cores between runs, as "
      "between the proxy's requests).\n");
}

void PrintExecTable(const std::vector<std::string>& models,
                    const std::map<std::string, ModelOverhead>& results) {
  std::printf(
      "\nProxy exec against in-process, alternating request by request "
      "(an end-to-end call, then one in-process run on the proxy's cores; "
      "microseconds, p50 / p99)\n\n");
  std::printf("%-10s %15s %15s %10s %15s %10s %15s %10s %10s\n", "model",
              "proxy exec", "in-proc exec", "exec/inp", "in-proc copy",
              "copy/inp", "2nd proxy", "2nd/inp", "exec/2nd");
  for (const auto& m : models) {
    const ModelOverhead& r = results.at(m);
    const auto& x = r.exec_alt;
    if (x.proxy.empty()) continue;
    const double reference = Percentile(x.in_process, .5);
    std::string second = "-", second_ratio = "-", exec_to_second = "-";
    if (!x.second.empty()) {
      second = P50P99(x.second);
      second_ratio =
          absl::StrFormat("%.3f", Percentile(x.second, .5) / reference);
      exec_to_second = absl::StrFormat(
          "%.3f", Percentile(x.proxy, .5) / Percentile(x.second, .5));
    }
    std::printf("%-10s %15s %15s %10.3f %15s %10.3f %15s %10s %10s\n",
                m.c_str(), P50P99(x.proxy).c_str(),
                P50P99(x.in_process).c_str(),
                Percentile(x.proxy, .5) / reference, P50P99(x.copy).c_str(),
                Percentile(x.copy, .5) / reference, second.c_str(),
                second_ratio.c_str(), exec_to_second.c_str());
  }
  for (const auto& m : models) {
    const ModelOverhead& r = results.at(m);
    if (r.cores.size() > 1) {
      std::printf(
          "\nWarning: %s's gpulet has %zu cores, so the proxy and this "
          "process each run an OpenMP team of %zu threads on them; the "
          "proxy's idle team spins and slows this process's runs (20-fold "
          "with lenet on two cores), so exec/inp means little. Measure with "
          "one core per model (as many models as cores).\n",
          m.c_str(), r.cores.size(), r.cores.size());
    }
  }
  std::printf(
      "\nAfter each end-to-end call one reference runs, in turn: the "
      "in-process runner (paired with that call's proxy exec), a second "
      "in-process copy of the model, and (--reference_proxy) a second proxy "
      "process this benchmark starts on the same cores. copy/inp is how far "
      "two copies of the same weights in one process differ: the noise "
      "floor of exec/inp. 2nd/inp and exec/2nd tell a gap any separate "
      "proxy process shows from one the serving path causes.\n");
}

void PrintHopTable(const std::vector<std::string>& models,
                   const std::map<std::string, ModelOverhead>& results) {
  std::printf("\nPer-hop breakdown, p50 of each part (microseconds)\n\n");
  std::printf("%-10s %12s %14s %13s %14s %12s %13s %10s\n", "model",
              "client<->fe", "fe queue+disp", "fe<->backend", "be<->proxy ch",
              "proxy other", "device queue", "exec");
  for (const auto& m : models) {
    const ModelOverhead& r = results.at(m);
    const Timed& e = r.e2e;
    const auto& p = e.params;
    const Samples client_hop = Difference(e.total, p.at("tessera.frontend_us"));
    const Samples network = Difference(p.at("tessera.backend_round_trip_us"),
                                       p.at("tessera.backend_us"));
    const Samples channel = Difference(
        Difference(p.at("tessera.backend_us"), p.at("tessera.proxy_us")),
        p.at("tessera.device_queue_us"));
    const Samples proxy_other =
        Difference(p.at("tessera.proxy_us"), p.at("tessera.exec_us"));
    std::printf("%-10s %12.0f %14.0f %13.0f %14.0f %12.0f %13.0f %10.0f\n",
                m.c_str(), Percentile(client_hop, .5),
                Percentile(p.at("tessera.frontend_queue_us"), .5) +
                    (Percentile(p.at("tessera.frontend_us"), .5) -
                     Percentile(p.at("tessera.frontend_queue_us"), .5) -
                     Percentile(p.at("tessera.backend_round_trip_us"), .5)),
                Percentile(network, .5), Percentile(channel, .5),
                Percentile(proxy_other, .5),
                Percentile(p.at("tessera.device_queue_us"), .5),
                Percentile(p.at("tessera.exec_us"), .5));
  }
  std::printf(
      "\nclient<->fe: end-to-end minus the frontend's own time (the client "
      "hop);\nfe queue+disp: frontend time not spent waiting for the backend "
      "(validation, queueing, batching, output splitting);\nfe<->backend: "
      "backend round trip minus backend time (the second network hop);\n"
      "be<->proxy ch: backend time minus the proxy's own time and device "
      "queueing (the handoff: copies into and out of shared memory, the "
      "control message each way and the wake-up of the thread it reaches);\n"
      "proxy other: the proxy's own time minus execution (reading the "
      "command, wrapping the tensors, the result message).\n");
}

void PrintCostTable(const std::vector<std::string>& models,
                    const std::map<std::string, ModelOverhead>& results) {
  std::printf(
      "\nWork per request, alternating run: CPU time (us) and thread "
      "switches (voluntary + involuntary) of each process, summed over its "
      "threads\n\n");
  std::printf("%-10s %20s %20s %20s %26s\n", "model", "echo server", "frontend",
              "backend", "proxy (of which exec)");
  for (const auto& m : models) {
    const ModelOverhead& r = results.at(m);
    const auto& by = r.cost;
    const Samples& exec = r.e2e.params.at("tessera.exec_us");
    double exec_mean = 0;
    for (double x : exec) exec_mean += x / exec.size();
    auto cell = [&](const std::string& name) {
      return absl::StrFormat("%.0f us / %.1f sw", by.at(name).cpu_us,
                             by.at(name).switches);
    };
    std::printf("%-10s %20s %20s %20s %26s\n", m.c_str(),
                cell("echo server").c_str(), cell("frontend").c_str(),
                cell("backend").c_str(),
                absl::StrFormat("%s (%.0f)", cell("proxy"), exec_mean).c_str());
  }
  std::printf(
      "\nFrontend CPU per request by thread (us; gRPC's own threads "
      "beside the event loops hand events over with wake-ups)\n\n");
  for (const auto& m : models) {
    std::string line;
    for (const auto& [kind, us] :
         results.at(m).cost.at("frontend").cpu_us_by_thread) {
      if (us >= 1) absl::StrAppendFormat(&line, "  %s %.0f", kind, us);
    }
    std::printf("%-10s%s\n", m.c_str(), line.c_str());
  }
  std::printf(
      "\nAn echo crosses one process boundary and back; a request crosses "
      "three (frontend, backend, proxy). On a VM every thread switch that "
      "wakes another core costs the waker tens of microseconds.\n");
}

}  // namespace

void PrintOverheadReport(const std::vector<std::string>& models,
                         const std::map<std::string, ModelOverhead>& results,
                         int iterations) {
  PrintLatencyTable(models, results, iterations);
  PrintExecTable(models, results);
  PrintHopTable(models, results);
  PrintCostTable(models, results);
}

}  // namespace tessera
