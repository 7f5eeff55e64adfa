#pragma once
// The gradient norms the two-batch noise-scale estimator needs (McCandlish et al. 2018, Appendix
// A.1; docs/LARGE_BATCH.md; the estimator itself is trainsim::GradientNoiseEstimator in
// sim/stats/noise_scale.h). On one device a batch of B is split into k micro-batches of B/k: each
// micro-batch's gradient is a G_small, their size-weighted mean is the batch gradient G_big that
// the optimiser then uses. Under DDP the trainer reads the rank's gradient before the all-reduce
// (G_small, B_small = the per-rank batch) and the averaged one after it (G_big).

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "runs/ddp.h"

namespace trainsim::measure {

// sum over `params` of |grad|^2 as a 0-dim float64 tensor on the parameters' device; parameters
// without a gradient count 0; with `block` (one flag per parameter), the flagged ones only. No host
// synchronisation.
torch::Tensor gradient_sq_norm(const std::vector<torch::Tensor>& params, const std::vector<bool>* block = nullptr);

// One step's squared norms, 0-dim float64 tensors on the device (read them in bulk later: no
// host synchronisation per step).
struct GradientNorms {
  torch::Tensor small_sq_norm;  // |G_small|^2 averaged over the micro-batches (or ranks)
  torch::Tensor big_sq_norm;    // |G_big|^2
  int64_t small_batch = 0;      // B_small
  int64_t big_batch = 0;        // B_big
  // The same two on a block of the parameters (micro_batch_backward's `block`); undefined without one.
  torch::Tensor block_small_sq_norm;
  torch::Tensor block_big_sq_norm;
};

// The mean loss of a slice of the batch; the trainer's forward pass (it may also record
// statistics of the slice, e.g. correct predictions). Must build an autograd graph.
using MeanLoss = std::function<torch::Tensor(const torch::Tensor& inputs, const torch::Tensor& targets)>;

// Leaves in every parameter's grad the gradient of the mean loss over the whole batch, computed
// with min(micro_batches, n) forward and backward passes over consecutive slices of sizes as
// equal as possible (tensor_split):  G_big = sum_i (n_i / n) g_i.  For a model without
// BatchNorm this is exactly the full-batch gradient; with BatchNorm each slice is normalised on
// its own ("ghost" batch norm of size n/k, as DDP does per rank). Existing gradients are
// overwritten. Returns the norms when there are >= 2 slices of equal size (n divisible by k),
// else nullopt (the step still trains). Throws std::invalid_argument for micro_batches < 1, an
// empty batch or inputs and targets of different lengths. first_slice_grad: where given, the first
// slice's own gradient g_1 (one tensor per parameter, undefined where it has none). block: where
// given (one flag per parameter), the norms of the flagged parameters' gradients too.
std::optional<GradientNorms> micro_batch_backward(const std::vector<torch::Tensor>& params,
                                                  const MeanLoss& mean_loss, const torch::Tensor& inputs,
                                                  const torch::Tensor& targets, int64_t micro_batches,
                                                  std::vector<torch::Tensor>* first_slice_grad = nullptr,
                                                  const std::vector<bool>* block = nullptr);

// One DDP backward of `loss` (this rank's mean loss over its `rank_batch` samples) under `ddp`,
// whose forward ran between ddp.pre_forward() and ddp.post_forward() as for any DDP step, with
// ddp.record_local_gradient_norm() called once before: backward, in which the reducer's comm hook
// adds up |grad|^2 of this rank's own gradient bucket by bucket before the all-reduce (G_small,
// B_small = rank_batch), then |grad|^2 of the all-reduced average left in the gradients (G_big,
// B_big = rank_batch * world size). small_sq_norm is this rank's alone: average it over the ranks
// (an all-reduce) before the estimator.
GradientNorms ddp_backward(const std::vector<torch::Tensor>& params, DistributedDataParallel& ddp,
                           const torch::Tensor& loss, int64_t rank_batch, int world_size);

// The curvature of the loss along the current gradient, for eps_max = |g|^2 / g^T H g
// (trainsim::CurvatureEstimator). g is the gradient the parameters hold on entry (the step's);
// H is measured on another batch (`inputs`, `targets`, as independent of g as the caller can
// make it) by a finite difference of its gradient, computed as micro_batch_backward does:
//   g^T H g ~ |g|^2 v . (grad L(theta + h v) - grad L(theta)) / h,   v = g / |g|,
// h = kCurvatureStep |theta|. Two forward and backward passes; on return the parameters, their
// gradients and `buffers` (BatchNorm's running statistics, which the passes update) are as on
// entry. Returns {|g|^2, g^T H g}; nullopt when g or theta is 0.
// small_grad: where given (a micro-batch's gradient g_s of the step's batch, as micro_batch_backward's
// first_slice_grad), g_s^T H g_s with the same H too, one more forward and backward pass
// (CurvatureEstimator's B_noise = tr(H Sigma) / G^T H G); nullopt in the result where g_s is 0.
// block: where given (one flag per parameter), also g_b^T H g_b with the same H along g_b, g's part
// on the flagged parameters (zero elsewhere), one more forward and backward pass; nullopt in the
// result where g_b is 0.
struct GradientCurvature {
  double grad_sq_norm = 0;
  double grad_hessian_grad = 0;
  std::optional<double> small_grad_hessian_grad;
  double block_grad_sq_norm = 0;
  std::optional<double> block_grad_hessian_grad;
};
constexpr double kCurvatureStep = 1e-3;
std::optional<GradientCurvature> gradient_curvature(const std::vector<torch::Tensor>& params,
                                                    const std::vector<torch::Tensor>& buffers,
                                                    const MeanLoss& mean_loss, const torch::Tensor& inputs,
                                                    const torch::Tensor& targets, int64_t micro_batches,
                                                    const std::vector<torch::Tensor>* small_grad = nullptr,
                                                    const std::vector<bool>* block = nullptr);

// Which parameters are scale-invariant, read from the gradients they hold: the loss of a weight
// that BatchNorm normalises (a convolution or linear layer without bias followed by BatchNorm in
// training mode) is the same at w and c w, so w . dL/dw = 0 (Euler's theorem for a function
// homogeneous of degree 0). A parameter counts as scale-invariant where |w . g| <= kScaleInvariantCosine
// |w| |g| (float32 rounding and BatchNorm's epsilon leave about 1e-6 on such a weight); one without
// a gradient, or with a zero one, counts as not (nothing is known of it).
constexpr double kScaleInvariantCosine = 1e-4;
std::vector<bool> scale_invariant_parameters(const std::vector<torch::Tensor>& params);

}  // namespace trainsim::measure
