#include "largebatch/pace_probe_options.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace trainsim::measure {

std::vector<int64_t> pace_arm_counts(const PaceProbeOptions& o) {
  double n = 1;
  for (const PacePair& p : o.pairs) {
    n = std::max(n, std::max(static_cast<double>(p.ratio), std::min(16.0, static_cast<double>(p.ratio) * p.lr_ratio)));
  }
  const auto last = static_cast<int64_t>(std::llround(static_cast<double>(o.steps) * n));
  std::vector<int64_t> counts;
  for (int64_t c = o.steps; c < last; c *= 2) counts.push_back(c);
  counts.push_back(last);
  return counts;
}

std::vector<PacePair> parse_pace_pairs(const std::string& text) {
  std::vector<PacePair> pairs;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto x = item.find('x');
    PacePair p;
    size_t used_ratio = 0;
    size_t used_lr = 0;
    try {
      if (x == std::string::npos) throw std::invalid_argument("no x");
      p.ratio = std::stoll(item.substr(0, x), &used_ratio);
      p.lr_ratio = std::stod(item.substr(x + 1), &used_lr);
    } catch (const std::exception&) {
      throw std::invalid_argument("'" + item + "' is not RATIOxLR_RATIO (e.g. 16x4)");
    }
    if (used_ratio != x || used_lr != item.size() - x - 1) {
      throw std::invalid_argument("'" + item + "' is not RATIOxLR_RATIO (e.g. 16x4)");
    }
    if (p.ratio < 2) throw std::invalid_argument("'" + item + "': the batch ratio must be a whole number >= 2");
    if (!(p.lr_ratio > 0) || !std::isfinite(p.lr_ratio)) {
      throw std::invalid_argument("'" + item + "': the lr ratio must be a finite number > 0");
    }
    pairs.push_back(p);
  }
  if (pairs.empty()) throw std::invalid_argument("no pairs in '" + text + "'");
  return pairs;
}

std::string pace_pairs_text(const std::vector<PacePair>& pairs) {
  std::ostringstream out;
  out.precision(17);
  for (size_t i = 0; i < pairs.size(); ++i) out << (i ? "," : "") << pairs[i].ratio << "x" << pairs[i].lr_ratio;
  return out.str();
}

}  // namespace trainsim::measure
