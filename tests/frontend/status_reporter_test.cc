// StatusReporter over a coordinator of in-memory backends: readiness, the
// admin status and the Prometheus gauges follow the plan and the
// backends' heartbeats.
#include "frontend/status_reporter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/frontend/fake_backend.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

class StatusReporterTest : public testing::PlanCoordinatorFixture {
 protected:
  StatusReporter MakeReporter(const PlanCoordinator* coordinator) {
    return StatusReporter({coordinator, trigger_.get(), &monitor_, &router_,
                           &admission_, &metrics_});
  }

  BacklogBound backlog_{RealClock::Get()};
  AdmissionControl admission_{AdmissionControl::Options(), &backlog_};
  FrontendMetrics metrics_;
};

TEST_F(StatusReporterTest, ReadyWithAPlanAndEveryBackendAnswering) {
  auto coordinator = MakeCoordinator(2);
  const StatusReporter reporter = MakeReporter(coordinator.get());
  EXPECT_FALSE(reporter.Ready());  // no plan yet
  ASSERT_TRUE(coordinator->PlanAndApply("initial plan").ok());
  EXPECT_TRUE(reporter.Ready());
  for (int i = 0; i < 3; ++i) {
    trigger_->OnHeartbeat("b1", absl::UnavailableError("down"), 0, 0);
  }
  EXPECT_FALSE(reporter.Ready());
}

TEST_F(StatusReporterTest, StatusAndMetricsDescribeThePlanInForce) {
  auto coordinator = MakeCoordinator(2);
  ASSERT_TRUE(coordinator->PlanAndApply("initial plan").ok());
  for (int i = 0; i < 3; ++i) {
    trigger_->OnHeartbeat("b1", absl::UnavailableError("down"), 0, 0);
  }
  const StatusReporter reporter = MakeReporter(coordinator.get());
  const AdminStatus status = reporter.Status();
  EXPECT_EQ(status.policy(), "first");
  EXPECT_EQ(status.plan().epoch(), 1);
  EXPECT_EQ(status.plans_installed(), 1);
  EXPECT_EQ(status.plan_failures(), 0);
  EXPECT_EQ(status.planned_rates_rps().at("m"), 1);
  EXPECT_TRUE(status.backends_up().at("b0"));
  EXPECT_FALSE(status.backends_up().at("b1"));

  const std::string text = reporter.RenderMetrics();
  EXPECT_THAT(text, HasSubstr("tessera_frontend_plan_epoch 1\n"));
  EXPECT_THAT(text, HasSubstr("tessera_frontend_plans_installed_total 1\n"));
  EXPECT_THAT(text,
              HasSubstr("tessera_frontend_backend_up{backend=\"b0\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("tessera_frontend_backend_up{backend=\"b1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("tessera_frontend_gpulet_share_percent{"
                              "backend=\"b0\",device=\"cpu0\""));
}

}  // namespace
}  // namespace tessera
