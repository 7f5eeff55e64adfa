#include "largebatch/lars.h"

#include <memory>
#include <utility>

namespace trainsim::measure {

bool lars_adapted(const torch::Tensor& parameter) { return parameter.dim() > 1; }

torch::optim::SGD make_sgd(const std::vector<torch::Tensor>& params, double lr, double momentum,
                           double weight_decay, bool lars) {
  const auto options = [&](double decay) { return torch::optim::SGDOptions(lr).momentum(momentum).weight_decay(decay); };
  if (!lars) return torch::optim::SGD(params, options(weight_decay));
  std::vector<torch::Tensor> adapted, plain;
  for (const torch::Tensor& p : params) (lars_adapted(p) ? adapted : plain).push_back(p);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(adapted, std::make_unique<torch::optim::SGDOptions>(options(0)));
  if (!plain.empty()) groups.emplace_back(plain, std::make_unique<torch::optim::SGDOptions>(options(weight_decay)));
  return torch::optim::SGD(std::move(groups), options(weight_decay));
}

void lars_step(const std::vector<torch::Tensor>& params, double eta, double weight_decay) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : params) {
    if (!lars_adapted(p) || !p.grad().defined()) continue;
    torch::Tensor g = p.grad();
    const double w_norm = p.norm().item<double>();
    const double g_norm = g.norm().item<double>();
    const double trust = w_norm > 0 && g_norm > 0 ? eta * w_norm / (g_norm + weight_decay * w_norm) : 1.0;
    g.add_(p, weight_decay).mul_(trust);
  }
}

}  // namespace trainsim::measure
