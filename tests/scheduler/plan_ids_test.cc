#include "scheduler/plan_ids.h"

#include "common/text_proto.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

Plan MakePlan(const std::string& text) {
  Plan plan;
  EXPECT_TRUE(ParseTextProto(text, &plan).ok()) << text;
  return plan;
}

// An unload: a gpulet that is a current one less some models keeps its id
// (its proxy drops them in place); an exact match is never taken by it,
// and a gpulet that also changed share is new.
TEST(AssignGpuletIdsTest, AGpuletLessSomeModelsKeepsItsId) {
  const Plan current = MakePlan(R"pb(
    epoch: 3
    devices {
      backend_id: "b0"
      device_id: "cpu0"
      gpulets {
        gpulet_id: "ab"
        share_percent: 50
        models { model: "a" }
        models { model: "b" }
      }
      gpulets {
        gpulet_id: "cd"
        share_percent: 50
        models { model: "c" }
        models { model: "d" }
      }
    }
  )pb");
  Plan next = MakePlan(R"pb(
    epoch: 4
    devices {
      backend_id: "b0"
      device_id: "cpu0"
      gpulets {
        share_percent: 50
        models { model: "b" }
      }
      gpulets {
        share_percent: 40
        models { model: "c" }
      }
    }
  )pb");
  EXPECT_EQ(NewGpulets(current, next), (std::vector<bool>{false, true}));
  EXPECT_EQ(AssignGpuletIds(current, &next), 1);
  EXPECT_EQ(next.devices(0).gpulets(0).gpulet_id(), "ab");
  EXPECT_EQ(next.devices(0).gpulets(1).gpulet_id(), "b0/cpu0/e4.1");
}

TEST(AssignGpuletIdsTest, UnchangedGpuletsKeepIdsChangedOnesGetFreshIds) {
  const Plan current = MakePlan(R"pb(
    epoch: 1
    devices {
      backend_id: "b0"
      device_id: "gpu0"
      gpulets {
        gpulet_id: "x"
        share_percent: 50
        models { model: "m1" batch_size: 4 }
      }
      gpulets {
        gpulet_id: "y"
        share_percent: 50
        models { model: "m2" }
      }
    }
  )pb");
  Plan next = MakePlan(R"pb(
    epoch: 2
    devices {
      backend_id: "b0"
      device_id: "gpu0"
      # Same process as "x" (the batch size may change in place).
      gpulets {
        gpulet_id: "p0"
        share_percent: 50
        models { model: "m1" batch_size: 8 }
      }
      # Was "y" at 50%: a new share needs a new process and a new id, even
      # though the policy named it "y".
      gpulets {
        gpulet_id: "y"
        share_percent: 40
        models { model: "m2" }
      }
    }
    devices {
      backend_id: "b0"
      device_id: "gpu1"
      # Same share and model as "x" but another device: new (and after
      # the first plan new ids are never the policy's: no reuse).
      gpulets {
        gpulet_id: "p2"
        share_percent: 50
        models { model: "m1" }
      }
    }
  )pb");
  EXPECT_EQ(NewGpulets(current, next), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(AssignGpuletIds(current, &next), 2);
  EXPECT_EQ(next.devices(0).gpulets(0).gpulet_id(), "x");
  EXPECT_EQ(next.devices(0).gpulets(1).gpulet_id(), "b0/gpu0/e2.1");
  EXPECT_EQ(next.devices(1).gpulets(0).gpulet_id(), "b0/gpu1/e2.2");
}

TEST(AssignGpuletIdsTest, AnotherSchedulerGetsAFreshId) {
  const Plan current = MakePlan(R"pb(
    epoch: 1
    devices {
      backend_id: "b0"
      device_id: "gpu0"
      gpulets {
        gpulet_id: "g"
        share_percent: 100
        models { model: "m1" }
        scheduler: GPULET_SCHEDULER_ABACUS
      }
    }
  )pb");
  Plan next = MakePlan(R"pb(
    epoch: 2
    devices {
      backend_id: "b0"
      device_id: "gpu0"
      gpulets {
        gpulet_id: "p0"
        share_percent: 100
        models { model: "m1" }
        scheduler: GPULET_SCHEDULER_FCFS
      }
    }
  )pb");
  EXPECT_EQ(AssignGpuletIds(current, &next), 1);
  EXPECT_NE(next.devices(0).gpulets(0).gpulet_id(), "g");
}

TEST(AssignGpuletIdsTest, FirstPlanKeepsPolicyIdsAndFixesDuplicates) {
  Plan next = MakePlan(R"pb(
    epoch: 1
    devices {
      backend_id: "b0"
      device_id: "cpu0"
      gpulets {
        gpulet_id: "a"
        share_percent: 50
        models { model: "m1" }
      }
      gpulets {
        gpulet_id: "a"
        share_percent: 50
        models { model: "m2" }
      }
    }
  )pb");
  EXPECT_EQ(AssignGpuletIds(Plan(), &next), 2);
  EXPECT_EQ(next.devices(0).gpulets(0).gpulet_id(), "a");
  EXPECT_EQ(next.devices(0).gpulets(1).gpulet_id(), "b0/cpu0/e1.2");
}

}  // namespace
}  // namespace tessera
