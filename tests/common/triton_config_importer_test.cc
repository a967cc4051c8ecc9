#include "common/triton_config_importer.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kTriton[] = R"pb(
  name: "m"
  platform: "pytorch_libtorch"
  max_batch_size: 8 input
  [ {
    name: "INPUT__0"
    data_type: TYPE_FP32
    dims: [ 3, 32, 32 ]
  }
    , {
      name: "INPUT__1"
      data_type: TYPE_INT64
      dims: [ 16 ]
    }] output
  [ {
    name: "OUTPUT__0"
    data_type: TYPE_FP16
    dims: [ 10 ]
  }]
  dynamic_batching { max_queue_delay_microseconds: 100 } instance_group
  [ {
    count: 2
    kind: KIND_GPU
    gpus: [ 0 ]
  }]
  version_policy { latest { num_versions: 1 } }
  optimization { cuda { graphs: true } }
  parameters {
    key: "slo_ms"
    value { string_value: "25.5" }
  }
  parameters {
    key: "segment_count"
    value { string_value: "3" }
  }
)pb";

TEST(TritonConfigImporterTest, ReadsTritonsFormatIntoTesserasConfig) {
  ASSERT_TRUE(TritonConfigImporter::IsTritonConfig(kTriton));
  std::vector<std::string> notes;
  auto config = TritonConfigImporter::Import(kTriton, &notes);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name(), "m");
  EXPECT_EQ(config->platform(), "torchscript");
  EXPECT_EQ(config->max_batch_size(), 8);
  EXPECT_DOUBLE_EQ(config->slo_ms(), 25.5);
  EXPECT_EQ(config->segment_count(), 3);
  ASSERT_EQ(config->input_size(), 2);
  EXPECT_EQ(config->input(0).data_type(), TYPE_FP32);
  EXPECT_THAT(config->input(0).dims(), ElementsAre(-1, 3, 32, 32));
  EXPECT_EQ(config->input(1).data_type(), TYPE_INT64);
  EXPECT_THAT(config->input(1).dims(), ElementsAre(-1, 16));
  EXPECT_EQ(config->output(0).data_type(), TYPE_FP16);
  EXPECT_THAT(config->output(0).dims(), ElementsAre(-1, 10));
  EXPECT_THAT(notes, ElementsAre(HasSubstr("version_policy ignored"),
                                 HasSubstr("optimization ignored"),
                                 HasSubstr("instance_group ignored"),
                                 HasSubstr("waited 0.1 ms")));
  ASSERT_TRUE(config->has_max_queue_delay_ms());
  EXPECT_DOUBLE_EQ(config->max_queue_delay_ms(), 0.1);
}

// Triton's default delay (0, `dynamic_batching { }`) sets no bound: the
// deadline rule alone decides when a batch leaves.
TEST(TritonConfigImporterTest, ZeroQueueDelaySetsNoBound) {
  std::vector<std::string> notes;
  auto config = TritonConfigImporter::Import(
      R"pb(
        name: "m"
        platform: "pytorch_libtorch"
        max_batch_size: 4
        input {
          name: "x"
          data_type: TYPE_FP32
          dims: [ 2 ]
        }
        output {
          name: "y"
          data_type: TYPE_FP32
          dims: [ 2 ]
        }
        dynamic_batching {}
        parameters {
          key: "slo_ms"
          value { string_value: "10" }
        }
      )pb",
      &notes);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->has_max_queue_delay_ms());
  EXPECT_THAT(notes, ElementsAre(HasSubstr("no queue delay bound")));
}

TEST(TritonConfigImporterTest, TesserasOwnFormatIsNotTritons) {
  EXPECT_FALSE(TritonConfigImporter::IsTritonConfig(R"pb(
    name: "m"
    platform: "torchscript"
    max_batch_size: 8
    slo_ms: 50
    input {
      name: "x"
      data_type: TYPE_FP32
      dims: [ -1, 4 ]
    }
  )pb"));
  EXPECT_FALSE(TritonConfigImporter::IsTritonConfig("not { a config"));
}

TEST(TritonConfigImporterTest, RefusesWhatItCannotServeNamingTheField) {
  struct Case {
    std::string text;
    const char* message;
  };
  const std::string head = R"pb(platform: "pytorch_libtorch"
                                max_batch_size: 4
                                input {
                                  name: "x"
                                  data_type: TYPE_FP32
                                  dims: [ 4 ]
                                }
                                output {
                                  name: "y"
                                  data_type: TYPE_FP32
                                  dims: [ 2 ]
                                }
  )pb";
  const std::string slo = "\n" + std::string(R"pb(parameters {
                                                    key: "slo_ms"
                                                    value { string_value: "10" }
                                                  })pb");
  for (const Case& c : std::vector<Case>{
           {head + slo +
                "\nsequence_batching { max_sequence_idle_microseconds: 5 }",
            "field \"sequence_batching\" is neither supported nor on the "
            "list"},
           {head + slo + "\nensemble_scheduling { step { model_name: \"a\" } }",
            "field \"ensemble_scheduling\""},
           {R"pb(platform: "pytorch_libtorch"
                 max_batch_size: 4
                 input {
                   name: "x"
                   data_type: TYPE_FP32
                   dims: [ 4 ]
                   reshape { shape: [ 2, 2 ] }
                 })pb" +
                slo,
            "field \"reshape\" of inference.ModelInput is not supported"},
           {head, "needs the model's latency SLO"},
           {head + R"pb(parameters {
                          key: "slo_ms"
                          value { string_value: "x" }
                        })pb",
            "\"slo_ms\": 'x' is not a positive number"},
           {head + slo + R"pb(parameters {
                                key: "color"
                                value { string_value: "red" }
                              })pb",
            "parameters \"color\" is unknown"},
           {R"pb(platform: "pytorch_libtorch" max_batch_size: 0)pb" + slo,
            "max_batch_size must be > 0"},
           {R"pb(platform: "pytorch_libtorch"
                 max_batch_size: 2
                 input {
                   name: "s"
                   data_type: TYPE_STRING
                   dims: [ 1 ]
                 })pb" +
                slo,
            "input 's': data_type TYPE_STRING is not served"},
       }) {
    auto config = TritonConfigImporter::Import(c.text, nullptr);
    EXPECT_TRUE(absl::IsInvalidArgument(config.status())) << c.text;
    EXPECT_THAT(config.status().message(), HasSubstr(c.message)) << c.text;
  }
}

TEST(TritonConfigImporterTest, ErrorsSayWhereInTheFile) {
  auto unknown = TritonConfigImporter::Import(
      "platform: \"pytorch_libtorch\"\nmax_batch_size: 2\ncolour: 3\n",
      nullptr);
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("line 3: field \"colour\" is neither"));
  // protobuf's parser cannot skip a list of messages in a field it does
  // not know; the error says how to write it.
  auto list = TritonConfigImporter::Import(
      "platform: \"pytorch_libtorch\"\nmodel_warmup [ { name: \"w\" } ]\n",
      nullptr);
  EXPECT_THAT(list.status().message(), HasSubstr("line 2, column"));
  EXPECT_THAT(list.status().message(), HasSubstr("repeated entries"));
}

}  // namespace
}  // namespace tessera
