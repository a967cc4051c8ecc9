#include "backend/parked_batches.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_proto.h"

namespace tessera {

bool ParkedBatches::Park(BatchRequest& batch, Reply& reply, absl::Time now) {
  if (closed(batch.gpulet_id())) return false;
  std::vector<Entry>& held = by_gpulet_[batch.gpulet_id()];
  if (static_cast<int>(held.size()) >= options_.max_per_gpulet) return false;
  absl::Duration wait = options_.max_wait;
  if (batch.deadline_budget_ms() > 0) {
    wait = std::min(wait, absl::Microseconds(static_cast<int64_t>(
                              batch.deadline_budget_ms() * 1000)));
  }
  held.push_back({std::move(batch), std::move(reply), now + wait});
  return true;
}

std::vector<ParkedBatches::Entry> ParkedBatches::Take(
    const std::string& gpulet_id) {
  auto it = by_gpulet_.find(gpulet_id);
  if (it == by_gpulet_.end()) return {};
  std::vector<Entry> taken = std::move(it->second);
  by_gpulet_.erase(it);
  return taken;
}

std::vector<ParkedBatches::Entry> ParkedBatches::Close(
    const std::string& gpulet_id) {
  closed_.insert(gpulet_id);
  return Take(gpulet_id);
}

std::vector<ParkedBatches::Entry> ParkedBatches::ReopenAll() {
  closed_.clear();
  return TakeAll();
}

std::vector<ParkedBatches::Entry> ParkedBatches::TakeExpired(absl::Time now) {
  std::vector<Entry> expired;
  for (auto it = by_gpulet_.begin(); it != by_gpulet_.end();) {
    std::vector<Entry>& held = it->second;
    auto kept = std::stable_partition(
        held.begin(), held.end(),
        [now](const Entry& e) { return e.deadline > now; });
    std::move(kept, held.end(), std::back_inserter(expired));
    held.erase(kept, held.end());
    it = held.empty() ? by_gpulet_.erase(it) : std::next(it);
  }
  return expired;
}

std::vector<ParkedBatches::Entry> ParkedBatches::TakeAll() {
  std::vector<Entry> all;
  for (auto& [id, held] : by_gpulet_) {
    std::move(held.begin(), held.end(), std::back_inserter(all));
  }
  by_gpulet_.clear();
  return all;
}

int ParkedBatches::size() const {
  int n = 0;
  for (const auto& [id, held] : by_gpulet_) n += static_cast<int>(held.size());
  return n;
}

namespace {

void Answer(std::vector<ParkedBatches::Entry> entries,
            const absl::Status& status) {
  for (ParkedBatches::Entry& e : entries) {
    BatchResponse response;
    response.set_batch_id(e.batch.batch_id());
    ToStatusProto(status, response.mutable_status());
    e.reply(std::move(response));
  }
}

}  // namespace

void ParkedBatches::AnswerExpired(std::vector<Entry> entries) {
  Answer(std::move(entries),
         absl::DeadlineExceededError(
             "the batch's deadline passed while its gpulet's proxy was "
             "being restarted"));
}

void ParkedBatches::AnswerUnavailable(std::vector<Entry> entries,
                                      const std::string& why) {
  Answer(std::move(entries), absl::UnavailableError(why));
}

}  // namespace tessera
