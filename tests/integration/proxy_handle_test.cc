// ProxyHandle against a real emulated proxy process: the synchronous
// ExecuteAndWait the profiler and the benchmarks use.
#include "backend/proxy_handle.h"

#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/text_proto.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

const std::string kBin = TESSERA_BIN_DIR;
const std::string kRoot = TESSERA_SOURCE_DIR;

// The config of an emulated model shipped in configs/emulated/models.
ModelConfig EmulatedConfig(const std::string& model) {
  ModelConfig config;
  EXPECT_TRUE(ReadTextProto(absl::StrCat(kRoot, "/configs/emulated/models/",
                                         model, "/config.pbtxt"),
                            &config)
                  .ok());
  return config;
}

// An emulated proxy serving `configs` on a whole V100 at `time_scale`.
ProxyHandle::Options EmulatedProxy(const std::string& name,
                                   const std::vector<ModelConfig>& configs,
                                   double time_scale) {
  ProxyHandle::Options options;
  options.proxy_binary = kBin + "/tessera_emulated_proxy";
  options.config.set_model_repository(kRoot + "/configs/emulated/models");
  options.config.set_gpulet_id(absl::StrCat(name, "-", getpid()));
  options.config.set_device_id("gpu0");
  options.config.set_device_kind(DEVICE_KIND_EMULATED);
  for (const ModelConfig& c : configs) *options.config.add_models() = c;
  options.config.mutable_emulated()->set_profile_dir(kRoot + "/profiles");
  options.config.mutable_emulated()->set_share_percent(100);
  options.config.mutable_emulated()->set_time_scale(time_scale);
  options.startup_timeout = absl::Seconds(30);
  return options;
}

// A shape-only batch of one item for `config`'s model.
BatchRequest OneItem(const ModelConfig& config) {
  BatchRequest batch;
  batch.set_model(config.name());
  batch.set_shape_only(true);
  for (const TensorConfig& t : config.input()) {
    Tensor* in = batch.add_inputs();
    in->set_name(t.name());
    in->set_data_type(t.data_type());
    in->add_shape(1);
    for (int d = 1; d < t.dims_size(); ++d) in->add_shape(t.dims(d));
  }
  return batch;
}

// vgg16 at batch 1 takes 7 ms on a whole emulated V100; time_scale 40
// makes it 280 ms, far longer than the short timeout below.
TEST(ProxyHandleTest, ExecuteAndWaitAnswersOrTimesOut) {
  const ModelConfig config = EmulatedConfig("vgg16");
  auto handle =
      ProxyHandle::Start(EmulatedProxy("handle-test", {config}, /*scale=*/40));
  ASSERT_TRUE(handle.ok()) << handle.status();
  const BatchRequest batch = OneItem(config);

  auto answered = (*handle)->ExecuteAndWait(batch, absl::Seconds(60));
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_EQ(answered->status().code(), 0) << answered->status().message();
  EXPECT_GE(answered->exec_time_us(), 100000);  // 7 ms x 40, less noise

  auto late = (*handle)->ExecuteAndWait(batch, absl::Milliseconds(5));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded)
      << late.status();
  // The batch that was not waited for still completes.
  EXPECT_TRUE((*handle)->Drain(absl::Seconds(60)));
}

// DropModels (an unload that keeps the gpulet's proxy): the dropped model's
// batches fail with UNAVAILABLE naming the unload, and the other model
// serves on in the same process.
TEST(ProxyHandleTest, DroppedModelsAreRefusedAndTheOthersServeOn) {
  const ModelConfig lenet = EmulatedConfig("lenet");
  const ModelConfig googlenet = EmulatedConfig("googlenet");
  auto handle = ProxyHandle::Start(
      EmulatedProxy("drop-test", {lenet, googlenet}, /*scale=*/1));
  ASSERT_TRUE(handle.ok()) << handle.status();
  const pid_t pid = (*handle)->pid();
  auto run = [&](const ModelConfig& config) {
    return (*handle)->ExecuteAndWait(OneItem(config), absl::Seconds(30));
  };
  ASSERT_EQ(run(lenet)->status().code(), 0);
  (*handle)->DropModels({"lenet"});
  auto refused = run(lenet);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->status().code(),
            static_cast<int>(absl::StatusCode::kUnavailable));
  EXPECT_NE(refused->status().message().find("unloaded"), std::string::npos)
      << refused->status().message();
  auto served = run(googlenet);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ(served->status().code(), 0) << served->status().message();
  EXPECT_EQ((*handle)->pid(), pid);
  EXPECT_TRUE((*handle)->alive());
}

// kill -9 of the proxy: the batches sent after it fail UNAVAILABLE and the
// handle says it is not alive as soon as one has failed, whichever notices
// first (the reader's end of file, or a send on the broken socket), so the
// backend treats the batch as one on a dead proxy and routes it again.
TEST(ProxyHandleTest, AKilledProxyFailsBatchesUnavailableAndIsNotAlive) {
  const ModelConfig lenet = EmulatedConfig("lenet");
  auto handle =
      ProxyHandle::Start(EmulatedProxy("kill-test", {lenet}, /*scale=*/1));
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_EQ(::kill((*handle)->pid(), SIGKILL), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (true) {
    auto r = (*handle)->ExecuteAndWait(OneItem(lenet), absl::Seconds(10));
    ASSERT_TRUE(r.ok()) << r.status();
    if (r->status().code() != 0) {
      EXPECT_EQ(r->status().code(),
                static_cast<int>(absl::StatusCode::kUnavailable))
          << r->status().message();
      EXPECT_FALSE((*handle)->alive());
      break;
    }
    ASSERT_LT(absl::Now(), deadline) << "batches still served after kill -9";
  }
}

}  // namespace
}  // namespace tessera
