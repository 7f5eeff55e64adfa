#pragma once
// SplitMix64 (Steele, Lea, Flood 2014): a tiny, fast generator with a fixed, platform-independent
// output, so synthetic images, shuffles and augmentation are bit-identical everywhere (the
// standard <random> distributions are implementation-defined).

#include <cstdint>

namespace trainsim::data {

// Advances `state` and returns the next 64-bit output.
inline uint64_t splitmix64_next(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Derives an independent stream seed from a seed and one more value (an epoch, a batch index).
inline uint64_t mix_seed(uint64_t seed, uint64_t value) {
  uint64_t state = seed ^ (value * 0xD1B54A32D192ED03ULL);
  return splitmix64_next(state);
}

// Uniform integer in [0, n) (n > 0). The modulo bias is below n / 2^64: irrelevant here.
inline uint64_t uniform_below(uint64_t& state, uint64_t n) { return splitmix64_next(state) % n; }

}  // namespace trainsim::data
