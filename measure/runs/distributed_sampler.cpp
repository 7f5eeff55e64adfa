#include "runs/distributed_sampler.h"

#include <random>
#include <stdexcept>
#include <string>

namespace trainsim::measure {
namespace {

// Uniform integer in [0, bound) by rejection, so the draw does not depend on the standard
// library's distribution implementation (std::uniform_int_distribution is not portable).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;  // largest multiple of bound
  uint64_t draw = rng();
  while (draw >= limit) draw = rng();
  return draw % bound;
}

}  // namespace

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  if (n < 0) throw std::invalid_argument("epoch_permutation: negative size " + std::to_string(n));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(seed + static_cast<uint64_t>(epoch));
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(uniform_below(rng, static_cast<uint64_t>(i) + 1));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

std::vector<int64_t> distributed_sampler_indices(int64_t n, int world, int rank, uint64_t seed,
                                                 int64_t epoch) {
  if (n < 1 || world < 1 || rank < 0 || rank >= world) {
    throw std::invalid_argument("distributed_sampler_indices: n " + std::to_string(n) + ", world " +
                                std::to_string(world) + ", rank " + std::to_string(rank));
  }
  const std::vector<int64_t> perm = epoch_permutation(n, seed, epoch);
  const int64_t per_rank = (n + world - 1) / world;  // ceil(n / world)
  const int64_t total = per_rank * world;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank));
  // Position p of the padded list is perm[p mod n]: padding repeats the permutation's head.
  for (int64_t p = rank; p < total; p += world) mine.push_back(perm[static_cast<size_t>(p % n)]);
  return mine;
}

}  // namespace trainsim::measure
