// SeqPacketChannel, SharedMemoryRegion and Subprocess: the local IPC the
// backend and its proxies are built on.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "absl/synchronization/notification.h"
#include "backend.pb.h"
#include "common/cpu_affinity.h"
#include "common/seqpacket_channel.h"
#include "common/shared_memory_region.h"
#include "common/subprocess.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(SeqPacketChannelTest, CarriesOneMessagePerPacket) {
  auto pair = SeqPacketChannel::CreatePair();
  ASSERT_TRUE(pair.ok());
  MeasuredLatency a, b;
  a.set_model("x");
  a.set_batch_size(3);
  b.set_model("y");
  ASSERT_TRUE(pair->first->Send(a).ok());
  ASSERT_TRUE(pair->first->Send(b).ok());
  MeasuredLatency got;
  ASSERT_TRUE(pair->second->Receive(&got, absl::Seconds(5)).ok());
  EXPECT_EQ(got.model(), "x");
  EXPECT_EQ(got.batch_size(), 3);
  ASSERT_TRUE(pair->second->Receive(&got, absl::Seconds(5)).ok());
  EXPECT_EQ(got.model(), "y");
}

TEST(SeqPacketChannelTest, TimesOutAndReportsClosedPeer) {
  auto pair = SeqPacketChannel::CreatePair();
  ASSERT_TRUE(pair.ok());
  MeasuredLatency got;
  EXPECT_EQ(pair->second->Receive(&got, absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  pair->first.reset();
  EXPECT_EQ(pair->second->Receive(&got, absl::Seconds(5)).code(),
            absl::StatusCode::kUnavailable);
}

// Without a deadline Receive() blocks in recv() itself (the serving path's
// one system call per message): a message sent later still arrives, and
// Shutdown() from another thread wakes the wait.
TEST(SeqPacketChannelTest, BlockingReceiveGetsLaterMessagesAndWakesOnShutdown) {
  auto pair = SeqPacketChannel::CreatePair();
  ASSERT_TRUE(pair.ok());
  SeqPacketChannel* receiver = pair->second.get();
  absl::Notification got_message, returned;
  MeasuredLatency got;
  absl::Status second;
  std::thread reader([&] {
    if (receiver->Receive(&got).ok()) got_message.Notify();
    second = receiver->Receive(&got);
    returned.Notify();
  });
  absl::SleepFor(absl::Milliseconds(20));  // let it block first
  MeasuredLatency sent;
  sent.set_model("later");
  ASSERT_TRUE(pair->first->Send(sent).ok());
  EXPECT_TRUE(got_message.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(20));
  receiver->Shutdown();
  const bool woke = returned.WaitForNotificationWithTimeout(absl::Seconds(10));
  if (!woke) pair->first.reset();  // unblock the reader before failing
  reader.join();
  EXPECT_TRUE(woke) << "Shutdown() did not wake a blocked Receive()";
  EXPECT_EQ(got.model(), "later");
  EXPECT_EQ(second.code(), absl::StatusCode::kUnavailable);
}

// Polling first: a message sent while the receiver polls, or after the poll
// window (then the blocking wait takes it), arrives either way; a closed
// peer ends the poll at once; a deadline shorter than the window still
// holds.
TEST(SeqPacketChannelTest, PollsThenBlocks) {
  auto pair = SeqPacketChannel::CreatePair();
  ASSERT_TRUE(pair.ok());
  SeqPacketChannel* sender = pair->first.get();
  auto send_after = [sender](absl::Duration delay, const std::string& name) {
    return std::thread([sender, delay, name] {
      absl::SleepFor(delay);
      MeasuredLatency m;
      m.set_model(name);
      EXPECT_TRUE(sender->Send(m).ok());
    });
  };
  MeasuredLatency got;
  std::thread during = send_after(absl::Milliseconds(20), "during");
  EXPECT_TRUE(
      pair->second->Receive(&got, absl::Seconds(10), absl::Seconds(5)).ok());
  during.join();
  EXPECT_EQ(got.model(), "during");

  std::thread after = send_after(absl::Milliseconds(100), "after");
  EXPECT_TRUE(
      pair->second->Receive(&got, absl::Seconds(10), absl::Milliseconds(5))
          .ok());
  after.join();
  EXPECT_EQ(got.model(), "after");

  const absl::Time start = absl::Now();
  EXPECT_EQ(
      pair->second->Receive(&got, absl::Milliseconds(30), absl::Seconds(10))
          .code(),
      absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));

  std::thread closer([&pair] {
    absl::SleepFor(absl::Milliseconds(20));
    pair->first.reset();
  });
  EXPECT_EQ(
      pair->second->Receive(&got, absl::Seconds(10), absl::Seconds(10)).code(),
      absl::StatusCode::kUnavailable);
  closer.join();
}

TEST(SharedMemoryRegionTest, MappingsOfOneFdShareBytes) {
  auto region = SharedMemoryRegion::Create("test", 1 << 16);
  ASSERT_TRUE(region.ok());
  std::strcpy(reinterpret_cast<char*>((*region)->data() + 100), "hello");
  auto other = SharedMemoryRegion::FromFd(dup((*region)->fd()));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->size(), 1u << 16);
  EXPECT_STREQ(reinterpret_cast<char*>((*other)->data() + 100), "hello");
}

TEST(SubprocessTest, ReportsExitStatusAndPassesEnvironment) {
  Subprocess::Options options;
  options.argv = {"/bin/sh", "-c", "test \"$TESSERA_X\" = 42 && exit 3"};
  options.env = {{"TESSERA_X", "42"}};
  auto p = Subprocess::Spawn(options);
  ASSERT_TRUE(p.ok());
  auto status = (*p)->Wait(absl::Seconds(10));
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(WEXITSTATUS(*status), 3);
}

TEST(SubprocessTest, InheritsDescriptorsAndStops) {
  auto region = SharedMemoryRegion::Create("test", 4096);
  ASSERT_TRUE(region.ok());
  Subprocess::Options options;
  // The child writes through its inherited fd 4.
  options.argv = {"/bin/sh", "-c", "printf child >&4; exec sleep 30"};
  options.inherit_fds = {{4, (*region)->fd()}};
  auto p = Subprocess::Spawn(options);
  ASSERT_TRUE(p.ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (std::memcmp((*region)->data(), "child", 5) != 0 &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(std::memcmp((*region)->data(), "child", 5), 0);
  EXPECT_TRUE((*p)->Running());
  (*p)->Stop(absl::Seconds(5));
  EXPECT_FALSE((*p)->Running());
}

// Parent descriptors may already carry the numbers of the child's slots:
// a descriptor mapped onto its own number, and two mapped crosswise.
TEST(SubprocessTest, InheritsDescriptorsWhoseNumbersCollideWithSlots) {
  auto a = SharedMemoryRegion::Create("a", 4096);
  auto b = SharedMemoryRegion::Create("b", 4096);
  auto c = SharedMemoryRegion::Create("c", 4096);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  // Parent fds 60 (a), 61 (b), 62 (c), close-on-exec like all of ours.
  ASSERT_EQ(dup3((*a)->fd(), 60, O_CLOEXEC), 60);
  ASSERT_EQ(dup3((*b)->fd(), 61, O_CLOEXEC), 61);
  ASSERT_EQ(dup3((*c)->fd(), 62, O_CLOEXEC), 62);
  Subprocess::Options options;
  // bash: dash cannot redirect to descriptors above 9.
  options.argv = {"/bin/bash", "-c",
                  "printf A >&60; printf B >&61; printf C >&62"};
  // Crosswise: child 60 <- parent 61 (b), child 61 <- parent 60 (a);
  // same number: child 62 <- parent 62 (c).
  options.inherit_fds = {{60, 61}, {61, 60}, {62, 62}};
  auto p = Subprocess::Spawn(options);
  ASSERT_TRUE(p.ok()) << p.status();
  auto status = (*p)->Wait(absl::Seconds(10));
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  EXPECT_EQ(std::memcmp((*a)->data(), "B", 1), 0);
  EXPECT_EQ(std::memcmp((*b)->data(), "A", 1), 0);
  EXPECT_EQ(std::memcmp((*c)->data(), "C", 1), 0);
  close(60);
  close(61);
  close(62);
}

TEST(SubprocessTest, MissingExecutableIsAnError) {
  Subprocess::Options options;
  options.argv = {"/nonexistent/binary"};
  EXPECT_FALSE(Subprocess::Spawn(options).ok());
}

TEST(CpuAffinityTest, ParsesAndFormatsCoreLists) {
  auto cores = ParseCoreList("3,0-1, 1");
  ASSERT_TRUE(cores.ok());
  EXPECT_EQ(*cores, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(FormatCoreList(*cores), "0,1,3");
  EXPECT_FALSE(ParseCoreList("2-1").ok());
  EXPECT_FALSE(ParseCoreList("x").ok());
  EXPECT_FALSE(ParseCoreList("").ok());
}

}  // namespace
}  // namespace tessera
