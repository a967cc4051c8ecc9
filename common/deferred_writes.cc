#include "common/deferred_writes.h"

#include <utility>

namespace tessera {
namespace {

thread_local DeferredWrites* this_thread_writes = nullptr;

}  // namespace

DeferredWrites::Scope::Scope(DeferredWrites* writes)
    : previous_(this_thread_writes) {
  this_thread_writes = writes;
}

DeferredWrites::Scope::~Scope() { this_thread_writes = previous_; }

DeferredWrites* DeferredWrites::OfThisThread() { return this_thread_writes; }

void DeferredWrites::Defer(std::shared_ptr<Writer> writer) {
  writers_.push_back(std::move(writer));
}

void DeferredWrites::CountEvent() {
  if (writers_.empty()) return;
  if (++events_held_ >= kMaxEventsHeld) FlushAll();
}

void DeferredWrites::FlushAll() {
  std::vector<std::shared_ptr<Writer>> writers;
  writers.swap(writers_);
  events_held_ = 0;
  for (const std::shared_ptr<Writer>& writer : writers) {
    writer->FlushDeferred();
  }
}

}  // namespace tessera
