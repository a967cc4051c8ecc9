#include "frontend/request_codec.h"

#include <cstring>

#include "common/text_proto.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

ModelConfig TwoInputConfig() {
  ModelConfig c;
  EXPECT_TRUE(ParseTextProto(R"pb(
                               name: "m"
                               platform: "torchscript"
                               max_batch_size: 4
                               slo_ms: 10
                               input {
                                 name: "ids"
                                 data_type: TYPE_INT64
                                 dims: [ -1, 3 ]
                               }
                               input {
                                 name: "mask"
                                 data_type: TYPE_INT32
                                 dims: [ -1, 3 ]
                               }
                               output {
                                 name: "y"
                                 data_type: TYPE_FP32
                                 dims: [ -1, 2 ]
                               }
                               output {
                                 name: "z"
                                 data_type: TYPE_FP32
                                 dims: [ -1, 1 ]
                               })pb",
                             &c)
                  .ok());
  return c;
}

template <typename T>
std::string Raw(std::vector<T> v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(T));
}

inference::ModelInferRequest RawRequest(int batch) {
  inference::ModelInferRequest r;
  r.set_model_name("m");
  auto* ids = r.add_inputs();
  ids->set_name("ids");
  ids->set_datatype("INT64");
  ids->add_shape(batch);
  ids->add_shape(3);
  auto* mask = r.add_inputs();
  mask->set_name("mask");
  mask->set_datatype("INT32");
  mask->add_shape(batch);
  mask->add_shape(3);
  std::vector<int64_t> id_values(batch * 3);
  std::vector<int32_t> mask_values(batch * 3, 1);
  for (int i = 0; i < batch * 3; ++i) id_values[i] = i;
  *r.add_raw_input_contents() = Raw(id_values);
  *r.add_raw_input_contents() = Raw(mask_values);
  return r;
}

TEST(RequestCodecTest, DecodesRawContentsInConfigOrder) {
  auto r = RawRequest(2);
  r.mutable_inputs()->SwapElements(0, 1);  // order in request is free
  r.mutable_raw_input_contents()->SwapElements(0, 1);
  auto d = RequestCodec::Decode(r, TwoInputConfig());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->items, 2);
  EXPECT_EQ(d->inputs[0].size(), 6 * sizeof(int64_t));
  EXPECT_EQ(d->inputs[1].size(), 6 * sizeof(int32_t));
  EXPECT_THAT(d->outputs, ::testing::ElementsAre(0, 1));
}

// Triton's per-request "timeout" parameter, in microseconds.
TEST(RequestCodecTest, TheTimeoutParameterIsMicrosecondsAndZeroIsNone) {
  auto r = RawRequest(1);
  auto d = RequestCodec::Decode(r, TwoInputConfig());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->timeout, absl::InfiniteDuration());
  (*r.mutable_parameters())["timeout"].set_int64_param(2500);
  d = RequestCodec::Decode(r, TwoInputConfig());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->timeout, absl::Microseconds(2500));
  (*r.mutable_parameters())["timeout"].set_int64_param(0);
  d = RequestCodec::Decode(r, TwoInputConfig());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->timeout, absl::InfiniteDuration());
  (*r.mutable_parameters())["timeout"].set_int64_param(-1);
  EXPECT_EQ(RequestCodec::Decode(r, TwoInputConfig()).status().code(),
            absl::StatusCode::kInvalidArgument);
  (*r.mutable_parameters())["timeout"].set_string_param("5s");
  d = RequestCodec::Decode(r, TwoInputConfig());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("'timeout'"));
}

// Triton's shared-memory extension: a tensor that names a region instead
// of carrying data is refused as unsupported, by name (it used to be
// decoded as an empty tensor: "0 elements").
TEST(RequestCodecTest, SharedMemoryTensorsAreUnimplemented) {
  auto input = RawRequest(1);
  input.clear_raw_input_contents();
  (*input.mutable_inputs(0)->mutable_parameters())["shared_memory_region"]
      .set_string_param("input_data");
  auto d = RequestCodec::Decode(input, TwoInputConfig());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(d.status().message(),
              ::testing::HasSubstr("shared_memory_region"));
  auto output = RawRequest(1);
  auto* out = output.add_outputs();
  out->set_name("y");
  (*out->mutable_parameters())["shared_memory_byte_size"].set_int64_param(64);
  d = RequestCodec::Decode(output, TwoInputConfig());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(d.status().message(), ::testing::HasSubstr("output 'y'"));
}

TEST(RequestCodecTest, TypedContentsEqualRawBytes) {
  auto raw = RawRequest(1);
  inference::ModelInferRequest typed = raw;
  typed.clear_raw_input_contents();
  for (int i = 0; i < 3; ++i) {
    typed.mutable_inputs(0)->mutable_contents()->add_int64_contents(i);
    typed.mutable_inputs(1)->mutable_contents()->add_int_contents(1);
  }
  auto a = RequestCodec::Decode(raw, TwoInputConfig());
  auto b = RequestCodec::Decode(typed, TwoInputConfig());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->inputs[0], b->inputs[0]);
  EXPECT_EQ(a->inputs[1], b->inputs[1]);
}

// A value outside the config's value_range is refused before batching,
// naming the element; raw and typed contents alike; shape-only requests
// carry no values to check.
TEST(RequestCodecTest, ValuesOutsideTheDeclaredRangeAreInvalid) {
  ModelConfig config = TwoInputConfig();
  config.mutable_input(0)->mutable_value_range()->set_min(0);
  config.mutable_input(0)->mutable_value_range()->set_max(4);
  config.mutable_input(1)->mutable_value_range()->set_min(0);
  config.mutable_input(1)->mutable_value_range()->set_max(1);
  EXPECT_TRUE(RequestCodec::Decode(RawRequest(1), config).ok());  // ids 0..2

  auto too_big = RawRequest(2);  // ids 0..5: element 5 is 5
  auto d = RequestCodec::Decode(too_big, config);
  ASSERT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(),
              HasSubstr("input 'ids': element 5 is 5, outside the model's "
                        "value_range [0, 4]"));

  auto typed = RawRequest(1);
  typed.clear_raw_input_contents();
  for (int i = 0; i < 3; ++i) {
    typed.mutable_inputs(0)->mutable_contents()->add_int64_contents(1);
    typed.mutable_inputs(1)->mutable_contents()->add_int_contents(i == 2 ? -7
                                                                         : 1);
  }
  d = RequestCodec::Decode(typed, config);
  ASSERT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("element 2 is -7"));
}

struct BadCase {
  const char* name;
  std::function<void(inference::ModelInferRequest*)> mutate;
  const char* message;
};

TEST(RequestCodecTest, RejectsBadRequestsWithWhatWasExpected) {
  const std::vector<BadCase> cases = {
      {"missing input",
       [](auto* r) {
         r->mutable_inputs()->RemoveLast();
         r->mutable_raw_input_contents()->RemoveLast();
       },
       "missing input 'mask'"},
      {"unknown input", [](auto* r) { r->mutable_inputs(1)->set_name("x"); },
       "has no input 'x'"},
      {"wrong dtype",
       [](auto* r) { r->mutable_inputs(0)->set_datatype("FP32"); },
       "expected INT64"},
      {"wrong shape", [](auto* r) { r->mutable_inputs(0)->set_shape(1, 4); },
       "expected [-1, 3]"},
      {"batch over max",
       [](auto* r) {
         r->mutable_inputs(0)->set_shape(0, 5);
         r->mutable_inputs(1)->set_shape(0, 5);
       },
       "must be in [1, 4]"},
      {"byte count",
       [](auto* r) { r->mutable_raw_input_contents(0)->pop_back(); },
       "needs 48"},
      {"batch mismatch", [](auto* r) { r->mutable_inputs(1)->set_shape(0, 1); },
       "another input has 2"},
      {"unknown output", [](auto* r) { r->add_outputs()->set_name("nope"); },
       "no output 'nope'"},
      {"raw and typed mixed",
       [](auto* r) {
         r->mutable_inputs(0)->mutable_contents()->add_int64_contents(1);
       },
       "exclusive"},
  };
  for (const BadCase& c : cases) {
    auto r = RawRequest(2);
    c.mutate(&r);
    auto d = RequestCodec::Decode(r, TwoInputConfig());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(d.status().message(), HasSubstr(c.message)) << c.name;
  }
}

TEST(RequestCodecTest, TypedElementCountIsChecked) {
  auto r = RawRequest(1);
  r.clear_raw_input_contents();
  r.mutable_inputs(0)->mutable_contents()->add_int64_contents(1);
  auto d = RequestCodec::Decode(r, TwoInputConfig());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("1 elements"));
}

TEST(RequestCodecTest, EncodeOutputsSplitsRows) {
  BatchResponse batch;
  Tensor* y = batch.add_outputs();
  y->set_name("y");
  y->set_data_type(TYPE_FP32);
  y->add_shape(3);
  y->add_shape(2);
  *y->mutable_data() = Raw(std::vector<float>{0, 1, 2, 3, 4, 5});
  Tensor* z = batch.add_outputs();
  z->set_name("z");
  z->set_data_type(TYPE_FP32);
  z->add_shape(3);
  z->add_shape(1);
  *z->mutable_data() = Raw(std::vector<float>{7, 8, 9});

  DecodedRequest decoded;
  decoded.outputs = {0};  // the client asked for "y" only
  inference::ModelInferResponse response;
  ASSERT_TRUE(RequestCodec::EncodeOutputs(batch, 1, 2, decoded,
                                          TwoInputConfig(), &response)
                  .ok());
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).name(), "y");
  EXPECT_EQ(response.outputs(0).datatype(), "FP32");
  EXPECT_THAT(response.outputs(0).shape(), ::testing::ElementsAre(2, 2));
  EXPECT_EQ(response.raw_output_contents(0),
            Raw(std::vector<float>{2, 3, 4, 5}));
}

}  // namespace
}  // namespace tessera
