#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend.pb.h"
#include "backend/gpulet_spec.h"
#include "backend/proxy.h"

namespace tessera {

// Where a gpulet is in its life on this backend.
enum class GpuletState {
  // In the plan in force: routable.
  kServing,
  // Dropped by the plan in force: still routable (it finishes what the
  // frontend sent before switching), stopped at the next commit.
  kRetiring,
  // Replaced under the same id by a new proxy: no longer routable,
  // stopped at the next commit.
  kReplaced,
  // Stopped early for a stop-then-start swap (device memory too small for
  // a shadow proxy); no proxy. Batches still sent to it get UNAVAILABLE,
  // not NOT_FOUND, until the commit.
  kStoppedForSwap,
};

struct GpuletEntry {
  GpuletSpec spec;
  std::shared_ptr<Proxy> proxy;  // null only when kStoppedForSwap
  GpuletState state = GpuletState::kServing;

  const std::string& id() const { return spec.id(); }
  // What ApplyPlan and Health report of it; needs a proxy.
  GpuletStatus ToStatus() const;
};

// What the plan diff needs to know of a gpulet with a proxy.
struct ResidentGpulet {
  GpuletSpec spec;
  GpuletState state;
  bool alive;
};

// Every gpulet of one backend with its proxy and state; the plan changes
// of BackendServiceImpl are transitions of this table. Not thread-safe:
// its owner guards it.
class GpuletTable {
 public:
  struct Route {
    std::shared_ptr<Proxy> proxy;  // null: not routable
    bool stopped_for_swap = false;
    // In the plan in force (not retiring): the supervisor restarts its
    // proxy if it exits.
    bool serving = false;

    // The answer to `batch` when there is no proxy: UNAVAILABLE (retry),
    // saying whether a stop-then-start swap stopped the gpulet or backend
    // `backend_id` does not serve it (restarted, or the plan moved it).
    BatchResponse Refusal(const BatchRequest& batch,
                          const std::string& backend_id) const;
  };
  // Where a batch for gpulet `id` goes.
  Route Find(const std::string& id) const;

  // Serving and retiring entries, by id.
  std::map<std::string, GpuletEntry> Routable() const;
  // Every entry with a proxy (serving, retiring, replaced).
  std::vector<GpuletEntry> Live() const;
  std::vector<ResidentGpulet> Residents() const;
  // The serving gpulets whose proxy has exited.
  std::vector<std::string> Exited() const;
  // Some gpulet is routable, and every serving one has a live proxy
  // (retiring ones only drain).
  bool Ready() const;
  int num_proxies() const;

  // Removes the entries with a proxy on `device_id` except the routable
  // ones whose id is in `keep`, and returns them; the routable ones among
  // them become kStoppedForSwap.
  std::vector<GpuletEntry> TakeForStopFirst(const std::string& device_id,
                                            const std::set<std::string>& keep);
  // The plan in force becomes `serving` (each with its proxy). A routable
  // entry missing from it retires; one whose id it gives a different proxy
  // is replaced.
  void Switch(std::vector<GpuletEntry> serving);
  // Removes and returns the retiring and replaced entries, and forgets the
  // stopped-for-swap ids (the commit).
  std::vector<GpuletEntry> TakeRetired();
  // Removes and returns the replaced entries whose proxy has exited (a
  // crashed proxy the supervisor restarted under the same id).
  std::vector<GpuletEntry> TakeDeadReplaced();
  // Removes and returns every entry with a proxy.
  std::vector<GpuletEntry> TakeAll();

 private:
  static bool IsRoutable(GpuletState s) {
    return s == GpuletState::kServing || s == GpuletState::kRetiring;
  }
  std::vector<GpuletEntry> entries_;
};

}  // namespace tessera
