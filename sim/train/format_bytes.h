#pragma once
// Human-readable sizes for op names: "37.6 KiB", "25.3 MiB".

#include <cstdio>
#include <string>

namespace trainsim::train {

inline std::string format_bytes(double bytes) {
  char text[32];
  if (bytes < 1024.0 * 1024.0) {
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  } else {
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024.0));
  }
  return text;
}

}  // namespace trainsim::train
