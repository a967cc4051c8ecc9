// Operator groups through a real proxy process (LibTorch): a query run by
// ranges over two groups, beside another model's query, answers what the
// whole model answers for the same inputs. On the cpu device here; on cuda
// (a stream per query) where a GPU and a CUDA build of the proxy exist.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "backend/proxy_handle.h"
#include "common/status_proto.h"
#include "common/text_proto.h"
#include "gtest/gtest.h"
#include "tests/integration/local_cluster.h"

namespace tessera {
namespace {

const std::string kBin = TESSERA_BIN_DIR;
const std::string kModels = TESSERA_MODEL_DIR;

BatchRequest RandomBatch(const ModelConfig& config, int batch, uint64_t id) {
  std::mt19937 rng(static_cast<uint32_t>(id));
  BatchRequest b;
  b.set_batch_id(id);
  b.set_model(config.name());
  for (const TensorConfig& t : config.input()) {
    Tensor* in = b.add_inputs();
    in->set_name(t.name());
    in->set_data_type(t.data_type());
    in->add_shape(batch);
    int64_t n = batch;
    for (int d = 1; d < t.dims_size(); ++d) {
      in->add_shape(t.dims(d));
      n *= t.dims(d);
    }
    std::string* data = in->mutable_data();
    if (t.data_type() == TYPE_FP32) {
      std::normal_distribution<float> normal;
      for (int64_t i = 0; i < n; ++i) {
        const float v = normal(rng);
        data->append(reinterpret_cast<const char*>(&v), sizeof v);
      }
    } else if (t.data_type() == TYPE_INT64) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = rng() % 1000;
        data->append(reinterpret_cast<const char*>(&v), sizeof v);
      }
    } else {  // INT32 attention mask
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = 1;
        data->append(reinterpret_cast<const char*>(&v), sizeof v);
      }
    }
  }
  return b;
}

std::vector<float> Floats(const Tensor& t) {
  std::vector<float> v(t.data().size() / sizeof(float));
  std::memcpy(v.data(), t.data().data(), v.size() * sizeof(float));
  return v;
}

void ExpectClose(const BatchResponse& whole, const BatchResponse& ranges,
                 double tolerance) {
  ASSERT_EQ(whole.outputs_size(), ranges.outputs_size());
  for (int o = 0; o < whole.outputs_size(); ++o) {
    EXPECT_EQ(std::vector<int64_t>(whole.outputs(o).shape().begin(),
                                   whole.outputs(o).shape().end()),
              std::vector<int64_t>(ranges.outputs(o).shape().begin(),
                                   ranges.outputs(o).shape().end()));
    const std::vector<float> a = Floats(whole.outputs(o));
    const std::vector<float> b = Floats(ranges.outputs(o));
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i], b[i], tolerance * (1 + std::fabs(a[i])))
          << whole.outputs(o).name() << "[" << i << "]";
    }
  }
}

// A proxy of `bin` on `kind` that runs `served` by operator groups.
ProxyHandle::Options GroupProxyOptions(const std::string& bin,
                                       const std::string& models,
                                       DeviceKind kind, const std::string& id,
                                       const std::vector<ModelConfig>& served) {
  ProxyHandle::Options options;
  options.proxy_binary = bin + "/tessera_proxy";
  options.config.set_model_repository(models);
  options.config.set_gpulet_id(id);
  options.config.set_device_id(kind == DEVICE_KIND_CUDA ? "gpu0" : "cpu0");
  options.config.set_device_kind(kind);
  options.config.set_warmup_runs(1);
  options.config.set_operator_groups(true);
  for (const ModelConfig& m : served) *options.config.add_models() = m;
  options.startup_timeout = absl::Seconds(120);
  return options;
}

GroupResponse RunGroup(ProxyHandle* proxy,
                       std::vector<GroupMemberRequest> members) {
  absl::Notification done;
  GroupResponse response;
  proxy->ExecuteGroup(std::move(members), [&](GroupResponse r) {
    response = std::move(r);
    done.Notify();
  });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  return response;
}

// The proxy binary in `bin`, the models in `models`, on `kind`; outputs
// equal to within `tolerance` (relative).
void RangesInGroupsAnswerWhatTheWholeModelAnswers(const std::string& bin,
                                                  const std::string& models,
                                                  DeviceKind kind,
                                                  double tolerance) {
  ModelConfig lenet, bert;
  ASSERT_TRUE(ReadTextProto(models + "/lenet/config.pbtxt", &lenet).ok());
  ASSERT_TRUE(ReadTextProto(models + "/bert_tiny/config.pbtxt", &bert).ok());
  auto proxy = ProxyHandle::Start(GroupProxyOptions(
      bin, models, kind, absl::StrCat("groups-", getpid()), {lenet, bert}));
  ASSERT_TRUE(proxy.ok()) << proxy.status();

  const BatchRequest lenet_q = RandomBatch(lenet, 3, 11);
  const BatchRequest bert_q = RandomBatch(bert, 2, 12);
  auto lenet_whole = (*proxy)->ExecuteAndWait(lenet_q, absl::Seconds(60));
  auto bert_whole = (*proxy)->ExecuteAndWait(bert_q, absl::Seconds(60));
  ASSERT_TRUE(lenet_whole.ok() && bert_whole.ok());
  ASSERT_EQ(lenet_whole->status().code(), 0);
  ASSERT_EQ(bert_whole->status().code(), 0);

  // Round 1: lenet's first two segments beside the whole of bert_tiny.
  GroupResponse first = RunGroup(
      proxy->get(), {{1, 0, 2, &lenet_q, false}, {2, 0, 4, &bert_q, true}});
  ASSERT_TRUE(first.status.ok()) << first.status;
  ASSERT_EQ(first.finished.count(2), 1u);
  EXPECT_EQ(first.finished.count(1), 0u);
  EXPECT_EQ(first.finished[2].batch_id(), 12u);
  ExpectClose(*bert_whole, first.finished[2], tolerance);
  // Round 2: the rest of lenet, from the state the proxy kept.
  GroupResponse second = RunGroup(proxy->get(), {{1, 2, 4, &lenet_q, true}});
  ASSERT_TRUE(second.status.ok()) << second.status;
  ASSERT_EQ(second.finished.count(1), 1u);
  ExpectClose(*lenet_whole, second.finished[1], tolerance);

  // A range that does not continue a query is refused, and the proxy
  // serves on.
  GroupResponse gap = RunGroup(proxy->get(), {{3, 2, 4, &lenet_q, true}});
  EXPECT_EQ(gap.status.code(), absl::StatusCode::kInvalidArgument);
  GroupResponse again = RunGroup(proxy->get(), {{4, 0, 4, &lenet_q, true}});
  ASSERT_TRUE(again.status.ok()) << again.status;
  ExpectClose(*lenet_whole, again.finished[4], tolerance);
}

// A query whose token ids are past bert_tiny's vocabulary throws inside
// TorchScript: its group fails with the error's last line, no traceback
// and no server path, and the proxy serves the next group.
TEST(GroupProxyTest, AModelErrorInAGroupIsShortAndTheProxyServesOn) {
  ModelConfig bert;
  ASSERT_TRUE(ReadTextProto(kModels + "/bert_tiny/config.pbtxt", &bert).ok());
  auto proxy = ProxyHandle::Start(
      GroupProxyOptions(kBin, kModels, DEVICE_KIND_CPU,
                        absl::StrCat("groups-bad-", getpid()), {bert}));
  ASSERT_TRUE(proxy.ok()) << proxy.status();

  BatchRequest bad = RandomBatch(bert, 1, 21);
  ASSERT_EQ(bad.inputs(0).data_type(), TYPE_INT64);
  std::string* ids = bad.mutable_inputs(0)->mutable_data();
  for (size_t i = 0; i + sizeof(int64_t) <= ids->size(); i += sizeof(int64_t)) {
    const int64_t v = int64_t{1} << 40;
    std::memcpy(ids->data() + i, &v, sizeof v);
  }
  GroupResponse failed = RunGroup(proxy->get(), {{1, 0, 4, &bad, true}});
  ASSERT_FALSE(failed.status.ok());
  const std::string message(failed.status.message());
  EXPECT_NE(message.find("bert_tiny"), std::string::npos) << message;
  EXPECT_EQ(message.find("Traceback"), std::string::npos) << message;
  EXPECT_EQ(message.find(".py"), std::string::npos) << message;
  EXPECT_LT(message.size(), 300u) << message;

  const BatchRequest good = RandomBatch(bert, 1, 22);
  GroupResponse served = RunGroup(proxy->get(), {{2, 0, 4, &good, true}});
  EXPECT_TRUE(served.status.ok()) << served.status;
}

TEST(GroupProxyTest, RangesInGroupsAnswerWhatTheWholeModelAnswers) {
  RangesInGroupsAnswerWhatTheWholeModelAnswers(kBin, kModels, DEVICE_KIND_CPU,
                                               /*tolerance=*/1e-4);
}

// Needs a GPU and a CUDA build of the proxy (ctest -L gpu): each member's
// range on a CUDA stream of its own, the intermediate kept on the GPU.
TEST(RealGpuTest, OperatorGroupsOnCudaAnswerWhatTheWholeModelAnswers) {
  if (system("nvidia-smi > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no GPU visible (nvidia-smi failed)";
  }
  RangesInGroupsAnswerWhatTheWholeModelAnswers(
      testing::EnvOr("TESSERA_GPU_BIN_DIR", kBin),
      testing::EnvOr("TESSERA_GPU_MODEL_DIR", kModels), DEVICE_KIND_CUDA,
      /*tolerance=*/1e-3);  // the same kernels need not run at every shape
}

}  // namespace
}  // namespace tessera
