#pragma once
// The numeric mode a training step runs in: a profile's `measurement.precision`, runs.csv's
// `precision` column, a sweep's `precision:` (docs/PRECISION.md). Dependency-free.

#include <optional>
#include <string>
#include <string_view>

namespace trainsim {

enum class Precision {
  kFp32,     // fp32 tensors throughout (on a GPU, convolutions on TF32 as PyTorch's default)
  kBf16Amp,  // torch.autocast(dtype=bfloat16) around forward and loss; fp32 weights, gradients
             // and optimizer state
};

inline constexpr std::string_view kPrecisionNames = "fp32, bf16-amp";

inline const char* precision_name(Precision p) { return p == Precision::kBf16Amp ? "bf16-amp" : "fp32"; }

// "fp32" or "bf16-amp"; nullopt for anything else.
inline std::optional<Precision> parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16-amp") return Precision::kBf16Amp;
  return std::nullopt;
}

}  // namespace trainsim
