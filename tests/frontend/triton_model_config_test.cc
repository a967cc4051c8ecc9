#include "frontend/triton_model_config.h"

#include "common/text_proto.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(TritonModelConfigTest, TritonTypesAndDimsWithoutTheBatch) {
  ModelConfig config;
  ASSERT_TRUE(ParseTextProto(R"pb(
                               name: "bert"
                               platform: "torchscript"
                               max_batch_size: 16
                               slo_ms: 200
                               input {
                                 name: "ids"
                                 data_type: TYPE_INT64
                                 dims: [ -1, 64 ]
                               }
                               output {
                                 name: "logits"
                                 data_type: TYPE_FP32
                                 dims: [ -1, 2 ]
                               }
                             )pb",
                             &config)
                  .ok());
  const inference::ModelConfig t = TritonModelConfig(config);
  EXPECT_EQ(t.name(), "bert");
  EXPECT_EQ(t.platform(), "pytorch_libtorch");
  EXPECT_EQ(t.max_batch_size(), 16);
  ASSERT_EQ(t.input_size(), 1);
  EXPECT_EQ(t.input(0).data_type(), inference::TYPE_INT64);
  ASSERT_EQ(t.input(0).dims_size(), 1);
  EXPECT_EQ(t.input(0).dims(0), 64);
  EXPECT_EQ(t.output(0).data_type(), inference::TYPE_FP32);
  EXPECT_TRUE(t.has_dynamic_batching());
  EXPECT_EQ(t.dynamic_batching().max_queue_delay_microseconds(), 0u);
  EXPECT_EQ(t.parameters().at("slo_ms").string_value(), "200");
  config.set_max_queue_delay_ms(2.5);
  EXPECT_EQ(TritonModelConfig(config)
                .dynamic_batching()
                .max_queue_delay_microseconds(),
            2500u);
}

}  // namespace
}  // namespace tessera
