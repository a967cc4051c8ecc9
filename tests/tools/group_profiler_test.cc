#include "tools/group_profiler.h"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "gtest/gtest.h"

namespace tessera {
namespace {

const ServiceCatalog& Catalog() {
  static const ServiceCatalog* c =
      new ServiceCatalog({{"a", 10, false}, {"b", 6, false}, {"c", 4, false}});
  return *c;
}

std::string TempFile(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

// A device where a group takes 1 ms per operator of its longest range.
struct FakeDevice {
  int runs = 0;
  absl::StatusOr<double> operator()(const OperatorGroup& g) {
    ++runs;
    double ms = 0;
    for (const GroupMember& m : g)
      ms = std::max<double>(ms, m.end_op - m.start_op);
    return ms;
  }
};

TEST(GroupProfilerTest, ResumesWhereAnInterruptedProfileStopped) {
  GroupProfilerOptions o;
  o.max_group_size = 2;
  o.runs = 3;
  o.samples_file = TempFile("resume.txt");
  o.fresh = true;
  o.groups_per_size = 4;
  FakeDevice first;
  auto partial = ProfileGroupsResumable(
      Catalog(), o, [&](const OperatorGroup& g) { return first(g); });
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ(first.runs, 8 * 4);  // a warm-up and 3 runs per group

  // An interruption cut the last line: it is measured again.
  {
    std::ifstream in(o.samples_file);
    std::string all((std::istreambuf_iterator<char>(in)), {});
    all.resize(all.size() - 5);
    std::ofstream(o.samples_file, std::ios::trunc) << all;
  }
  // Resumed with more groups: only the missing ones are measured.
  o.fresh = false;
  o.groups_per_size = 6;
  int progress_calls = 0, last_done = -1, last_total = -1;
  o.progress = [&](int done, int total) {
    ++progress_calls;
    last_done = done;
    last_total = total;
  };
  FakeDevice second;
  auto resumed = ProfileGroupsResumable(
      Catalog(), o, [&](const OperatorGroup& g) { return second(g); });
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(second.runs, 5 * 4);
  EXPECT_EQ(progress_calls, 1 + 5);
  EXPECT_EQ(last_done, 12);
  EXPECT_EQ(last_total, 12);
  ASSERT_EQ((*resumed)[1].size(), 6u);
  ASSERT_EQ((*resumed)[2].size(), 6u);

  // The same samples as one uninterrupted profile.
  GroupProfilerOptions whole = o;
  whole.samples_file = TempFile("whole.txt");
  whole.fresh = true;
  FakeDevice third;
  auto once = ProfileGroupsResumable(
      Catalog(), whole, [&](const OperatorGroup& g) { return third(g); });
  ASSERT_TRUE(once.ok());
  for (int size = 1; size <= 2; ++size) {
    for (size_t k = 0; k < 6; ++k) {
      EXPECT_EQ((*once)[size][k].features, (*resumed)[size][k].features);
      EXPECT_DOUBLE_EQ((*once)[size][k].latency_ms,
                       (*resumed)[size][k].latency_ms);
    }
  }
}

TEST(GroupProfilerTest, RefusesAForeignSamplesFile) {
  const std::string path = TempFile("foreign.txt");
  std::ofstream(path) << "2 5.0 1 2 3\n7 1.0 1\n";
  GroupProfilerOptions o;
  o.samples_file = path;
  FakeDevice device;
  auto r = ProfileGroupsResumable(
      Catalog(), o, [&](const OperatorGroup& g) { return device(g); });
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  o.samples_file = "";
  EXPECT_FALSE(
      ProfileGroupsResumable(Catalog(), o, [&](const OperatorGroup& g) {
        return device(g);
      }).ok());
}

}  // namespace
}  // namespace tessera
