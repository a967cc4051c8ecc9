#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"

namespace tessera {

// One end of a local SOCK_SEQPACKET socket carrying one serialized protobuf
// message per packet. Used as the backend <-> proxy control channel; tensor
// bytes travel through shared memory, never through this socket.
//
// Send() is thread-safe; Receive() must be called from one thread at a time.
class SeqPacketChannel {
 public:
  // Largest message accepted (control messages are a few hundred bytes).
  static constexpr size_t kMaxMessageBytes = 1 << 20;

  // Takes ownership of `fd`.
  explicit SeqPacketChannel(int fd) : fd_(fd) {}
  ~SeqPacketChannel();
  SeqPacketChannel(const SeqPacketChannel&) = delete;
  SeqPacketChannel& operator=(const SeqPacketChannel&) = delete;

  // A connected pair; both ends close-on-exec.
  static absl::StatusOr<std::pair<std::unique_ptr<SeqPacketChannel>,
                                  std::unique_ptr<SeqPacketChannel>>>
  CreatePair();

  absl::Status Send(const google::protobuf::MessageLite& message);
  // Blocks until a message arrives, the peer closes (UNAVAILABLE) or
  // `timeout` passes (DEADLINE_EXCEEDED). InfiniteDuration waits forever.
  //
  // With `poll_first` > 0 it first polls for up to that long without
  // sleeping, yielding the core to any other runnable thread between tries,
  // and only then blocks: a message that arrives in the window costs no
  // wake-up, at the price of keeping the core busy meanwhile.
  absl::Status Receive(google::protobuf::MessageLite* message,
                       absl::Duration timeout = absl::InfiniteDuration(),
                       absl::Duration poll_first = absl::ZeroDuration());
  // Wakes a blocked Receive() and makes later calls fail.
  void Shutdown();

  int fd() const { return fd_; }
  // Gives up ownership of the descriptor (e.g. to hand it to a child).
  int Release();

 private:
  static absl::Status Parse(const std::string& buffer, ssize_t n,
                            google::protobuf::MessageLite* message);

  int fd_;
  absl::Mutex send_mu_;
  // Reused by Receive() (one caller at a time).
  std::string receive_buffer_;
};

}  // namespace tessera
