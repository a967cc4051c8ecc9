#include "frontend/cluster_snapshot_builder.h"

#include <filesystem>
#include <fstream>

#include "common/text_proto.h"
#include "gtest/gtest.h"
#include "scheduler/policy_registry.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

TEST(ClusterSnapshotBuilderTest, ProfilesAreFoundUnderTheDevicesProfileKey) {
  const fs::path root =
      fs::path(::testing::TempDir()) / ("snapshot_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "models" / "m");
  fs::create_directories(root / "profiles" / "cpu");
  std::ofstream(root / "models" / "m" / "config.pbtxt") << R"pb(
    name: "m"
    max_batch_size: 8
    slo_ms: 100
    input {
      name: "x"
      data_type: TYPE_FP32
      dims: [ -1, 4 ]
    }
    output {
      name: "y"
      data_type: TYPE_FP32
      dims: [ -1, 2 ]
    })pb";
  ModelProfile profile = testing::LinearProfile("m", 2, 1, 8);
  profile.set_device_kind("cpu");
  ASSERT_TRUE(
      WriteTextProto((root / "profiles" / "cpu" / "m.pbtxt").string(), profile)
          .ok());
  auto repo = ModelRepository::Load((root / "models").string());
  ASSERT_TRUE(repo.ok()) << repo.status();

  NodeInfo node;
  node.set_backend_id("b0");
  DeviceInfo* cpu = node.add_devices();
  cpu->set_device_id("cpu0");
  cpu->set_kind(DEVICE_KIND_CPU);
  cpu->set_num_cores(2);
  auto profiles = ProfileStore::Load((root / "profiles").string(), **repo);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  EXPECT_EQ(profiles->size(), 1);
  ClusterSnapshot snapshot =
      BuildClusterSnapshot({node}, **repo, *profiles, Plan(), absl::Now());

  ASSERT_EQ(snapshot.devices.size(), 1u);
  EXPECT_EQ(snapshot.devices[0].backend_id, "b0");
  EXPECT_EQ(snapshot.devices[0].profile_key, "cpu");
  // Two cores: partitions of one or two cores only.
  EXPECT_EQ(snapshot.devices[0].allowed_shares, (std::vector<double>{50, 100}));
  ASSERT_EQ(snapshot.models.size(), 1u);
  EXPECT_EQ(snapshot.models[0].profiles.count("cpu"), 1u);

  // Emulated profiles are scaled by the cluster's time scale.
  fs::create_directories(root / "profiles" / "emulated");
  ASSERT_TRUE(
      WriteTextProto((root / "profiles" / "emulated" / "m.pbtxt").string(),
                     profile)
          .ok());
  auto scaled = ProfileStore::Load((root / "profiles").string(), **repo, 10);
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  EXPECT_DOUBLE_EQ(
      scaled->ProfilesOf("m").at("emulated").latency(0).latency_ms(),
      10 * profile.latency(0).latency_ms());
  EXPECT_DOUBLE_EQ(scaled->ProfilesOf("m").at("cpu").latency(0).latency_ms(),
                   profile.latency(0).latency_ms());

  // A profile that does not parse is an error naming its file, at load.
  std::ofstream(root / "profiles" / "cpu" / "m.pbtxt") << "latency { oops";
  auto broken = ProfileStore::Load((root / "profiles").string(), **repo);
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(broken.status().message().find("cpu/m.pbtxt"), std::string::npos)
      << broken.status();

  // A profile-based policy can plan from it.
  snapshot.models[0].rate_rps = 50;
  PolicyOptions options;
  auto policy = PolicyRegistry::Create("greedy", options);
  ASSERT_TRUE(policy.ok());
  auto plan = (*policy)->Schedule(snapshot);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const DevicePlan& d : plan->devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      EXPECT_TRUE(g.share_percent() == 50 || g.share_percent() == 100)
          << g.share_percent();
    }
  }
  fs::remove_all(root);
}

TEST(ClusterSnapshotBuilderTest, NoProfileDirMeansNoProfiles) {
  const fs::path root = fs::path(::testing::TempDir()) /
                        ("snapshot_none_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "m");
  std::ofstream(root / "m" / "config.pbtxt") << R"pb(
    name: "m"
    max_batch_size: 1
    slo_ms: 1
    input {
      name: "x"
      data_type: TYPE_FP32
      dims: [ -1 ]
    }
    output {
      name: "y"
      data_type: TYPE_FP32
      dims: [ -1 ]
    })pb";
  auto repo = ModelRepository::Load(root.string());
  ASSERT_TRUE(repo.ok());
  auto profiles = ProfileStore::Load("", **repo);
  ASSERT_TRUE(profiles.ok());
  ClusterSnapshot s =
      BuildClusterSnapshot({}, **repo, *profiles, Plan(), absl::Now());
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_TRUE(s.models[0].profiles.empty());
  EXPECT_TRUE(s.devices.empty());
  fs::remove_all(root);
}

}  // namespace
}  // namespace tessera
