#include "runs/train_step.h"

#include <utility>

#include "autocast.h"

namespace trainsim::measure {

TrainStep::TrainStep(Forward forward, torch::optim::SGD& optimizer, DistributedDataParallel* ddp,
                     const torch::Device& device, DataParallel* dp, Precision precision)
    : forward_(std::move(forward)), optimizer_(optimizer), ddp_(ddp), device_(device), dp_(dp), precision_(precision) {
  reset_statistics();
}

void TrainStep::reset_statistics() {
  loss_sum_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  correct_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(device_));
}

torch::Tensor TrainStep::run(const torch::Tensor& images, const torch::Tensor& labels) {
  optimizer_.zero_grad();
  torch::Tensor output, loss;
  {
    // As `with autocast(): loss = criterion(ddp_model(images), labels)`.
    AutocastRegion autocast(precision_, device_);
    if (ddp_) ddp_->pre_forward();
    output = forward_(images);
    if (ddp_) ddp_->post_forward();
    loss = torch::nn::functional::cross_entropy(output, labels);
  }
  loss.backward();
  if (dp_) dp_->reduce_gradients();
  optimizer_.step();

  torch::NoGradGuard no_grad;
  const torch::Tensor mean_loss = loss.detach();
  loss_sum_ += mean_loss.to(torch::kFloat64) * static_cast<double>(labels.size(0));
  correct_ += output.detach().argmax(1).eq(labels).sum();
  return mean_loss;
}

}  // namespace trainsim::measure
