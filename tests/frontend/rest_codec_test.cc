#include "frontend/rest_codec.h"

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

template <class T>
std::vector<T> Values(const std::string& raw) {
  std::vector<T> out(raw.size() / sizeof(T));
  std::memcpy(out.data(), raw.data(), out.size() * sizeof(T));
  return out;
}

TEST(RestCodecTest, NestedJsonDataBecomesRawBytesInRowMajorOrder) {
  auto decoded = RestCodec::DecodeInferRequest(
      R"({"id": "a", "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [2, 2],
             "data": [[1.5, -2], [3, 4.25]]},
            {"name": "n", "datatype": "INT64", "shape": [3],
             "data": [1, -9007199254740993, 3]},
            {"name": "b", "datatype": "BOOL", "shape": [2],
             "data": [true, false]}]})",
      -1, "m", "2");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const auto& r = decoded->request;
  EXPECT_EQ(r.model_name(), "m");
  EXPECT_EQ(r.model_version(), "2");
  EXPECT_EQ(r.id(), "a");
  ASSERT_EQ(r.raw_input_contents_size(), 3);
  EXPECT_EQ(Values<float>(r.raw_input_contents(0)),
            (std::vector<float>{1.5f, -2.f, 3.f, 4.25f}));
  EXPECT_EQ(Values<int64_t>(r.raw_input_contents(1)),
            (std::vector<int64_t>{1, -9007199254740993LL, 3}));
  EXPECT_EQ(Values<uint8_t>(r.raw_input_contents(2)),
            (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(r.inputs(0).shape_size(), 2);
  EXPECT_EQ(r.inputs(1).datatype(), "INT64");
}

TEST(RestCodecTest, BinaryDataIsTakenInInputOrder) {
  const std::string header =
      R"({"inputs": [
          {"name": "a", "datatype": "INT32", "shape": [2],
           "parameters": {"binary_data_size": 8}},
          {"name": "b", "datatype": "INT8", "shape": [1], "data": [7]},
          {"name": "c", "datatype": "UINT8", "shape": [3],
           "parameters": {"binary_data_size": 3}}]})";
  const int32_t a[2] = {5, -6};
  std::string body = header;
  body.append(reinterpret_cast<const char*>(a), sizeof(a));
  body.append("\x01\x02\x03", 3);
  auto decoded = RestCodec::DecodeInferRequest(body, header.size(), "m", "");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const auto& r = decoded->request;
  EXPECT_EQ(Values<int32_t>(r.raw_input_contents(0)),
            (std::vector<int32_t>{5, -6}));
  EXPECT_EQ(r.raw_input_contents(1), "\x07");
  EXPECT_EQ(r.raw_input_contents(2), "\x01\x02\x03");

  // A byte no input claims, and fewer bytes than claimed.
  auto extra =
      RestCodec::DecodeInferRequest(body + "x", header.size(), "m", "");
  EXPECT_THAT(extra.status().message(), HasSubstr("1 bytes of binary data"));
  auto short_body = RestCodec::DecodeInferRequest(
      body.substr(0, body.size() - 1), header.size(), "m", "");
  EXPECT_THAT(short_body.status().message(),
              HasSubstr("input 'c': binary_data_size 3 but only 2"));
  auto past_end = RestCodec::DecodeInferRequest("{}", 3, "m", "");
  EXPECT_THAT(past_end.status().message(),
              HasSubstr("Inference-Header-Content-Length is 3"));
}

TEST(RestCodecTest, BadInputsAreRefusedNamingTheInput) {
  struct Case {
    const char* body;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"[1]", "not a JSON object"},
           {"{\"inputs\": [", "not a JSON object"},
           {"{}", "needs an \"inputs\" array"},
           {R"({"inputs": [{"datatype": "FP32", "shape": [1], "data": [1]}]})",
            "inputs[0] needs a string \"name\""},
           {R"({"inputs": [{"name": "x", "shape": [1], "data": [1]}]})",
            "input 'x' needs a string \"datatype\""},
           {R"({"inputs": [{"name": "x", "datatype": "FP32", "data": [1]}]})",
            "input 'x' needs a \"shape\" array"},
           {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1]}]})",
            "neither \"data\" nor"},
           {R"({"inputs": [{"name": "x", "datatype": "INT8", "shape": [1],
                "data": [128]}]})",
            "input 'x': 128 is not a INT8 value"},
           {R"({"inputs": [{"name": "x", "datatype": "UINT8", "shape": [1],
                "data": [-1]}]})",
            "-1 is not a UINT8 value"},
           {R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1],
                "data": [1.5]}]})",
            "1.5 is not a INT32 value"},
           {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1],
                "data": ["1"]}]})",
            "\"1\" is not a FP32 value"},
           {R"({"inputs": [{"name": "x", "datatype": "FP16", "shape": [1],
                "data": [1]}]})",
            "FP16 data must be sent as binary data"},
           {R"({"inputs": [{"name": "x", "datatype": "NOPE", "shape": [1],
                "data": [1]}]})",
            "input 'x'"},
           {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1],
                "data": [1], "parameters": {"binary_data_size": 4}}]})",
            "both \"data\" and \"binary_data_size\""},
           {R"({"inputs": [], "outputs": [{"parameters": {}}]})",
            "outputs[0] needs a string \"name\""},
           {R"({"inputs": [], "parameters": {"binary_data_output": 1}})",
            "\"binary_data_output\" must be a boolean"},
       }) {
    auto decoded = RestCodec::DecodeInferRequest(c.body, -1, "m", "");
    EXPECT_TRUE(absl::IsInvalidArgument(decoded.status())) << c.body;
    EXPECT_THAT(decoded.status().message(), HasSubstr(c.message)) << c.body;
  }
  auto shm = RestCodec::DecodeInferRequest(
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1],
          "parameters": {"shared_memory_region": "r"}}]})",
      -1, "m", "");
  EXPECT_TRUE(absl::IsUnimplemented(shm.status()));
}

TEST(RestCodecTest, DeepNestingIsRefusedNotRecursed) {
  const std::string deep = std::string(100, '[') + "1" + std::string(100, ']');
  auto decoded = RestCodec::DecodeInferRequest(
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": )" +
          deep + "}]}",
      -1, "m", "");
  EXPECT_THAT(decoded.status().message(), HasSubstr("nested deeper"));
}

inference::ModelInferResponse TwoOutputs() {
  inference::ModelInferResponse response;
  response.set_model_name("m");
  response.set_model_version("1");
  response.set_id("q");
  auto* a = response.add_outputs();
  a->set_name("a");
  a->set_datatype("FP32");
  a->add_shape(2);
  const float av[2] = {0.1f, -3.f};
  response.add_raw_output_contents(reinterpret_cast<const char*>(av),
                                   sizeof(av));
  auto* b = response.add_outputs();
  b->set_name("b");
  b->set_datatype("INT64");
  b->add_shape(1);
  const int64_t bv = -7;
  response.add_raw_output_contents(reinterpret_cast<const char*>(&bv),
                                   sizeof(bv));
  return response;
}

TEST(RestCodecTest, OutputsAreJsonUnlessAskedAsBinary) {
  RestCodec::InferRequest how;
  auto json = RestCodec::EncodeInferResponse(TwoOutputs(), how);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->json_bytes, -1);
  // Floats are written so that parsing them back as float gives the same
  // bits.
  EXPECT_EQ(json->bytes,
            R"({"model_name":"m","model_version":"1","id":"q","outputs":[)"
            R"({"name":"a","datatype":"FP32","shape":[2],)"
            R"("data":[0.10000000149011612,-3.0]},)"
            R"({"name":"b","datatype":"INT64","shape":[1],"data":[-7]}]})");

  how.binary_outputs.insert("a");
  auto mixed = RestCodec::EncodeInferResponse(TwoOutputs(), how);
  ASSERT_TRUE(mixed.ok());
  ASSERT_GT(mixed->json_bytes, 0);
  const std::string header = mixed->bytes.substr(0, mixed->json_bytes);
  EXPECT_THAT(header, HasSubstr(R"("parameters":{"binary_data_size":8})"));
  EXPECT_THAT(header, HasSubstr(R"("data":[-7])"));
  EXPECT_EQ(Values<float>(mixed->bytes.substr(mixed->json_bytes)),
            (std::vector<float>{0.1f, -3.f}));

  RestCodec::InferRequest all_binary;
  all_binary.binary_by_default = true;
  all_binary.json_outputs.insert("a");
  auto rest = RestCodec::EncodeInferResponse(TwoOutputs(), all_binary);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(Values<int64_t>(rest->bytes.substr(rest->json_bytes)),
            (std::vector<int64_t>{-7}));
}

}  // namespace
}  // namespace tessera
