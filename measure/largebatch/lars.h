#pragma once
// LARS, layer-wise adaptive rate scaling (You, Gitman and Ginsburg 2017, "Large Batch Training of
// Convolutional Networks"), as `measure baseline --optimizer lars` runs it: momentum SGD whose
// weight tensors each take the step trust (g + wd w), trust = eta ||w|| / (||g|| + wd ||w||), the
// learning-rate rule's rate on top. Biases and BatchNorm's scales and shifts (1-d tensors) keep
// plain SGD with weight decay, as LARS implementations leave them.

#include <torch/torch.h>

#include <vector>

namespace trainsim::measure {

// Whether LARS adapts `parameter`'s step: weight tensors (more than one dimension).
bool lars_adapted(const torch::Tensor& parameter);

// Momentum SGD over `params` at `lr`: with `lars`, two groups: the adapted tensors without the
// optimizer's weight decay (lars_step folds it into their step) and the rest with it.
torch::optim::SGD make_sgd(const std::vector<torch::Tensor>& params, double lr, double momentum,
                           double weight_decay, bool lars);

// Replaces each adapted tensor's gradient g by trust (g + weight_decay w), trust as above (1 where
// either norm is 0: a tensor at zero or without gradient keeps SGD's step). Call after backward,
// before the optimizer's step.
void lars_step(const std::vector<torch::Tensor>& params, double eta, double weight_decay);

}  // namespace trainsim::measure
