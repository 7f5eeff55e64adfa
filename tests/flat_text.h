#pragma once
// `text` with every run of spaces and newlines as one space: the report's prose whatever its
// wrapping at 100 columns (report/format.h, wrap_text), for tests that match a sentence in it.

#include <string>

namespace trainsim::testing {

inline std::string flat(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && !out.empty() && out.back() == ' ') continue;
    out += space ? ' ' : c;
  }
  return out;
}

}  // namespace trainsim::testing
