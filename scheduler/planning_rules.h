#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policy_rules.pb.h"

namespace tessera {

// The planning rules a policy is built with (proto/policy_rules.proto):
// a preset ("tessera", our calibrated defaults, or "paper", each policy as
// its paper specifies it) whose values fill every field the message does
// not set. Resolved once, at load; policies then read every field as set.

// "tessera" or "paper" (case-sensitive); INVALID_ARGUMENT otherwise.
absl::StatusOr<RulesPreset> ParseRulesPreset(absl::string_view name);
// "tessera" / "paper".
std::string RulesPresetName(RulesPreset preset);

// Every field of `rules` set: those it sets, validated (headrooms >= 1,
// tail in (0, 0.5), fraction in (0, 1], slack >= 0, merge attempts >= 0),
// the rest from its preset. INVALID_ARGUMENT names the field.
absl::StatusOr<PlanningRules> ResolvePlanningRules(const PlanningRules& rules);

// The resolved rules of a preset alone.
PlanningRules PresetRules(RulesPreset preset);

// Rules given as a preset name and an optional text-format override
// (e.g. "shared { queueing_check: false }"), resolved.
absl::StatusOr<PlanningRules> RulesFromFlags(absl::string_view preset,
                                             absl::string_view overrides);
// The same with several overrides, each parsed alone and merged in order
// (a later one wins field by field).
absl::StatusOr<PlanningRules> RulesFromFlags(
    absl::string_view preset, const std::vector<std::string>& overrides);

// `rules` with SharedRules' headroom and queueing tail replaced: how
// igniter and las plan the shared inputs (PolicyInputs) with their own
// family's margins.
PlanningRules WithFamilyMargins(PlanningRules rules, double latency_headroom,
                                double rate_headroom, double queueing_tail);

// One line naming the preset and every field that differs from it, for
// plan reasons and experiment headers ("tessera", "paper + shared {
// burst_caps: true }").
std::string DescribeRules(const PlanningRules& resolved);

}  // namespace tessera
