#pragma once
// Learning-rate rules for a batch B relative to the baseline batch B_0 (issue 5). Header-only so
// the config parser (trainsim_io) can name them without linking trainsim_stats.

#include <cmath>
#include <optional>
#include <string>

namespace trainsim {

enum class LrRule {
  kConstant,      // lr(B) = lr_0
  kLinear,        // lr(B) = lr_0 * B / B_0 from the first step
  kLinearWarmup,  // lr(B) = lr_0 * B / B_0, reached by a linear ramp over the first epochs (Goyal et al.)
  kSqrt,          // lr(B) = lr_0 * sqrt(B / B_0)
};

// Every rule, in the order the reports list them.
inline constexpr LrRule kLrRules[] = {LrRule::kConstant, LrRule::kLinear, LrRule::kLinearWarmup, LrRule::kSqrt};

inline const char* to_string(LrRule rule) {
  switch (rule) {
    case LrRule::kConstant: return "constant";
    case LrRule::kLinear: return "linear";
    case LrRule::kLinearWarmup: return "linear-warmup";
    case LrRule::kSqrt: return "sqrt";
  }
  return "?";
}

// "constant" | "linear" | "linear-warmup" | "sqrt"; nullopt for anything else.
inline std::optional<LrRule> parse_lr_rule(const std::string& text) {
  for (LrRule rule : kLrRules) {
    if (text == to_string(rule)) return rule;
  }
  return std::nullopt;
}

// lr(B) / lr(B_0) under the rule (after any warm-up).
inline double lr_ratio(LrRule rule, double batch, double base_batch) {
  switch (rule) {
    case LrRule::kConstant: return 1.0;
    case LrRule::kLinear:
    case LrRule::kLinearWarmup: return batch / base_batch;
    case LrRule::kSqrt: return std::sqrt(batch / base_batch);
  }
  return 1.0;
}

}  // namespace trainsim
