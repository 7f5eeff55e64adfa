#include "largebatch/state_probes.h"

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "runs/trainer.h"

namespace trainsim::measure {
namespace {

// `buffers` as they are at construction, put back by restore().
class SavedBuffers {
 public:
  explicit SavedBuffers(const std::vector<torch::Tensor>& buffers) : buffers_(buffers) {
    saved_.reserve(buffers.size());
    for (const auto& buffer : buffers) saved_.push_back(buffer.clone());
  }
  void restore() const {
    for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].copy_(saved_[i]);
  }

 private:
  const std::vector<torch::Tensor>& buffers_;
  std::vector<torch::Tensor> saved_;
};

std::vector<torch::nn::BatchNorm2dImpl*> batchnorms(models::StagedModel& model) {
  std::vector<torch::nn::BatchNorm2dImpl*> found;
  for (const auto& m : model.module().modules()) {
    if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get())) found.push_back(bn);
  }
  return found;
}

}  // namespace

void set_learning_rate(torch::optim::SGD& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
}

data::LoaderOptions in_order(int64_t batch_size) {
  data::LoaderOptions options;
  options.batch_size = batch_size;
  options.workers = 0;
  options.shuffle = false;
  options.augment = false;
  return options;
}

ProbeSet probe_set(const data::ImageSet& train_set, int64_t n, const torch::Device& device) {
  const data::ImageSet first = first_samples(train_set, n);
  data::DataLoader loader(first, in_order(n));
  loader.start_epoch(0);
  const auto batch = loader.next();
  return {batch->images.to(device), batch->labels.to(device)};
}

std::vector<double> batchnorm_probe(models::StagedModel& model, const std::vector<torch::Tensor>& buffers,
                                    const ProbeSet& probe, const std::vector<int64_t>& batches) {
  torch::NoGradGuard no_grad;
  const SavedBuffers saved(buffers);
  const int64_t n = probe.labels.size(0);
  const auto sum = torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum);
  std::vector<double> losses;
  for (const int64_t b : batches) {
    auto total = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(probe.labels.device()));
    for (int64_t start = 0; start < n; start += b) {
      const auto output = model.forward(probe.images.narrow(0, start, b));
      total += torch::nn::functional::cross_entropy(output, probe.labels.narrow(0, start, b), sum).to(torch::kFloat64);
    }
    losses.push_back(total.item<double>() / static_cast<double>(n));
  }
  saved.restore();
  return losses;
}

int64_t batchnorm_layers(models::StagedModel& model) { return static_cast<int64_t>(batchnorms(model).size()); }

double with_recomputed_statistics(models::StagedModel& model, const std::vector<torch::Tensor>& buffers,
                                  const ProbeSet& fixed, int64_t micro, const std::function<double()>& evaluate) {
  const int64_t n = fixed.labels.size(0);
  if (micro < 1 || n < micro) {
    throw std::invalid_argument("recomputed BatchNorm statistics: " + std::to_string(n) +
                                " images hold no whole BatchNorm batch of " + std::to_string(micro));
  }
  // The momentum option's own type (c10::optional<double> in LibTorch 1.x, std::optional<double>
  // in 2.x), so the code needs neither alias; empty means the cumulative average.
  using Momentum = std::decay_t<decltype(std::declval<torch::nn::BatchNorm2dImpl&>().options.momentum())>;
  std::vector<std::pair<torch::nn::BatchNorm2dImpl*, Momentum>> norms;
  for (auto* bn : batchnorms(model)) norms.emplace_back(bn, bn->options.momentum());
  if (norms.empty()) throw std::invalid_argument("recomputed BatchNorm statistics: the model has no BatchNorm");
  torch::NoGradGuard no_grad;
  const SavedBuffers saved(buffers);
  const bool training = model.module().is_training();
  model.module().train();
  for (auto& [bn, momentum] : norms) {
    bn->reset_running_stats();
    bn->options.momentum(Momentum{});  // the cumulative average
  }
  for (int64_t start = 0; start + micro <= n; start += micro) model.forward(fixed.images.narrow(0, start, micro));
  for (auto& [bn, momentum] : norms) bn->options.momentum(momentum);
  const double result = evaluate();
  saved.restore();
  model.module().train(training);
  return result;
}

}  // namespace trainsim::measure
