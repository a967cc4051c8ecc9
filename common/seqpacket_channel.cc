#include "common/seqpacket_channel.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace tessera {

SeqPacketChannel::~SeqPacketChannel() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::pair<std::unique_ptr<SeqPacketChannel>,
                         std::unique_ptr<SeqPacketChannel>>>
SeqPacketChannel::CreatePair() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return absl::InternalError(
        absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  return std::make_pair(std::make_unique<SeqPacketChannel>(fds[0]),
                        std::make_unique<SeqPacketChannel>(fds[1]));
}

absl::Status SeqPacketChannel::Send(
    const google::protobuf::MessageLite& message) {
  std::string bytes;
  if (!message.SerializeToString(&bytes)) {
    return absl::InternalError("cannot serialize control message");
  }
  if (bytes.size() > kMaxMessageBytes) {
    return absl::ResourceExhaustedError("control message too large");
  }
  absl::MutexLock lock(&send_mu_);
  while (true) {
    ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(bytes.size())) return absl::OkStatus();
    if (n < 0 && errno == EINTR) continue;
    return absl::UnavailableError(
        absl::StrCat("control channel send: ",
                     n < 0 ? std::strerror(errno) : "short write"));
  }
}

absl::Status SeqPacketChannel::Receive(google::protobuf::MessageLite* message,
                                       absl::Duration timeout,
                                       absl::Duration poll_first) {
  const absl::Time deadline = absl::Now() + timeout;
  // Allocated once: a fresh zero-filled 1 MiB buffer per message cost a
  // memset per request on the serving path (found with perf).
  if (receive_buffer_.size() != kMaxMessageBytes) {
    receive_buffer_.resize(kMaxMessageBytes);
  }
  std::string& buffer = receive_buffer_;
  const absl::Time poll_until = absl::Now() + std::min(poll_first, timeout);
  while (poll_first > absl::ZeroDuration() && absl::Now() < poll_until) {
    ssize_t n = recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (n > 0) return Parse(buffer, n, message);
    if (n == 0) return absl::UnavailableError("control channel closed by peer");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;
    sched_yield();
  }
  while (true) {
    int wait_ms = -1;
    if (timeout != absl::InfiniteDuration()) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError("control channel receive timed out");
      }
      wait_ms = static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
    }
    // Without a deadline the blocking recv() waits by itself (Shutdown()
    // wakes it): one system call per message on the serving path instead of
    // poll() then recv().
    if (wait_ms >= 0) {
      pollfd pfd{fd_, POLLIN, 0};
      int ready = poll(&pfd, 1, wait_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) {
        return absl::InternalError(
            absl::StrCat("poll: ", std::strerror(errno)));
      }
      if (ready == 0) continue;  // re-check the deadline
    }
    ssize_t n = recv(fd_, buffer.data(), buffer.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(
          absl::StrCat("control channel receive: ", std::strerror(errno)));
    }
    if (n == 0) return absl::UnavailableError("control channel closed by peer");
    return Parse(buffer, n, message);
  }
}

absl::Status SeqPacketChannel::Parse(const std::string& buffer, ssize_t n,
                                     google::protobuf::MessageLite* message) {
  if (!message->ParseFromArray(buffer.data(), static_cast<int>(n))) {
    return absl::DataLossError("malformed control message");
  }
  return absl::OkStatus();
}

void SeqPacketChannel::Shutdown() {
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
}

int SeqPacketChannel::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

}  // namespace tessera
