#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_config.pb.h"

namespace tessera {

// Reads a model's config.pbtxt written in Triton's format (platform
// "pytorch_libtorch" or backend "pytorch") into Tessera's ModelConfig:
// - data types TYPE_BOOL, TYPE_UINT8, TYPE_INT8/16/32/64, TYPE_FP16/32/64;
// - dims without the batch dimension (max_batch_size must be > 0: Tessera
//   batches every model);
// - parameters "slo_ms" (required), "default_version" and "segment_count"
//   (Tessera's fields), as string_value;
// - dynamic_batching and instance_group accepted with a note: batch sizes,
//   queue delays and placement are the policy's;
// - accepted and ignored: kIgnoredFields below.
// Any other field is refused with INVALID_ARGUMENT naming it.
class TritonConfigImporter {
 public:
  // Top-level fields of Triton's ModelConfig that are accepted and ignored.
  static const std::vector<std::string>& IgnoredFields();

  // Whether `text` is a Triton config (else it is Tessera's own format).
  static bool IsTritonConfig(const std::string& text);

  // Converts `text`; `notes` (may be null) gets one line per field read
  // but not used.
  static absl::StatusOr<ModelConfig> Import(const std::string& text,
                                            std::vector<std::string>* notes);
};

}  // namespace tessera
