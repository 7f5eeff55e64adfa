#pragma once
// `measure largebatch-compare`'s reporters: the Markdown report, the CSV and the lines printed, from
// a ComparisonSummary (compare.h). Torch-free.

#include <string>

#include "largebatch/compare.h"

namespace trainsim::measure {

// `assumed_tuned`, `simple_noise`, `without_floor`, `without_batchnorm`, `edge_of_stability`,
// `plain_bound`, `without_norm`, `other_pace`: the same comparison with
// CompareOptions::assume_tuned_baseline, simple_noise_scale, without_momentum_floor,
// without_batchnorm_gap, past_bound kEdge, past_bound kNoProgress, without_scale_invariant_norm and
// pace_probe the other way, each shown beside it where given. `figures`: a Markdown section placed
// before the baselines' (write_to_target_plot's).
std::string format_comparison_report(const ComparisonSummary& summary, const CompareOptions& options,
                                     const std::string& command, const ComparisonSummary* assumed_tuned = nullptr,
                                     const ComparisonSummary* simple_noise = nullptr,
                                     const ComparisonSummary* without_floor = nullptr,
                                     const ComparisonSummary* without_batchnorm = nullptr,
                                     const ComparisonSummary* edge_of_stability = nullptr,
                                     const ComparisonSummary* plain_bound = nullptr,
                                     const ComparisonSummary* without_norm = nullptr,
                                     const ComparisonSummary* other_pace = nullptr,
                                     const std::string& figures = std::string());
std::string format_comparison_csv(const ComparisonSummary& summary);
// The three lines the report ends with: "loss error: X% ...", "accuracy error: X points ...",
// "epochs-to-target error: X% ...".
std::string format_error_lines(const ComparisonSummary& summary, const CompareOptions& options);

// The epochs to CompareOptions::target_accuracy on one line (the report's and the command's).
std::string format_accuracy_target_line(const ComparisonSummary& summary, const CompareOptions& options);
// The pre-registered runs' figures on one line (the report's and the command's); `plan` names the
// plan file.
std::string format_planned_line(const ComparisonSummary& summary, const std::string& plan = "plan.csv");

}  // namespace trainsim::measure
