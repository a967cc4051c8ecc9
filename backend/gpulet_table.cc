#include "backend/gpulet_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/grpc_status_util.h"

namespace tessera {

GpuletStatus GpuletEntry::ToStatus() const {
  GpuletStatus s;
  s.set_gpulet_id(id());
  s.set_device_id(spec.device_id);
  s.set_pid(proxy->pid());
  for (int c : spec.cores) s.add_cpu_cores(c);
  for (const MeasuredLatency& m : proxy->warmup()) *s.add_warmup() = m;
  s.set_share_percent(spec.plan.share_percent());
  for (const std::string& m : spec.ModelNames()) s.add_models(m);
  s.set_retiring(state == GpuletState::kRetiring);
  *s.mutable_proxy_config() = proxy->config();
  for (const auto& [model, why] : proxy->failed_models()) {
    ToStatusProto(why, &(*s.mutable_failed_models())[model]);
  }
  return s;
}

BatchResponse GpuletTable::Route::Refusal(const BatchRequest& batch,
                                          const std::string& backend_id) const {
  BatchResponse response;
  response.set_batch_id(batch.batch_id());
  response.set_gpulet_stopped(stopped_for_swap);
  // Transient for the client either way: after a swap the frontend routes
  // the call again; otherwise its plan still names a gpulet this backend no
  // longer (or not yet) serves, e.g. after its restart.
  ToStatusProto(
      stopped_for_swap
          ? absl::UnavailableError(
                absl::StrCat("gpulet '", batch.gpulet_id(),
                             "' was stopped for a stop-then-start swap (device "
                             "memory too small for a shadow proxy); retry"))
          : absl::UnavailableError(absl::StrCat(
                "gpulet '", batch.gpulet_id(), "' is not served by backend '",
                backend_id, "' (restarted, or the plan moved it); retry")),
      response.mutable_status());
  return response;
}

GpuletTable::Route GpuletTable::Find(const std::string& id) const {
  Route route;
  for (const GpuletEntry& e : entries_) {
    if (e.id() != id) continue;
    if (IsRoutable(e.state)) route.proxy = e.proxy;
    if (e.state == GpuletState::kServing) route.serving = true;
    if (e.state == GpuletState::kStoppedForSwap) route.stopped_for_swap = true;
  }
  return route;
}

std::map<std::string, GpuletEntry> GpuletTable::Routable() const {
  std::map<std::string, GpuletEntry> routable;
  for (const GpuletEntry& e : entries_) {
    if (IsRoutable(e.state)) routable.emplace(e.id(), e);
  }
  return routable;
}

std::vector<GpuletEntry> GpuletTable::Live() const {
  std::vector<GpuletEntry> live;
  for (const GpuletEntry& e : entries_) {
    if (e.proxy != nullptr) live.push_back(e);
  }
  return live;
}

std::vector<ResidentGpulet> GpuletTable::Residents() const {
  std::vector<ResidentGpulet> residents;
  for (const GpuletEntry& e : entries_) {
    if (e.proxy != nullptr) {
      residents.push_back({e.spec, e.state, e.proxy->alive()});
    }
  }
  return residents;
}

std::vector<std::string> GpuletTable::Exited() const {
  std::vector<std::string> exited;
  for (const GpuletEntry& e : entries_) {
    if (e.state == GpuletState::kServing &&
        (e.proxy == nullptr || !e.proxy->alive())) {
      exited.push_back(e.id());
    }
  }
  return exited;
}

bool GpuletTable::Ready() const {
  bool any = false;
  for (const GpuletEntry& e : entries_) {
    if (e.state == GpuletState::kRetiring) any = true;
    if (e.state != GpuletState::kServing) continue;
    if (e.proxy == nullptr || !e.proxy->alive()) return false;
    any = true;
  }
  return any;
}

int GpuletTable::num_proxies() const {
  return static_cast<int>(
      std::count_if(entries_.begin(), entries_.end(),
                    [](const GpuletEntry& e) { return e.proxy != nullptr; }));
}

std::vector<GpuletEntry> GpuletTable::TakeForStopFirst(
    const std::string& device_id, const std::set<std::string>& keep) {
  std::vector<GpuletEntry> taken;
  for (GpuletEntry& e : entries_) {
    if (e.proxy == nullptr || e.spec.device_id != device_id) continue;
    if (IsRoutable(e.state) && keep.count(e.id()) > 0) continue;
    taken.push_back(e);
    const bool routable = IsRoutable(e.state);
    e.proxy = nullptr;
    e.state = routable ? GpuletState::kStoppedForSwap : GpuletState::kReplaced;
  }
  // Replaced entries leave with their proxy; stopped ones stay as markers.
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const GpuletEntry& e) {
                                  return e.proxy == nullptr &&
                                         e.state !=
                                             GpuletState::kStoppedForSwap;
                                }),
                 entries_.end());
  return taken;
}

void GpuletTable::Switch(std::vector<GpuletEntry> serving) {
  std::map<std::string, const GpuletEntry*> next;
  for (const GpuletEntry& e : serving) next[e.id()] = &e;
  for (GpuletEntry& e : entries_) {
    if (!IsRoutable(e.state)) continue;
    auto it = next.find(e.id());
    if (it == next.end()) {
      e.state = GpuletState::kRetiring;
    } else if (it->second->proxy != e.proxy) {
      e.state = GpuletState::kReplaced;
    }
  }
  // Kept entries are the serving ones with the same proxy: drop the old
  // copy and take the plan's (its spec may carry new batch sizes).
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&next](const GpuletEntry& e) {
                                  auto it = next.find(e.id());
                                  return IsRoutable(e.state) &&
                                         it != next.end() &&
                                         it->second->proxy == e.proxy;
                                }),
                 entries_.end());
  for (GpuletEntry& e : serving) {
    e.state = GpuletState::kServing;
    entries_.push_back(std::move(e));
  }
}

std::vector<GpuletEntry> GpuletTable::TakeRetired() {
  std::vector<GpuletEntry> retired;
  std::vector<GpuletEntry> kept;
  for (GpuletEntry& e : entries_) {
    if (e.state == GpuletState::kRetiring ||
        e.state == GpuletState::kReplaced) {
      retired.push_back(std::move(e));
    } else if (e.state != GpuletState::kStoppedForSwap) {
      kept.push_back(std::move(e));
    }
  }
  entries_ = std::move(kept);
  return retired;
}

std::vector<GpuletEntry> GpuletTable::TakeDeadReplaced() {
  std::vector<GpuletEntry> out;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->state == GpuletState::kReplaced && it->proxy != nullptr &&
        !it->proxy->alive()) {
      out.push_back(std::move(*it));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::vector<GpuletEntry> GpuletTable::TakeAll() {
  std::vector<GpuletEntry> all;
  for (GpuletEntry& e : entries_) {
    if (e.proxy != nullptr) all.push_back(std::move(e));
  }
  entries_.clear();
  return all;
}

}  // namespace tessera
