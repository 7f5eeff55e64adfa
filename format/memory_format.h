#pragma once
// How a training step lays out its 4-D tensors: a profile's `measurement.memory_format`, runs.csv's
// `memory_format` column, a sweep's `memory_format:` (docs/PRECISION.md "Memory format").
// Dependency-free.

#include <optional>
#include <string>
#include <string_view>

namespace trainsim {

enum class MemoryFormat {
  kNchw,          // PyTorch's default: contiguous N, C, H, W
  kChannelsLast,  // model.to(memory_format=torch.channels_last) and each input batch likewise:
                  // 4-D weights and activations strided N, H, W, C
};

inline constexpr std::string_view kMemoryFormatNames = "nchw, channels_last";

inline const char* memory_format_name(MemoryFormat f) {
  return f == MemoryFormat::kChannelsLast ? "channels_last" : "nchw";
}

// "nchw" or "channels_last"; nullopt for anything else.
inline std::optional<MemoryFormat> parse_memory_format(std::string_view text) {
  if (text == "nchw") return MemoryFormat::kNchw;
  if (text == "channels_last") return MemoryFormat::kChannelsLast;
  return std::nullopt;
}

}  // namespace trainsim
