#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "frontend/admission_control.h"
#include "grpc_service.pb.h"
#include "grpcpp/support/status.h"
#include "model_config.pb.h"

namespace tessera {

class FrontendMetrics;

// A ModelInfer request after validation: per configured input (config
// order) the request's bytes, either viewing the request's raw contents or
// owned after converting typed contents.
struct DecodedRequest {
  int items = 0;  // leading (batch) dimension
  std::vector<absl::string_view> inputs;
  std::vector<std::string> owned;  // storage for converted typed contents
  // Indices (config order) of the outputs to return.
  std::vector<int> outputs;
  // Shape-only request: `inputs` are empty; the backend fabricates data.
  bool shape_only = false;
  // The request's "timeout" parameter (Triton's per-request timeout, sent
  // in microseconds); InfiniteDuration when absent or 0.
  absl::Duration timeout = absl::InfiniteDuration();
};

// One accepted ModelInfer call, from acceptance until it is finished. The
// request and response belong to gRPC and stay valid until Finish().
struct InferCall {
  // Finishes the gRPC call (exactly once); the request and response are
  // not touched after it.
  std::function<void(const grpc::Status&)> finish;
  const inference::ModelInferRequest* request = nullptr;
  inference::ModelInferResponse* response = nullptr;
  const ModelConfig* config = nullptr;
  std::string version;
  DecodedRequest decoded;
  absl::Time arrival;
  absl::Time deadline;
  // Where the answer is counted (may be null), and the clock `arrival` and
  // `deadline` are on (null: the real clock).
  FrontendMetrics* metrics = nullptr;
  const Clock* clock = nullptr;
  // The admission budget the call holds until it is destroyed.
  AdmissionControl::Ticket admission;
  // Set when the batch answers: the call's time in the queues (the
  // frontend's and the device's) and its batch's execution.
  absl::Duration queued;
  absl::Duration executed;
};

}  // namespace tessera
