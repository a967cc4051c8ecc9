// The profiler on real CPU partitions with the shipped lenet: an
// interrupted run (kill -9 mid-way) resumed ends with the same cells as an
// uninterrupted one, and the profiles it writes are readable by the
// scheduler's latency model.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "common/text_proto.h"
#include "gtest/gtest.h"
#include "perfmodel/latency_model.h"
#include "profile.pb.h"
#include "tools/profiler.h"

namespace tessera {
namespace {

const std::string kBin = TESSERA_BIN_DIR;
const std::string kModels = TESSERA_MODEL_DIR;

std::vector<std::string> ProfilerArgs(const std::string& out) {
  return {kBin + "/tessera_profiler",
          "--model_repository=" + kModels,
          "--models=lenet",
          "--batches=1,4",
          "--runs=5",
          "--warmup=1",
          "--out=" + out};
}

std::set<std::string> CellKeys(const std::string& progress) {
  auto cells = Profiler::ReadProgress(progress);
  EXPECT_TRUE(cells.ok());
  std::set<std::string> keys;
  for (const auto& c : *cells) {
    EXPECT_TRUE(keys.insert(c.Key()).second) << "measured twice: " << c.Key();
    EXPECT_GT(c.latency_ms, 0) << c.Key();
  }
  return keys;
}

absl::StatusOr<int> RunToEnd(const std::vector<std::string>& argv) {
  Subprocess::Options o;
  o.argv = argv;
  auto p = Subprocess::Spawn(o);
  if (!p.ok()) return p.status();
  return (*p)->Wait(absl::Seconds(600));
}

TEST(ProfilerTest, KilledRunResumesToTheSameCells) {
  if (!std::filesystem::exists(kModels + "/lenet/1/model.pt")) {
    GTEST_SKIP() << "models not generated (scripts/setup.sh)";
  }
  const std::string root =
      ::testing::TempDir() + "/profiler_" + std::to_string(getpid());
  std::filesystem::remove_all(root);

  // Uninterrupted.
  auto whole = RunToEnd(ProfilerArgs(root + "/a"));
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(*whole, 0);
  const std::set<std::string> expected = CellKeys(root + "/a/cpu/progress.csv");
  ASSERT_GE(expected.size(), 2u);

  // Killed once some cells are in, then resumed.
  Subprocess::Options o;
  o.argv = ProfilerArgs(root + "/b");
  auto p = Subprocess::Spawn(o);
  ASSERT_TRUE(p.ok());
  const std::string progress = root + "/b/cpu/progress.csv";
  const absl::Time deadline = absl::Now() + absl::Seconds(300);
  size_t seen = 0;
  while (absl::Now() < deadline && (*p)->Running()) {
    auto cells = Profiler::ReadProgress(progress);
    seen = cells.ok() ? cells->size() : 0;
    if (seen >= 1) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_GE(seen, 1u);
  ::kill((*p)->pid(), SIGKILL);
  (void)(*p)->Wait(absl::Seconds(10));
  const size_t before = CellKeys(progress).size();
  ASSERT_LT(before, expected.size()) << "the run finished before the kill";

  auto resumed = RunToEnd(ProfilerArgs(root + "/b"));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_EQ(*resumed, 0);
  EXPECT_EQ(CellKeys(progress), expected);

  // Both wrote a profile with the same cells, which the scheduler reads.
  ModelProfile a, b;
  ASSERT_TRUE(ReadTextProto(root + "/a/cpu/lenet.pbtxt", &a).ok());
  ASSERT_TRUE(ReadTextProto(root + "/b/cpu/lenet.pbtxt", &b).ok());
  ASSERT_EQ(a.latency_size(), b.latency_size());
  for (int i = 0; i < a.latency_size(); ++i) {
    EXPECT_EQ(a.latency(i).batch_size(), b.latency(i).batch_size());
    EXPECT_EQ(a.latency(i).share_percent(), b.latency(i).share_percent());
  }
  auto model = LatencyModel::FromProfile(b);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_GT(model->LatencyMs(4, 100), 0);
  EXPECT_GT(b.memory_bytes(), 1 << 20);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace tessera
