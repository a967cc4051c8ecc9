#include "backend/gpulet_table.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backend/fake_proxy.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using testing::FakeProxy;
using ::testing::IsEmpty;

GpuletEntry Entry(const std::string& id, const std::string& device,
                  std::shared_ptr<Proxy> proxy) {
  GpuletEntry e;
  e.spec.plan.set_gpulet_id(id);
  e.spec.device_id = device;
  e.proxy = std::move(proxy);
  return e;
}

std::vector<std::string> Ids(const std::vector<GpuletEntry>& entries) {
  std::vector<std::string> ids;
  for (const GpuletEntry& e : entries) ids.push_back(e.id());
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(GpuletTableTest, SwitchRetiresDroppedAndReplacesChangedGpulets) {
  auto a = std::make_shared<FakeProxy>("a");
  auto b = std::make_shared<FakeProxy>("b");
  auto c = std::make_shared<FakeProxy>("c");
  GpuletTable table;
  table.Switch({Entry("a", "d0", a), Entry("b", "d0", b), Entry("c", "d0", c)});

  // The next plan keeps a, gives b a new proxy and drops c.
  auto b2 = std::make_shared<FakeProxy>("b");
  table.Switch({Entry("a", "d0", a), Entry("b", "d0", b2)});

  EXPECT_EQ(table.Find("a").proxy, a);
  EXPECT_EQ(table.Find("b").proxy, b2);  // the old b is no longer routable
  EXPECT_EQ(table.Find("c").proxy, c);   // retiring: still routable
  auto routable = table.Routable();
  EXPECT_EQ(routable.at("a").state, GpuletState::kServing);
  EXPECT_EQ(routable.at("c").state, GpuletState::kRetiring);
  EXPECT_EQ(table.num_proxies(), 4);  // a, b, b2, c

  // The commit takes the old b and c; a and b2 serve on.
  std::vector<GpuletEntry> retired = table.TakeRetired();
  EXPECT_THAT(Ids(retired), ElementsAre("b", "c"));
  for (const GpuletEntry& e : retired) {
    EXPECT_TRUE(e.proxy == b || e.proxy == c);
  }
  EXPECT_EQ(table.Find("c").proxy, nullptr);
  EXPECT_EQ(table.num_proxies(), 2);
  EXPECT_THAT(table.TakeRetired(), IsEmpty());
}

TEST(GpuletTableTest, ReadyWhileEveryServingProxyLivesAndListsTheExited) {
  GpuletTable table;
  EXPECT_FALSE(table.Ready());  // nothing to route to
  auto a = std::make_shared<FakeProxy>("a");
  auto b = std::make_shared<FakeProxy>("b");
  table.Switch({Entry("a", "d0", a), Entry("b", "d0", b)});
  EXPECT_TRUE(table.Ready());
  EXPECT_THAT(table.Exited(), IsEmpty());

  a->Stop(absl::ZeroDuration());
  EXPECT_FALSE(table.Ready());
  EXPECT_THAT(table.Exited(), ElementsAre("a"));

  // A plan without a: it retires (not restarted, not counted), b serves.
  table.Switch({Entry("b", "d0", b)});
  EXPECT_TRUE(table.Ready());
  EXPECT_THAT(table.Exited(), IsEmpty());
  // Only retiring gpulets left: routable while they drain.
  b->Stop(absl::ZeroDuration());
  EXPECT_THAT(table.Exited(), ElementsAre("b"));
  table.Switch({});
  EXPECT_TRUE(table.Ready());
  EXPECT_THAT(table.Exited(), IsEmpty());
}

TEST(GpuletTableTest, RetiringGpuletReturnsToServiceWhenAPlanKeepsIt) {
  auto a = std::make_shared<FakeProxy>("a");
  GpuletTable table;
  table.Switch({Entry("a", "d0", a)});
  table.Switch({});
  EXPECT_EQ(table.Routable().at("a").state, GpuletState::kRetiring);
  table.Switch({Entry("a", "d0", a)});
  EXPECT_EQ(table.Routable().at("a").state, GpuletState::kServing);
  EXPECT_THAT(table.TakeRetired(), IsEmpty());
  EXPECT_EQ(table.num_proxies(), 1);
}

TEST(GpuletTableTest, StopFirstMarksTakenGpuletsUntilTheCommit) {
  auto a = std::make_shared<FakeProxy>("a");
  auto b = std::make_shared<FakeProxy>("b");
  auto other = std::make_shared<FakeProxy>("x");
  GpuletTable table;
  table.Switch(
      {Entry("a", "d0", a), Entry("b", "d0", b), Entry("x", "d1", other)});

  // Device d0 is too small for shadows; b is kept, a is taken.
  std::vector<GpuletEntry> taken = table.TakeForStopFirst("d0", {"b"});
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].proxy, a);
  GpuletTable::Route route = table.Find("a");
  EXPECT_EQ(route.proxy, nullptr);
  EXPECT_TRUE(route.stopped_for_swap);
  EXPECT_EQ(table.Find("b").proxy, b);
  EXPECT_EQ(table.Find("x").proxy, other);

  // The new a serves; the marker stays until the commit.
  auto a2 = std::make_shared<FakeProxy>("a");
  table.Switch(
      {Entry("a", "d0", a2), Entry("b", "d0", b), Entry("x", "d1", other)});
  route = table.Find("a");
  EXPECT_EQ(route.proxy, a2);
  EXPECT_TRUE(route.stopped_for_swap);
  EXPECT_THAT(table.TakeRetired(), IsEmpty());
  EXPECT_FALSE(table.Find("a").stopped_for_swap);
  EXPECT_EQ(table.num_proxies(), 3);
}

TEST(GpuletTableTest, ABatchWithNoProxyIsRefusedUnavailableSayingWhy) {
  GpuletTable table;
  table.Switch({Entry("a", "d0", std::make_shared<FakeProxy>("a"))});
  (void)table.TakeForStopFirst("d0", {});
  BatchRequest batch;
  batch.set_gpulet_id("a");
  batch.set_batch_id(9);
  const BatchResponse swapped = table.Find("a").Refusal(batch, "b0");
  EXPECT_EQ(swapped.batch_id(), 9);
  EXPECT_TRUE(swapped.gpulet_stopped());
  EXPECT_EQ(swapped.status().code(),
            static_cast<int>(absl::StatusCode::kUnavailable));
  EXPECT_THAT(swapped.status().message(),
              ::testing::HasSubstr("stop-then-start swap"));
  batch.set_gpulet_id("nope");
  const BatchResponse unknown = table.Find("nope").Refusal(batch, "b0");
  EXPECT_FALSE(unknown.gpulet_stopped());
  EXPECT_EQ(unknown.status().code(),
            static_cast<int>(absl::StatusCode::kUnavailable));
  EXPECT_THAT(unknown.status().message(),
              ::testing::HasSubstr("is not served by backend 'b0'"));
}

TEST(GpuletTableTest, StopFirstTakesReplacedProxiesOnTheDevice) {
  auto a = std::make_shared<FakeProxy>("a");
  auto a2 = std::make_shared<FakeProxy>("a");
  GpuletTable table;
  table.Switch({Entry("a", "d0", a)});
  table.Switch({Entry("a", "d0", a2)});  // a replaced, not yet committed
  std::vector<GpuletEntry> taken = table.TakeForStopFirst("d0", {"a"});
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].proxy, a);
  EXPECT_EQ(table.Find("a").proxy, a2);
  EXPECT_FALSE(table.Find("a").stopped_for_swap);
  EXPECT_EQ(table.num_proxies(), 1);
}

TEST(GpuletTableTest, TakeAllEmptiesTheTable) {
  GpuletTable table;
  table.Switch({Entry("a", "d0", std::make_shared<FakeProxy>("a"))});
  table.Switch({Entry("b", "d0", std::make_shared<FakeProxy>("b"))});
  EXPECT_THAT(Ids(table.TakeAll()), ElementsAre("a", "b"));
  EXPECT_EQ(table.num_proxies(), 0);
  EXPECT_EQ(table.Find("b").proxy, nullptr);
}

}  // namespace
}  // namespace tessera
