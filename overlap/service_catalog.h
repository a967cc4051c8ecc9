#pragma once

// The services one device co-runs under operator-group scheduling, and the
// feature vector that describes a group of their operator ranges.

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera {

struct OverlapService {
  std::string name;
  // Segments ("operators") the model runs as: ResNet/VGG blocks, Inception
  // modules, BERT layers.
  int operators = 0;
  // Whether a query carries a sequence length (BERT).
  bool sequence_input = false;
};

// One query's part of an operator group: operators [start_op, end_op).
struct GroupMember {
  int service = 0;  // Index into the catalog.
  int start_op = 0;
  int end_op = 0;
  int batch = 0;
  int seqlen = 0;  // 0 unless the service takes sequences.
};

using OperatorGroup = std::vector<GroupMember>;

class ServiceCatalog {
 public:
  explicit ServiceCatalog(std::vector<OverlapService> services)
      : services_(std::move(services)) {}

  // The Abacus artifact's seven A100 services, in its id order: resnet50,
  // resnet101, resnet152, inception_v3, vgg16, vgg19, bert.
  static const ServiceCatalog& A100();

  int size() const { return static_cast<int>(services_.size()); }
  const OverlapService& service(int id) const { return services_[id]; }
  absl::StatusOr<int> IdOf(const std::string& name) const;
  // Parses "resnet50,bert" into ids (sorted, distinct).
  absl::StatusOr<std::vector<int>> ParseSet(const std::string& names) const;
  std::string SetName(const std::vector<int>& ids) const;  // "resnet50+bert"

  // The authors' encoding: a count per service id, then for each member in
  // service-id order its start, end, batch and sequence length. Width
  // size() + 4 × members.
  std::vector<float> Features(OperatorGroup group) const;

 private:
  std::vector<OverlapService> services_;
};

// The Abacus artifact's QoS target for a co-location set of A100 services
// (one target shared by the set; the paper's "2 × solo latency at the
// largest input"). `peak` selects the peak-throughput runs' value where the
// scripts differ (vgg16+vgg19: 30 ms for the QoS runs, 40 ms at peak).
absl::StatusOr<double> AbacusA100QosMs(const std::vector<int>& set, bool peak);

}  // namespace tessera
