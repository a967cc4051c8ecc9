#include "tools/profiler.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backend/proxy_handle.h"
#include "common/grpc_status_util.h"
#include "common/model_repository.h"
#include "common/percentile.h"
#include "common/status_macros.h"

namespace tessera {
namespace {

// A batch of zeros of `config`'s inputs (shape-only: the handle fabricates
// the data in the shared region).
BatchRequest ZerosBatch(const ModelConfig& config, int batch) {
  BatchRequest request;
  request.set_model(config.name());
  request.set_shape_only(true);
  for (const TensorConfig& t : config.input()) {
    Tensor* in = request.add_inputs();
    in->set_name(t.name());
    in->set_data_type(t.data_type());
    in->add_shape(batch);
    for (int d = 1; d < t.dims_size(); ++d) in->add_shape(t.dims(d));
  }
  return request;
}

// Runs one batch and returns the proxy's execution time (ms).
absl::StatusOr<double> RunBatch(ProxyHandle* proxy, const BatchRequest& batch) {
  auto response = proxy->ExecuteAndWait(batch, absl::Seconds(300));
  if (!response.ok()) return response.status();
  RETURN_IF_ERROR(FromStatusProto(response->status()));
  return response->exec_time_us() / 1000.0;
}

int64_t ResidentBytes(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    int64_t kb;
    if (absl::StartsWith(line, "VmRSS:") &&
        absl::SimpleAtoi(
            absl::StripAsciiWhitespace(absl::StripSuffix(line.substr(6), "kB")),
            &kb)) {
      return kb * 1024;
    }
  }
  return 0;
}

// Memory-streaming stressor on `cores` for `window`: bytes touched per
// second (read-modify-write over a buffer much larger than the caches).
double StressorRate(const std::vector<int>& cores, absl::Duration window) {
  std::atomic<int64_t> bytes{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int core : cores) {
    threads.emplace_back([&, core] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(core, &set);
      pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      std::vector<uint64_t> buffer((64 << 20) / sizeof(uint64_t), 1);
      int64_t local = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (size_t i = 0; i < buffer.size(); i += 8) buffer[i] += i;
        // One write per 64-byte line: the whole buffer crosses the bus.
        local += buffer.size() * sizeof(uint64_t);
        if (stop.load(std::memory_order_relaxed)) break;
      }
      bytes += local;
    });
  }
  const absl::Time start = absl::Now();
  absl::SleepFor(window);
  stop = true;
  for (auto& t : threads) t.join();
  return bytes / absl::ToDoubleSeconds(absl::Now() - start);
}

std::string FormatCell(const Profiler::Cell& c) {
  return absl::StrCat(c.model, ",", c.batch, ",", c.share, ",", c.other, ",",
                      c.other_batch, ",", c.other_share, ",", c.latency_ms, ",",
                      c.latency_p99_ms, ",", c.other_latency_ms, ",",
                      c.throughput_rps, ",", c.dram_pressure_percent, ",",
                      c.memory_bytes);
}

}  // namespace

std::string Profiler::Cell::Key() const {
  return absl::StrCat(model, "/", batch, "/", share, "|", other, "/",
                      other_batch, "/", other_share);
}

absl::StatusOr<std::vector<Profiler::Cell>> Profiler::ReadProgress(
    const std::string& path) {
  std::vector<Cell> cells;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ',');
    Cell c;
    // A line cut short by an interruption is ignored (re-measured).
    if (f.size() != 12 || !absl::SimpleAtoi(f[1], &c.batch) ||
        !absl::SimpleAtod(f[2], &c.share) ||
        !absl::SimpleAtoi(f[4], &c.other_batch) ||
        !absl::SimpleAtod(f[5], &c.other_share) ||
        !absl::SimpleAtod(f[6], &c.latency_ms) ||
        !absl::SimpleAtod(f[7], &c.latency_p99_ms) ||
        !absl::SimpleAtod(f[8], &c.other_latency_ms) ||
        !absl::SimpleAtod(f[9], &c.throughput_rps) ||
        !absl::SimpleAtod(f[10], &c.dram_pressure_percent) ||
        !absl::SimpleAtoi(f[11], &c.memory_bytes)) {
      continue;
    }
    c.model = f[0];
    c.other = f[3];
    cells.push_back(std::move(c));
  }
  return cells;
}

absl::StatusOr<Profiler::Result> Profiler::Run(const Options& options) {
  if (options.progress_file.empty()) {
    return absl::InvalidArgumentError("profiler: a progress file is required");
  }
  if (options.cores.empty()) {
    return absl::InvalidArgumentError("profiler: no cores to profile on");
  }
  if (options.runs < 1 || options.warmup < 0) {
    return absl::InvalidArgumentError("profiler: runs >= 1, warmup >= 0");
  }
  ASSIGN_OR_RETURN(auto repo, ModelRepository::Load(options.model_repository));
  std::vector<std::string> models = options.models;
  if (models.empty()) models = repo->ModelNames();
  std::map<std::string, ModelConfig> configs;
  for (const std::string& m : models) {
    const ModelRepository::Entry* e = repo->Find(m);
    if (e == nullptr) {
      return absl::NotFoundError(absl::StrCat("unknown model '", m, "'"));
    }
    if (e->config.platform() != "torchscript") {
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", m, "' is not a TorchScript model: nothing to profile"));
    }
    configs[m] = e->config;
  }
  auto batches_of = [&](const ModelConfig& c) {
    std::vector<int> out;
    if (!options.batches.empty()) {
      for (int b : options.batches) {
        if (b <= c.max_batch_size()) out.push_back(b);
      }
      return out;
    }
    for (int b = 1; b < c.max_batch_size(); b *= 2) out.push_back(b);
    out.push_back(c.max_batch_size());
    return out;
  };
  const int num_cores = static_cast<int>(options.cores.size());
  auto share_of = [&](int k) { return 100.0 * k / num_cores; };
  auto first_cores = [&](int k) {
    return std::vector<int>(options.cores.begin(), options.cores.begin() + k);
  };
  auto last_cores = [&](int k) {
    return std::vector<int>(options.cores.end() - k, options.cores.end());
  };

  // The plan of cells, so progress and resume know the total.
  std::vector<Cell> plan;
  for (const std::string& m : models) {
    for (int k = 1; k <= num_cores; ++k) {
      for (int b : batches_of(configs[m])) {
        Cell c;
        c.model = m;
        c.batch = b;
        c.share = share_of(k);
        plan.push_back(c);
      }
    }
  }
  if (options.pairs && num_cores >= 2) {
    for (size_t i = 0; i < models.size(); ++i) {
      for (size_t j = i; j < models.size(); ++j) {
        const ModelConfig& a = configs[models[i]];
        const ModelConfig& b = configs[models[j]];
        for (int k = 1; k < num_cores; ++k) {
          // The smallest and largest profiled batch of each.
          const std::vector<int> sa = batches_of(a), sb = batches_of(b);
          for (int ba : {sa.front(), sa.back()}) {
            for (int bb : {sb.front(), sb.back()}) {
              Cell c;
              c.model = a.name();
              c.batch = ba;
              c.share = share_of(k);
              c.other = b.name();
              c.other_batch = bb;
              c.other_share = share_of(num_cores - k);
              plan.push_back(c);
              if (sb.size() == 1) break;
            }
            if (sa.size() == 1) break;
          }
        }
      }
    }
  }

  ASSIGN_OR_RETURN(auto previous, ReadProgress(options.progress_file));
  std::map<std::string, Cell> done;
  for (const Cell& c : previous) done[c.Key()] = c;
  bool ends_with_newline = true;
  {
    std::ifstream in(options.progress_file, std::ios::binary);
    if (in && in.seekg(0, std::ios::end) && in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      ends_with_newline = in.get() == '\n';
    }
  }
  std::ofstream progress(options.progress_file, std::ios::app);
  if (!progress) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", options.progress_file));
  }
  // An interrupted run may have left half a line: end it (it is ignored).
  if (!ends_with_newline) progress << "\n";
  int finished = 0;
  for (const Cell& c : plan) finished += done.count(c.Key()) > 0;
  if (options.progress) options.progress(finished, plan.size());
  auto record = [&](const Cell& c) {
    progress << FormatCell(c) << "\n";
    progress.flush();
    done[c.Key()] = c;
    ++finished;
    if (options.progress) options.progress(finished, plan.size());
  };
  auto start_proxy = [&](const std::vector<std::string>& names,
                         const std::vector<int>& cores, const std::string& id)
      -> absl::StatusOr<std::unique_ptr<ProxyHandle>> {
    ProxyHandle::Options po;
    po.proxy_binary = options.proxy_binary;
    po.config.set_model_repository(options.model_repository);
    po.config.set_gpulet_id(id);
    po.config.set_device_id("cpu");
    po.config.set_device_kind(DEVICE_KIND_CPU);
    for (int c : cores) po.config.add_cpu_cores(c);
    po.config.set_threads(static_cast<int>(cores.size()));
    po.num_slots = 1;
    for (const auto& n : names) *po.config.add_models() = configs[n];
    return ProxyHandle::Start(po);
  };
  // `runs` timed batches after the warm-up ones. With a neighbour, keeps
  // running (untimed) until the neighbour has its timed runs too, so every
  // timed batch overlaps it; `timed_done` tells the neighbour.
  auto measure = [&](ProxyHandle* proxy, const BatchRequest& batch,
                     std::atomic<bool>* timed_done,
                     const std::atomic<bool>* other_timed_done,
                     std::vector<double>* times) -> absl::Status {
    absl::Status status;
    for (int i = 0; i < options.warmup && status.ok(); ++i) {
      status = RunBatch(proxy, batch).status();
    }
    for (int i = 0; status.ok(); ++i) {
      if (i >= options.runs) {
        if (timed_done != nullptr) *timed_done = true;
        if (other_timed_done == nullptr || other_timed_done->load()) break;
      }
      auto t = RunBatch(proxy, batch);
      status = t.status();
      if (t.ok() && i < options.runs) times->push_back(*t);
    }
    // Never leave the neighbour waiting, even on failure.
    if (timed_done != nullptr) *timed_done = true;
    return status;
  };

  // 1 + 2: solo cells and the memory-pressure stand-in, per partition.
  for (const std::string& m : models) {
    for (int k = 1; k <= num_cores; ++k) {
      std::vector<Cell> unmeasured;
      for (const Cell& c : plan) {
        if (c.other.empty() && c.model == m && c.share == share_of(k) &&
            !done.count(c.Key())) {
          unmeasured.push_back(c);
        }
      }
      if (unmeasured.empty()) continue;
      ASSIGN_OR_RETURN(auto proxy,
                       start_proxy({m}, first_cores(k), "profile-" + m));
      const int64_t memory = ResidentBytes(proxy->pid());
      for (Cell c : unmeasured) {
        const BatchRequest batch = ZerosBatch(configs[m], c.batch);
        std::vector<double> times;
        RETURN_IF_ERROR(measure(proxy.get(), batch, nullptr, nullptr, &times));
        c.latency_ms = Percentile(times, 0.5);
        c.latency_p99_ms = Percentile(times, 0.99);
        c.throughput_rps =
            c.latency_ms > 0 ? 1000.0 * c.batch / c.latency_ms : 0;
        c.memory_bytes = memory;
        // Pressure on memory: how much this model, running back to back,
        // slows a streaming stressor on the other cores.
        if (k < num_cores) {
          const std::vector<int> others = last_cores(num_cores - k);
          const double alone = StressorRate(others, options.stress_window);
          std::atomic<bool> running{true};
          std::thread load([&] {
            while (running) (void)RunBatch(proxy.get(), batch);
          });
          const double beside = StressorRate(others, options.stress_window);
          running = false;
          load.join();
          c.dram_pressure_percent =
              alone > 0 ? std::max(0.0, 100.0 * (1 - beside / alone)) : 0;
        }
        record(c);
      }
      proxy->Stop();
    }
  }

  // 3: pairs on complementary partitions, both running at once.
  for (const Cell& planned : plan) {
    if (planned.other.empty() || done.count(planned.Key())) continue;
    const int k =
        static_cast<int>(std::lround(planned.share * num_cores / 100.0));
    ASSIGN_OR_RETURN(auto a,
                     start_proxy({planned.model}, first_cores(k), "pair-a"));
    ASSIGN_OR_RETURN(auto b, start_proxy({planned.other},
                                         last_cores(num_cores - k), "pair-b"));
    const BatchRequest batch_a =
        ZerosBatch(configs[planned.model], planned.batch);
    const BatchRequest batch_b =
        ZerosBatch(configs[planned.other], planned.other_batch);
    std::atomic<bool> a_done{false}, b_done{false};
    std::vector<double> ta, tb;
    absl::Status sa, sb;
    std::thread ra(
        [&] { sa = measure(a.get(), batch_a, &a_done, &b_done, &ta); });
    sb = measure(b.get(), batch_b, &b_done, &a_done, &tb);
    ra.join();
    a->Stop();
    b->Stop();
    if (!sa.ok()) return sa;
    if (!sb.ok()) return sb;
    Cell c = planned;
    c.latency_ms = Percentile(ta, 0.5);
    c.latency_p99_ms = Percentile(ta, 0.99);
    c.other_latency_ms = Percentile(tb, 0.5);
    record(c);
  }

  // Profiles from the solo cells; the pressure stand-in of partitions with
  // no complementary core is the largest measured one's.
  Result result;
  for (const Cell& planned : plan) {
    const Cell& c = done.at(planned.Key());
    result.cells.push_back(c);
    if (!c.other.empty()) continue;
    ModelProfile& p = result.profiles[c.model];
    p.set_model(c.model);
    p.set_device_kind("cpu");
    p.set_memory_bytes(std::max(p.memory_bytes(), c.memory_bytes));
    LatencyPoint* point = p.add_latency();
    point->set_batch_size(c.batch);
    point->set_share_percent(c.share);
    point->set_latency_ms(c.latency_ms);
    point->set_latency_p99_ms(c.latency_p99_ms);
    point->set_dram_util_percent(c.dram_pressure_percent);
    point->set_throughput_rps(c.throughput_rps);
  }
  for (auto& [name, p] : result.profiles) {
    for (LatencyPoint& point : *p.mutable_latency()) {
      if (point.share_percent() < 100 || num_cores < 2) continue;
      // Same batch at the largest share that has a complement.
      double best_share = 0, value = 0;
      for (const LatencyPoint& q : p.latency()) {
        if (q.batch_size() == point.batch_size() && q.share_percent() < 100 &&
            q.share_percent() > best_share) {
          best_share = q.share_percent();
          value = q.dram_util_percent();
        }
      }
      point.set_dram_util_percent(value);
    }
    ASSIGN_OR_RETURN(auto model, LatencyModel::FromProfile(p));
    result.latency_models.emplace(name, std::move(model));
  }
  for (const Cell& c : result.cells) {
    if (c.other.empty()) continue;
    const LatencyModel* self = &result.latency_models.at(c.model);
    const LatencyModel* other = &result.latency_models.at(c.other);
    result.pairs.push_back({{self, c.batch, c.share},
                            {other, c.other_batch, c.other_share},
                            c.latency_ms});
    result.pairs.push_back({{other, c.other_batch, c.other_share},
                            {self, c.batch, c.share},
                            c.other_latency_ms});
  }
  return result;
}

}  // namespace tessera
