// RepositoryControl over a coordinator of in-memory backends: load and
// unload wait for a plan that honours them, refuse what the policy cannot
// plan, and give up at their deadline with the request standing.
#include "frontend/repository_control.h"

#include "frontend/control_loops.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/plan_ids.h"
#include "tests/frontend/fake_backend.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// Refuses to plan a cluster without models.
class NeedsAModel final : public SchedulingPolicy {
 public:
  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& s) const override {
    if (s.models.empty()) return absl::ResourceExhaustedError("no models");
    return testing::OneGpuletPerBackend("needs").Schedule(s);
  }
  std::string name() const override { return "needs-a-model"; }
};

class RepositoryControlTest : public testing::PlanCoordinatorFixture {
 protected:
  void SetUp() override {
    PlanCoordinatorFixture::SetUp();
    coordinator_ = MakeCoordinator(1);
    ASSERT_TRUE(coordinator_->PlanAndApply("initial plan").ok());
    control_ = std::make_unique<RepositoryControl>(
        RepositoryControl::Deps{repo_.get(), &unloaded_, coordinator_.get(),
                                trigger_.get(), RealClock::Get()});
  }

  // The planner thread: makes the plans the control asks for.
  std::unique_ptr<ControlLoops> StartPlanner() {
    std::vector<BackendControl*> controls;
    for (auto& b : backends_) controls.push_back(b.get());
    auto loops = std::make_unique<ControlLoops>(
        ControlLoops::Options{absl::Hours(1), absl::Milliseconds(10),
                              absl::Milliseconds(10)},
        ControlLoops::Deps{coordinator_.get(), trigger_.get(), &monitor_,
                           &router_, controls, RealClock::Get()});
    loops->Start();
    return loops;
  }

  std::unique_ptr<PlanCoordinator> coordinator_;
  std::unique_ptr<RepositoryControl> control_;
};

TEST_F(RepositoryControlTest, UnloadAndLoadReturnOnceAPlanHonoursThem) {
  auto planner = StartPlanner();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ASSERT_TRUE(control_->UnloadModel("m", deadline).ok());
  EXPECT_TRUE(control_->IsUnloaded("m"));
  EXPECT_FALSE(PlanServes(coordinator_->current_plan(), "m"));
  EXPECT_THAT(coordinator_->current_plan().reason(),
              HasSubstr("model 'm' unloaded"));
  ASSERT_TRUE(control_->LoadModel("m", deadline).ok());
  EXPECT_FALSE(control_->IsUnloaded("m"));
  EXPECT_TRUE(PlanServes(coordinator_->current_plan(), "m"));
  planner->Stop();
}

TEST_F(RepositoryControlTest, UnknownModelsAreNotFound) {
  const absl::Status s =
      control_->UnloadModel("nope", absl::Now() + absl::Seconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(control_->IsUnloaded("nope"));
}

TEST_F(RepositoryControlTest, NoPlanInTimeLeavesTheRequestStanding) {
  // Nobody plans: the deadline passes, the model stays marked unloaded for
  // the next plan, and a re-plan was asked for.
  const absl::Status s =
      control_->UnloadModel("m", absl::Now() + absl::Milliseconds(100));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("the request stands"));
  EXPECT_TRUE(control_->IsUnloaded("m"));
  EXPECT_EQ(trigger_->Pending(), "model 'm' unloaded");
}

TEST_F(RepositoryControlTest, AChangeThePolicyCannotPlanIsRefusedAndUndone) {
  coordinator_->SetPolicy(std::make_shared<NeedsAModel>());
  const absl::Status s =
      control_->UnloadModel("m", absl::Now() + absl::Seconds(30));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("policy 'needs-a-model' cannot plan the cluster "
                        "without it (no models)"));
  EXPECT_FALSE(control_->IsUnloaded("m"));
}

TEST_F(RepositoryControlTest, AStoppedControlAnswersUnavailable) {
  control_->Stop();
  const absl::Status s =
      control_->LoadModel("m", absl::Now() + absl::Seconds(30));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera
