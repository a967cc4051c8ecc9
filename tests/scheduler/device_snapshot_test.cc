#include "scheduler/device_snapshot.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(DeviceSnapshotTest, ACpuDeviceMakesWholeCoreShares) {
  const DeviceSnapshot d =
      MakeDeviceSnapshot("b0", "cpu0", DEVICE_KIND_CPU, 4, 0);
  EXPECT_EQ(d.backend_id, "b0");
  EXPECT_EQ(d.device_id, "cpu0");
  EXPECT_EQ(d.num_cores, 4);
  EXPECT_EQ(d.profile_key, "cpu");
  EXPECT_THAT(d.allowed_shares, ElementsAre(25, 50, 75, 100));
}

TEST(DeviceSnapshotTest, GpusTakeAnyShareUnderTheirKindsOrAGivenKey) {
  const DeviceSnapshot emulated = MakeDeviceSnapshot(
      "sim", "gpu0", DEVICE_KIND_EMULATED, 0, int64_t{16} << 30);
  EXPECT_EQ(emulated.profile_key, "emulated");
  EXPECT_EQ(emulated.memory_bytes, int64_t{16} << 30);
  EXPECT_THAT(emulated.allowed_shares, IsEmpty());
  EXPECT_EQ(
      MakeDeviceSnapshot("sim", "gpu1", DEVICE_KIND_EMULATED, 0, 0, "v100")
          .profile_key,
      "v100");
  EXPECT_EQ(
      MakeDeviceSnapshot("b0", "gpu0", DEVICE_KIND_CUDA, 0, 0).profile_key,
      "cuda");
}

}  // namespace
}  // namespace tessera
