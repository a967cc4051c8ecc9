#include "common/tensor_layout.h"

#include <vector>

#include "common/data_type.h"
#include "common/text_proto.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// Two inputs whose sizes are not multiples of 64 bytes, so the second
// one's offset shows the alignment.
ModelConfig Config() {
  ModelConfig c;
  EXPECT_TRUE(ParseTextProto(R"pb(
                               name: "m"
                               max_batch_size: 8
                               input {
                                 name: "ids"
                                 data_type: TYPE_INT64
                                 dims: [ -1, 3 ]
                               }
                               input {
                                 name: "x"
                                 data_type: TYPE_FP32
                                 dims: [ -1, 5, 2 ]
                               }
                             )pb",
                             &c)
                  .ok());
  return c;
}

TEST(TensorLayoutTest, SetsTheBatchAndAlignsEachTensor) {
  const ModelConfig config = Config();
  std::vector<uint8_t> buffer(1024);
  size_t end = 0;
  auto views =
      LayOutTensors(config.input(), 3, buffer.data(), buffer.size(), &end);
  ASSERT_TRUE(views.ok()) << views.status();
  ASSERT_EQ(views->size(), 2u);
  const TensorView& ids = (*views)[0];
  const TensorView& x = (*views)[1];
  EXPECT_EQ(ids.name, "ids");
  EXPECT_EQ(ids.data_type, TYPE_INT64);
  EXPECT_EQ(ids.shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(ids.size_bytes, 3u * 3 * 8);  // 72: the next starts at 128
  EXPECT_EQ(ids.data, buffer.data());
  EXPECT_EQ(x.shape, (std::vector<int64_t>{3, 5, 2}));
  EXPECT_EQ(x.size_bytes, 3u * 5 * 2 * 4);  // 120
  EXPECT_EQ(x.data, buffer.data() + 128);
  EXPECT_EQ(end, 256u);
  EXPECT_EQ(TensorLayoutBytes(config.input(), 3), end);
}

TEST(TensorLayoutTest, NamesTheTensorThatDoesNotFit) {
  const ModelConfig config = Config();
  // At batch 8: ids 192 bytes at 0, x 320 bytes at 192.
  const size_t needed = TensorLayoutBytes(config.input(), 8);
  EXPECT_EQ(needed, 512u);
  std::vector<uint8_t> buffer(needed);
  EXPECT_TRUE(LayOutTensors(config.input(), 8, buffer.data(), needed).ok());
  // One byte less does not fit, and the error says which tensor.
  auto short_by_one =
      LayOutTensors(config.input(), 8, buffer.data(), needed - 1);
  ASSERT_FALSE(short_by_one.ok());
  EXPECT_EQ(short_by_one.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(short_by_one.status().message().find("'x'"), std::string::npos)
      << short_by_one.status();
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST(TensorBytesTest, CountsBytesAndRefusesNegativeOrOverflowingShapes) {
  EXPECT_EQ(ElementCount({2, 3, 4}), 24);
  EXPECT_EQ(ElementCount({2, -1}), -1);
  EXPECT_EQ(ElementCount({int64_t{1} << 40, int64_t{1} << 40}), -1);
  auto bytes = TensorBytes({2, 1, 28, 28}, TYPE_FP32);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 2 * 28 * 28 * 4);
  EXPECT_EQ(TensorBytes({int64_t{1} << 31, int64_t{1} << 31}, TYPE_FP64)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);  // 2^62 elements x 8 bytes
  EXPECT_FALSE(TensorBytes({-1, 3}, TYPE_FP32).ok());
  EXPECT_FALSE(TensorBytes({3}, TYPE_INVALID).ok());
}

}  // namespace
}  // namespace tessera
