#pragma once

#include <memory>
#include <vector>

namespace tessera {

// Writes an event loop holds back so that several answers leave in one
// socket write. Each gRPC write that is not marked "more follows"
// (WriteOptions::set_buffer_hint) is sent at once, one sendmsg and one
// loopback delivery each; under overload the frontend's stream answers,
// refusals most of all, each cost a socket write of their own (measured:
// one sendmsg per answer at 20,000 refusals/s, a third of the frontend's
// CPU). A stream whose last ready answer would go out alone defers it
// here instead; the loop flushes its deferred writers when its completion
// queue runs dry, or after `kMaxEventsHeld` events, so a held answer waits
// at most a few events.
//
// One per event-loop thread (RunCompletionQueue makes it the thread's
// own); only that thread may use it. A writer deferred from another
// thread could wait for a loop that sleeps, so writers ask `OfThisThread`
// and write at once where it is not theirs.
class DeferredWrites {
 public:
  // What a loop flushes.
  class Writer {
   public:
    virtual ~Writer() = default;
    // Writes what was held back, marking the last write as the end of the
    // batch.
    virtual void FlushDeferred() = 0;
  };

  // Events a loop runs, after a writer deferred, before it flushes.
  static constexpr int kMaxEventsHeld = 32;

  // Makes `writes` this thread's for the scope.
  class Scope {
   public:
    explicit Scope(DeferredWrites* writes);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    DeferredWrites* const previous_;
  };

  // The loop's on this thread; null on any other thread.
  static DeferredWrites* OfThisThread();

  // Holds `writer` until the next flush. A writer deferred twice before a
  // flush is flushed twice.
  void Defer(std::shared_ptr<Writer> writer);
  bool empty() const { return writers_.empty(); }

  // The loop ran one event: flushes once kMaxEventsHeld events ran since
  // the first deferral.
  void CountEvent();

  // Flushes every writer deferred so far, in order; writers deferred
  // during the flush wait for the next one.
  void FlushAll();

 private:
  std::vector<std::shared_ptr<Writer>> writers_;
  int events_held_ = 0;
};

}  // namespace tessera
