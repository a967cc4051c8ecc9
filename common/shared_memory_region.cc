#include "common/shared_memory_region.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tessera {

SharedMemoryRegion::~SharedMemoryRegion() {
  if (data_ != nullptr) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> SharedMemoryRegion::Create(
    const char* name, size_t size_bytes) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("memfd_create: ", std::strerror(errno)));
  }
  if (ftruncate(fd, static_cast<off_t>(size_bytes)) != 0) {
    const int err = errno;
    close(fd);
    return absl::ResourceExhaustedError(absl::StrCat(
        "ftruncate shared memory to ", size_bytes, ": ", std::strerror(err)));
  }
  auto region = FromFd(fd);
  return region;
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> SharedMemoryRegion::FromFd(
    int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("fstat shared memory fd ", fd, ": ", std::strerror(err)));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    const int err = errno;
    close(fd);
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap ", size, " bytes: ", std::strerror(err)));
  }
  return std::unique_ptr<SharedMemoryRegion>(
      new SharedMemoryRegion(fd, static_cast<uint8_t*>(data), size));
}

}  // namespace tessera
