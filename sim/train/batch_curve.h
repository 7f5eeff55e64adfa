#pragma once
// A quantity measured at a few batch sizes (a layer's time, the optimizer step, peak memory...),
// evaluated at any batch size.

#include <cstdint>
#include <vector>

namespace trainsim::train {

enum class BatchExtrapolation {
  // Work that grows with the batch (layer forward/backward, loss). Outside the measured range the
  // nearest segment is extended, but never below the proportional floor v_end * b / b_end (the
  // nearest measured point's time per sample: a larger batch cannot be cheaper per sample than
  // perfect scaling from the largest one, nor a smaller batch cheaper than perfect scaling from
  // the smallest). With one point: v_1 * b / b_1.
  kProportionalFloor,
  // Work that does not depend on the batch (optimizer step, zero_grad, loop overhead):
  // outside the measured range the nearest measured value is held.
  kHoldNearest,
};

// v(b): piecewise linear in b through (batches[i], values[i]) inside the measured range (hits
// every measured point exactly), extended as `mode` says outside it, never negative.
// Throws std::invalid_argument for empty or mismatched arrays, or batches not strictly ascending
// and positive.
double interpolate_in_batch(const std::vector<int64_t>& batches, const std::vector<double>& values,
                            double batch, BatchExtrapolation mode);

}  // namespace trainsim::train
