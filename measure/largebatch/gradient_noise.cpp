#include "largebatch/gradient_noise.h"

#include <cmath>
#include <algorithm>
#include <stdexcept>
#include <string>

namespace trainsim::measure {

torch::Tensor gradient_sq_norm(const std::vector<torch::Tensor>& params, const std::vector<bool>* block) {
  if (params.empty()) throw std::invalid_argument("gradient_sq_norm: no parameters");
  if (block && block->size() != params.size()) {
    throw std::invalid_argument("gradient_sq_norm: " + std::to_string(block->size()) + " block flags for " +
                                std::to_string(params.size()) + " parameters");
  }
  torch::NoGradGuard no_grad;
  auto total = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(params.front().device()));
  for (size_t j = 0; j < params.size(); ++j) {
    if (block && !(*block)[j]) continue;
    const auto& grad = params[j].grad();
    if (grad.defined()) total += grad.square().sum(torch::kFloat64);
  }
  return total;
}

std::optional<GradientNorms> micro_batch_backward(const std::vector<torch::Tensor>& params,
                                                  const MeanLoss& mean_loss, const torch::Tensor& inputs,
                                                  const torch::Tensor& targets, int64_t micro_batches,
                                                  std::vector<torch::Tensor>* first_slice_grad,
                                                  const std::vector<bool>* block) {
  if (micro_batches < 1) {
    throw std::invalid_argument("micro_batch_backward: micro_batches must be >= 1, got " +
                                std::to_string(micro_batches));
  }
  const int64_t n = inputs.size(0);
  if (n < 1 || targets.size(0) != n) {
    throw std::invalid_argument("micro_batch_backward: " + std::to_string(n) + " inputs and " +
                                std::to_string(targets.size(0)) + " targets");
  }
  const int64_t k = std::min(micro_batches, n);
  const auto input_slices = inputs.tensor_split(k);
  const auto target_slices = targets.tensor_split(k);

  std::vector<torch::Tensor> batch_grad(params.size());  // sum_i (n_i / n) g_i
  auto small_sq_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(inputs.device()));
  auto block_small_sq_sum = torch::zeros_like(small_sq_sum);
  for (int64_t i = 0; i < k; ++i) {
    for (const auto& p : params) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    mean_loss(input_slices[static_cast<size_t>(i)], target_slices[static_cast<size_t>(i)]).backward();

    torch::NoGradGuard no_grad;
    small_sq_sum += gradient_sq_norm(params);
    if (block) block_small_sq_sum += gradient_sq_norm(params, block);
    if (first_slice_grad && i == 0) {
      first_slice_grad->assign(params.size(), torch::Tensor());
      for (size_t j = 0; j < params.size(); ++j) {
        if (params[j].grad().defined()) (*first_slice_grad)[j] = params[j].grad().detach().clone();
      }
    }
    const double weight = static_cast<double>(input_slices[static_cast<size_t>(i)].size(0)) / static_cast<double>(n);
    for (size_t j = 0; j < params.size(); ++j) {
      const auto& grad = params[j].grad();
      if (!grad.defined()) continue;
      if (batch_grad[j].defined()) {
        batch_grad[j].add_(grad, weight);
      } else {
        batch_grad[j] = grad * weight;
      }
    }
  }
  {
    torch::NoGradGuard no_grad;
    for (size_t j = 0; j < params.size(); ++j) {
      if (batch_grad[j].defined()) params[j].mutable_grad().copy_(batch_grad[j]);
    }
  }
  if (k < 2 || n % k != 0) return std::nullopt;
  GradientNorms norms;
  norms.small_sq_norm = small_sq_sum / static_cast<double>(k);  // mean over the k micro-batches
  norms.big_sq_norm = gradient_sq_norm(params);
  norms.small_batch = n / k;
  norms.big_batch = n;
  if (block) {
    norms.block_small_sq_norm = block_small_sq_sum / static_cast<double>(k);
    norms.block_big_sq_norm = gradient_sq_norm(params, block);
  }
  return norms;
}

GradientNorms ddp_backward(const std::vector<torch::Tensor>& params, DistributedDataParallel& ddp,
                           const torch::Tensor& loss, int64_t rank_batch, int world_size) {
  if (rank_batch < 1 || world_size < 2) {
    throw std::invalid_argument("ddp_backward: need a rank batch >= 1 and >= 2 ranks");
  }
  loss.backward();
  GradientNorms norms;
  norms.small_sq_norm = ddp.take_local_gradient_sq_norm();  // this rank's own gradient
  norms.big_sq_norm = gradient_sq_norm(params);             // the average over the ranks
  norms.small_batch = rank_batch;
  norms.big_batch = rank_batch * world_size;
  return norms;
}

std::optional<GradientCurvature> gradient_curvature(const std::vector<torch::Tensor>& params,
                                                    const std::vector<torch::Tensor>& buffers,
                                                    const MeanLoss& mean_loss, const torch::Tensor& inputs,
                                                    const torch::Tensor& targets, int64_t micro_batches,
                                                    const std::vector<torch::Tensor>* small_grad,
                                                    const std::vector<bool>* block) {
  if (block && block->size() != params.size()) {
    throw std::invalid_argument("gradient_curvature: " + std::to_string(block->size()) + " block flags for " +
                                std::to_string(params.size()) + " parameters");
  }
  std::vector<torch::Tensor> step_grad(params.size());
  std::vector<torch::Tensor> saved_params(params.size());
  std::vector<torch::Tensor> saved_buffers;
  double grad_sq = 0;
  double param_sq = 0;
  const auto sq_norm = [&](const std::vector<torch::Tensor>& tensors) {
    auto total = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(inputs.device()));
    for (const auto& t : tensors) {
      if (t.defined()) total += t.detach().square().sum(torch::kFloat64);
    }
    return total.item<double>();
  };
  {
    torch::NoGradGuard no_grad;
    for (size_t j = 0; j < params.size(); ++j) {
      saved_params[j] = params[j].detach().clone();
      if (params[j].grad().defined()) step_grad[j] = params[j].grad().detach().clone();
    }
    for (const auto& b : buffers) saved_buffers.push_back(b.detach().clone());
    grad_sq = sq_norm(step_grad);
    param_sq = sq_norm(saved_params);
  }
  if (!(grad_sq > 0) || !(param_sq > 0) || !std::isfinite(grad_sq)) return std::nullopt;
  const double h = kCurvatureStep * std::sqrt(param_sq);

  // grad L(theta) on the other batch, once for every direction.
  micro_batch_backward(params, mean_loss, inputs, targets, micro_batches);
  std::vector<torch::Tensor> grad_at_theta(params.size());
  {
    torch::NoGradGuard no_grad;
    for (size_t j = 0; j < params.size(); ++j) {
      if (params[j].grad().defined()) grad_at_theta[j] = params[j].grad().detach().clone();
    }
  }
  // d^T H d along a direction d (one tensor per parameter): grad L(theta + h v), v = d / |d|, then
  // d . (delta grad) / (h |d|) = v . H v |d|, times |d| again. The parameters are theta after it.
  const auto curvature_along = [&](const std::vector<torch::Tensor>& d, double d_sq) {
    const double d_norm = std::sqrt(d_sq);
    {
      torch::NoGradGuard no_grad;
      for (size_t j = 0; j < params.size(); ++j) {
        if (d[j].defined()) params[j].add_(d[j], h / d_norm);
      }
    }
    micro_batch_backward(params, mean_loss, inputs, targets, micro_batches);
    torch::NoGradGuard no_grad;
    auto directional = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(inputs.device()));
    for (size_t j = 0; j < params.size(); ++j) {
      if (d[j].defined() && grad_at_theta[j].defined() && params[j].grad().defined()) {
        directional += (d[j].to(torch::kFloat64) *
                        (params[j].grad().to(torch::kFloat64) - grad_at_theta[j].to(torch::kFloat64)))
                           .sum();
      }
      params[j].copy_(saved_params[j]);
    }
    return directional.item<double>() * d_norm / h;
  };
  GradientCurvature result;
  result.grad_sq_norm = grad_sq;
  result.grad_hessian_grad = curvature_along(step_grad, grad_sq);
  if (small_grad) {
    if (small_grad->size() != params.size()) {
      throw std::invalid_argument("gradient_curvature: " + std::to_string(small_grad->size()) +
                                  " micro-batch gradients for " + std::to_string(params.size()) + " parameters");
    }
    const double small_sq = sq_norm(*small_grad);
    if (small_sq > 0 && std::isfinite(small_sq)) result.small_grad_hessian_grad = curvature_along(*small_grad, small_sq);
  }
  if (block) {
    std::vector<torch::Tensor> block_grad(params.size());
    for (size_t j = 0; j < params.size(); ++j) {
      if ((*block)[j]) block_grad[j] = step_grad[j];
    }
    const double block_sq = sq_norm(block_grad);
    result.block_grad_sq_norm = block_sq;
    if (block_sq > 0 && std::isfinite(block_sq)) result.block_grad_hessian_grad = curvature_along(block_grad, block_sq);
  }
  {
    torch::NoGradGuard no_grad;
    for (size_t j = 0; j < params.size(); ++j) {
      if (step_grad[j].defined()) {
        params[j].mutable_grad().copy_(step_grad[j]);
      } else if (params[j].grad().defined()) {
        params[j].mutable_grad().zero_();
      }
    }
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved_buffers[i]);
  }
  return result;
}

std::vector<bool> scale_invariant_parameters(const std::vector<torch::Tensor>& params) {
  std::vector<bool> out(params.size(), false);
  torch::NoGradGuard no_grad;
  for (size_t j = 0; j < params.size(); ++j) {
    const torch::Tensor& g = params[j].grad();
    if (!g.defined()) continue;
    const auto w = params[j].detach().to(torch::kFloat64);
    const auto g64 = g.detach().to(torch::kFloat64);
    const double norms = w.norm().item<double>() * g64.norm().item<double>();
    const double dot = (w * g64).sum().item<double>();
    out[j] = norms > 0 && std::isfinite(norms) && std::abs(dot) <= kScaleInvariantCosine * norms;
  }
  return out;
}

}  // namespace trainsim::measure
