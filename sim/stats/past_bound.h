#pragma once
// What a run past plain SGD's no-progress bound does, in the large-batch model
// (LargeBatchSettings::past_bound; docs/LARGE_BATCH.md, "Which parameters set the bound").
// Header-only so the config parser (trainsim_io) can name it without linking trainsim_stats.

#include <optional>
#include <string>

namespace trainsim {

// kNoProgress: the loss rises, no progress (plain SGD's bound at x = 2 on the baseline's curvature).
// kEdge: the edge of stability (Cohen et al. 2021): a run whose lr is above the tuned one (x > 1)
//   meets curvature that follows its lr and progresses as at the tuned lr (x read as 1); no lr is
//   then past the bound. The baseline's own x_0 is read as without it.
// kFromStart (the default): kEdge where the baseline's start_curvature puts the parameters that
//   are not scale-invariant within the bound (their lr / eps_max at most 2 before the first step):
//   the steep part of the start is then in the weights BatchNorm normalises, which grow out of a
//   step too large for them. kNoProgress where it puts them past it, or where it was not measured.
enum class PastBound { kFromStart, kNoProgress, kEdge };

inline const char* to_string(PastBound past_bound) {
  switch (past_bound) {
    case PastBound::kFromStart: return "from-start";
    case PastBound::kNoProgress: return "no-progress";
    case PastBound::kEdge: return "edge-of-stability";
  }
  return "?";
}

// "from-start" | "no-progress" | "edge-of-stability"; nullopt for anything else.
inline std::optional<PastBound> parse_past_bound(const std::string& text) {
  for (PastBound p : {PastBound::kFromStart, PastBound::kNoProgress, PastBound::kEdge}) {
    if (text == to_string(p)) return p;
  }
  return std::nullopt;
}

}  // namespace trainsim
