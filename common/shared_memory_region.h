#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

namespace tessera {

// An anonymous shared-memory region (memfd) mapped read-write. The backend
// creates one per proxy and the proxy inherits the descriptor, so tensor
// bytes cross the process boundary without passing through a socket.
class SharedMemoryRegion {
 public:
  ~SharedMemoryRegion();
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  // Creates a region of `size_bytes` (pages are allocated lazily). The
  // descriptor is close-on-exec; a spawner dup2()s it into a child.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Create(
      const char* name, size_t size_bytes);
  // Maps an inherited descriptor (takes ownership). The size is read from
  // the descriptor.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> FromFd(int fd);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  SharedMemoryRegion(int fd, uint8_t* data, size_t size)
      : fd_(fd), data_(data), size_(size) {}

  int fd_;
  uint8_t* data_;
  size_t size_;
};

}  // namespace tessera
