#include "largebatch/baseline.h"

#include <stdlib.h>

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli_util.h"
#include "data/idx.h"
#include "data/loader.h"
#include "device.h"
#include "format/errors.h"
#include "format/profile_io.h"
#include "largebatch/gradient_noise.h"
#include "largebatch/lars.h"
#include "largebatch/lr_schedule.h"
#include "largebatch/pace_probe.h"
#include "largebatch/state_probes.h"
#include "launch.h"
#include "machine.h"
#include "models/describe.h"
#include "models/staged.h"
#include "runs/ddp.h"
#include "runs/distributed_sampler.h"
#include "runs/trainer.h"
#include "stats/large_batch.h"
#include "stats/noise_scale.h"

namespace trainsim::measure {
namespace {

constexpr int64_t kCifarTrainImages = 50000;  // also the largest synthetic training set
constexpr int64_t kCifarTestImages = 10000;
// The synthetic held-out set is drawn with another seed than the training images: other images
// of the same classes.
constexpr uint64_t kSyntheticTestSeedOffset = 0x7e57;
constexpr int64_t kEvalBatch = 500;
// Ranks run whole training jobs: the launcher's timeout is only a safety net (7 days).
constexpr double kRankTimeoutSeconds = 7 * 24 * 3600.0;
constexpr double kProgressInterval = 2.0;  // seconds between progress lines

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The fashion-cnns read Fashion-MNIST (IDX files), the ResNets CIFAR-10 (binaries).
bool fashion(const BaselineOptions& o) { return models::fashion_model(o.model); }

// The folder the images come from: --data, else Debian's Fashion-MNIST for the fashion-cnns; empty:
// synthetic CIFAR-10 images.
std::string data_dir(const BaselineOptions& o) {
  if (o.data_dir.empty() && fashion(o)) return data::kFashionMnistDir;
  return o.data_dir;
}

// A --data folder with the marker file SYNTHETIC (`measure make-data`, the tests' generated IDX
// folders) holds synthetic images too.
std::string data_label(const BaselineOptions& o) {
  const std::string dir = data_dir(o);
  if (dir.empty() || data::is_synthetic_dir(dir)) return "synthetic";
  return fashion(o) ? data::kFashionMnistFormat.name : data::kCifar10Format.name;
}

// Fraction of `test_set` classified right, in eval mode (BatchNorm running statistics).
double test_accuracy(models::StagedModel& model, const data::ImageSet& test_set, const torch::Device& device) {
  data::DataLoader loader(test_set, in_order(kEvalBatch));
  torch::NoGradGuard no_grad;
  model.module().eval();
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    correct += model.forward(batch->images.to(device)).argmax(1).eq(batch->labels.to(device)).sum();
  }
  model.module().train();
  return static_cast<double>(correct.item<int64_t>()) / static_cast<double>(test_set.size());
}

data::ImageSet load_train_set(const BaselineOptions& o) {
  const std::string dir = data_dir(o);
  if (dir.empty()) return data::synthetic_cifar10(o.train_samples.value_or(kCifarTrainImages), o.seed);
  const data::ImageSet all = fashion(o) ? data::read_fashion_mnist_train(dir) : data::read_cifar10_train(dir);
  const int64_t n = o.train_samples.value_or(all.size());  // default: the folder's whole training set
  if (n > all.size()) {
    throw UsageError("--train-samples " + std::to_string(n) + " exceeds the " + std::to_string(all.size()) +
                     " training images in " + dir);
  }
  return first_samples(all, n);
}

data::ImageSet load_test_set(const BaselineOptions& o) {
  const std::string dir = data_dir(o);
  if (dir.empty()) {
    return data::synthetic_cifar10(o.test_samples.value_or(kCifarTestImages), o.seed + kSyntheticTestSeedOffset);
  }
  const data::ImageSet all = fashion(o) ? data::read_fashion_mnist_test(dir) : data::read_cifar10_test(dir);
  const int64_t n = o.test_samples.value_or(all.size());
  if (n > all.size()) {
    throw UsageError("--test-samples " + std::to_string(n) + " exceeds the " + std::to_string(all.size()) +
                     " test images in " + dir);
  }
  return first_samples(all, n);
}

// Loads the profile at `path` (a bad one stops the run before training), or creates a new one
// holding only the machine and measurement blocks.
void prepare_profile(const std::string& path, const MachineInfo& machine, const std::string& command,
                     const std::string& data) {
  if (std::filesystem::exists(path)) {
    (void)load_profile(path);
    return;
  }
  Profile profile;
  profile.machine = machine;
  profile.measurement.command = command;
  profile.measurement.data = data;
  write_profile_atomic(profile, path);
}

void save_curve(const std::string& path, const TrainingCurve& curve) {
  Profile profile = load_profile(path);
  put_training_curve(profile, curve);
  write_profile_atomic(profile, path);
}


// The curvature at the start (TrainingCurve::start_curvature): the parameters hold the first
// batch's gradient g; H on the same batch. nullopt where it cannot be measured (g or theta 0).
std::optional<StartCurvature> start_curvature(const std::vector<torch::Tensor>& params,
                                              const std::vector<torch::Tensor>& buffers, const MeanLoss& loss,
                                              const torch::Tensor& images, const torch::Tensor& labels,
                                              int64_t micro_batches, double lr) {
  const std::vector<bool> invariant = scale_invariant_parameters(params);
  std::vector<bool> rest(params.size(), false);
  StartCurvature start;
  for (size_t j = 0; j < params.size(); ++j) {
    if (!params[j].grad().defined()) continue;
    ++start.parameters;
    if (invariant[j]) {
      ++start.scale_invariant;
    } else {
      rest[j] = true;
    }
  }
  const auto measured = gradient_curvature(params, buffers, loss, images, labels, micro_batches, nullptr, &rest);
  if (!measured || !std::isfinite(measured->grad_hessian_grad)) return std::nullopt;
  start.lr_over_eps_max = lr * measured->grad_hessian_grad / measured->grad_sq_norm;
  if (measured->block_grad_hessian_grad && std::isfinite(*measured->block_grad_hessian_grad)) {
    start.rest_lr_over_eps_max = lr * *measured->block_grad_hessian_grad / measured->block_grad_sq_norm;
  }
  return start;
}

void print_curve(const TrainingCurve& c, const std::string& path) {
  std::printf("baseline: %s, batch %lld (B_small %lld), %lld samples per epoch (%s), lr %g (%s), written to %s\n",
              c.model.c_str(), static_cast<long long>(c.batch), static_cast<long long>(c.small_batch),
              static_cast<long long>(c.train_samples), c.data.c_str(), c.lr, c.lr_rule.c_str(), path.c_str());
  std::printf("  epoch  train_loss  train_acc  test_acc     |G|^2   tr(Sigma)  B_simple   eps_max     B_noise  +- (s.e.)\n");
  for (const auto& p : c.epochs) {
    std::printf("  %5d  %10.4f  %9.4f  %8.4f  %8.4g  %10.4g  %8.1f  %8s  %10s  %9s\n", p.epoch, p.train_loss,
                p.train_accuracy, p.test_accuracy, p.grad_sq_norm, p.trace_sigma, p.noise_scale,
                p.max_lr > 0 ? std::to_string(p.max_lr).c_str() : "-",
                p.curvature_noise_scale > 0 ? std::to_string(p.curvature_noise_scale).c_str() : "-",
                p.curvature_noise_scale_se > 0 ? std::to_string(p.curvature_noise_scale_se).c_str() : "-");
  }
}

}  // namespace

TrainingCurve train_baseline(const BaselineOptions& o, const data::ImageSet& train_set,
                             const data::ImageSet* test_set, Communicator* communicator,
                             const EpochDone& epoch_done) {
  const bool ddp = communicator != nullptr;
  const int rank = ddp ? communicator->rank() : 0;
  const int world = ddp ? communicator->world_size() : 1;
  if (world != o.gpus) throw std::logic_error("train_baseline: a communicator of the size --gpus is needed");
  const bool cuda = o.device == "cuda";
  const torch::Device device = cuda ? torch::Device(torch::kCUDA, static_cast<int8_t>(rank)) : torch::Device(torch::kCPU);
  if (cuda) at::globalContext().setBenchmarkCuDNN(true);  // as the course's script

  torch::manual_seed(o.seed);  // the same initial weights everywhere (DDP broadcasts them anyway)
  const std::shared_ptr<models::StagedModel> staged = models::make_model(o.model);
  models::StagedModel& model = *staged;
  model.module().to(device);
  model.module().train();
  std::unique_ptr<DistributedDataParallel> ddp_model;
  if (ddp) {
    ddp_model = std::make_unique<DistributedDataParallel>(model.module(), *communicator);
    ddp_model->record_local_gradient_norm();  // G_small: each rank's gradient before the all-reduce
  }
  const std::vector<torch::Tensor> params = model.module().parameters();
  torch::optim::SGD optimizer = make_sgd(params, o.lr, o.momentum, o.weight_decay, o.optimizer == "lars");

  const int64_t process_batch = per_process_batch(o);
  data::LoaderOptions loader_options;
  loader_options.batch_size = process_batch;
  loader_options.workers = o.workers;
  loader_options.augment = true;
  // DDP: the sampler orders the data and the loader only draws crops and flips, one stream per rank.
  loader_options.shuffle = !ddp;
  loader_options.seed = ddp ? o.seed + 1 + static_cast<uint64_t>(rank) : o.seed;
  std::optional<data::DataLoader> single_loader;
  if (!ddp) single_loader.emplace(train_set, loader_options);
  // Steps per epoch: ceil(share / per-process batch), the share being ceil(n / world) under DDP.
  const int64_t share = (train_set.size() + world - 1) / world;
  const int64_t steps_per_epoch = (share + process_batch - 1) / process_batch;

  LrSchedule schedule;
  schedule.rule = o.lr_rule;
  schedule.base_lr = o.lr;
  schedule.base_batch = o.lr_base_batch;
  schedule.batch = o.batch;
  schedule.warmup_epochs = o.warmup_epochs;
  schedule.steps_per_epoch = steps_per_epoch;
  validate(schedule);

  GradientNoiseEstimator noise(o.ema_decay);
  // eps_max every curvature_every-th step, its averages' memory in steps the noise scale's.
  const bool measure_curvature = !ddp && o.curvature_every > 0;
  CurvatureEstimator curvature(measure_curvature ? std::pow(o.ema_decay, static_cast<double>(o.curvature_every))
                                                 : o.ema_decay);
  const std::vector<torch::Tensor> buffers = model.module().buffers();
  const MeanLoss plain_loss = [&](const torch::Tensor& x, const torch::Tensor& y) {
    return torch::nn::functional::cross_entropy(model.forward(x), y);
  };
  torch::Tensor previous_images;  // the last full batch: the curvature's batch, independent of the step's
  torch::Tensor previous_labels;
  TrainingCurve curve;
  curve.model = o.model;
  curve.data = data_label(o);
  curve.batch = o.batch;
  curve.small_batch = small_batch(o);
  curve.train_samples = train_set.size();
  curve.lr = o.lr;
  curve.momentum = o.momentum;
  curve.weight_decay = o.weight_decay;
  curve.lr_rule = to_string(o.lr_rule);
  if (o.lr_rule == LrRule::kLinearWarmup) curve.warmup_epochs = o.warmup_epochs;
  curve.optimizer = o.optimizer;
  if (o.optimizer == "lars") curve.lars_eta = o.lars_eta;
  // The BatchNorm probe, with the test accuracy on rank 0.
  std::optional<ProbeSet> probe;
  const std::vector<int64_t> probe_batches = [&] {
    if (o.bn_probe_images_given || o.bn_probe_images <= train_set.size()) return batchnorm_probe_batches(o);
    BaselineOptions shrunk = o;  // the default probe shrinks to a smaller training set
    shrunk.bn_probe_images = train_set.size();
    return batchnorm_probe_batches(shrunk);
  }();
  if (!probe_batches.empty() && rank == 0) {
    if (probe_batches.back() > train_set.size()) {
      throw UsageError("--bn-probe-images " + std::to_string(o.bn_probe_images) + ": the probe needs " +
                       std::to_string(probe_batches.back()) + " training images, the set holds " +
                       std::to_string(train_set.size()));
    }
    probe = probe_set(train_set, probe_batches.back(), device);
    curve.probe_batches = probe_batches;
  }
  const auto probe_losses = [&] {
    return probe ? batchnorm_probe(model, buffers, *probe, probe_batches) : std::vector<double>{};
  };

  // The test accuracy with BatchNorm's statistics recomputed (--recompute-bn), on rank 0.
  std::optional<ProbeSet> recompute_set;
  const int64_t bn_batch = small_batch(o);
  if (o.recompute_bn_images > 0 && test_set) {
    if (batchnorm_layers(model) == 0) throw UsageError("--recompute-bn: " + o.model + " has no BatchNorm");
    if (o.recompute_bn_images > train_set.size()) {
      throw UsageError("--recompute-bn " + std::to_string(o.recompute_bn_images) + " exceeds the training set (" +
                       std::to_string(train_set.size()) + " images)");
    }
    const int64_t whole = o.recompute_bn_images / bn_batch * bn_batch;
    recompute_set = probe_set(train_set, whole, device);
    curve.recompute_bn_images = whole;
  }
  // Eval mode's test accuracy and the recomputed one (-1 where not measured).
  const auto test_accuracies = [&]() -> std::pair<double, double> {
    if (!test_set) return {-1, -1};
    const auto accuracy = [&] { return test_accuracy(model, *test_set, device); };
    const double eval_mode = accuracy();
    if (!recompute_set) return {eval_mode, -1};
    return {eval_mode, with_recomputed_statistics(model, buffers, *recompute_set, bn_batch, accuracy)};
  };

  // The pace probe (one device, SGD: checked with the flags).
  std::optional<ProbeSet> pace_fixed;
  PaceProbeRun pace_run;
  if (!o.pace.at_steps.empty()) {
    if (o.pace.at_steps.back() > steps_per_epoch * o.epochs) {
      throw UsageError("--pace-probe-at " + std::to_string(o.pace.at_steps.back()) + ": the run has " +
                       std::to_string(steps_per_epoch * o.epochs) + " steps");
    }
    for (const PacePair& p : o.pace.pairs) {
      if (p.ratio * o.batch > train_set.size()) {
        throw UsageError("--pace-pairs: " + std::to_string(p.ratio) + "x the batch (" + std::to_string(p.ratio * o.batch) +
                         ") exceeds the training set (" + std::to_string(train_set.size()) + " images)");
      }
    }
    if (o.pace.images > train_set.size()) {
      throw UsageError("--pace-probe-images " + std::to_string(o.pace.images) + " exceeds the training set (" +
                       std::to_string(train_set.size()) + " images)");
    }
    pace_fixed = probe_set(train_set, o.pace.images, device);
    pace_run = {&model, &params, &buffers, &optimizer, &train_set, device, o.batch, o.micro_batches, o.workers, o.seed};
  }
  size_t next_pace = 0;
  const bool show_progress = !o.quiet && rank == 0;
  const auto run_start = Clock::now();
  auto last_print = run_start;
  int64_t step = 0;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  // The scale-invariant parameters (docs/LARGE_BATCH.md, "The scale-invariant weights' norm"): found
  // from the second step's gradients (before the first step the first BatchNorm's bias is still 0,
  // which leaves its scale invariant by accident), then their |w|^2, each step's |delta w|^2 / lr^2
  // and tr(Sigma) of their gradients. One device, plain SGD.
  const bool measure_scale_invariant = !ddp && o.optimizer == "sgd";
  std::vector<bool> si_block;  // empty: not (yet) found
  GradientNoiseEstimator si_noise(o.ema_decay);
  auto si_epoch_sum = torch::zeros({}, f64);  // sum of |delta w|^2 / lr^2 over the epoch's steps
  int64_t si_epoch_steps = 0;
  auto si_window_sum = torch::zeros({}, f64);  // the same since the last curve sample
  int64_t si_window_steps = 0;
  const auto si_weight_sq = [&] {
    torch::NoGradGuard no_grad;
    auto total = torch::zeros({}, f64);
    for (size_t j = 0; j < params.size(); ++j) {
      if (si_block[j]) total += params[j].detach().square().sum(torch::kFloat64);
    }
    return total.item<double>();
  };
  // A sample's or an epoch's readings from the steps summed since the last one (`sum` over `steps`),
  // which start again.
  const auto take_scale_invariant = [&](auto& reading, torch::Tensor& sum, int64_t& steps) {
    if (!si_block.empty() && steps > 0) {
      reading.si_weight_sq = si_weight_sq();
      reading.si_update_sq = sum.item<double>() / static_cast<double>(steps);
      reading.si_trace_sigma = std::max(0.0, si_noise.trace_sigma());
    }
    sum.zero_();
    steps = 0;
  };
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    data::ImageSet shard;
    std::optional<data::DataLoader> rank_loader;
    if (ddp) {
      shard = select_samples(train_set, distributed_sampler_indices(train_set.size(), world, rank, o.seed, epoch));
      rank_loader.emplace(shard, loader_options);
      communicator->barrier();  // the ranks start each epoch together
    }
    data::DataLoader& loader = ddp ? *rank_loader : *single_loader;

    auto loss_sum = torch::zeros({}, f64);
    auto correct = torch::zeros({}, f64);
    int64_t samples = 0;
    std::vector<torch::Tensor> small_sq;  // per measured step: |G_small|^2 (micro-batch mean, or this rank's)
    std::vector<torch::Tensor> big_sq;    // per measured step: |G_big|^2
    int64_t small_size = 0;
    int64_t big_size = 0;
    std::vector<torch::Tensor> si_small_sq;  // the same two on the scale-invariant parameters
    std::vector<torch::Tensor> si_big_sq;
    size_t si_absorbed = 0;
    // The steps' norms since the last call into the moving averages: the ranks' |G_small|^2
    // averaged over the ranks (a better estimate than one rank's), in one collective.
    size_t absorbed = 0;
    // The norms of `norms` from index `from` on, one tensor.
    const auto stacked_since = [](const std::vector<torch::Tensor>& norms, size_t from) {
      return torch::stack(std::vector<torch::Tensor>(norms.begin() + static_cast<std::ptrdiff_t>(from), norms.end()));
    };
    const auto feed = [&](GradientNoiseEstimator& estimator, const torch::Tensor& small, const torch::Tensor& big) {
      const auto small_cpu = small.cpu();
      const auto big_cpu = big.cpu();
      for (int64_t i = 0; i < small_cpu.size(0); ++i) {
        estimator.add(small_cpu[i].item<double>(), big_cpu[i].item<double>(), small_size, big_size);
      }
    };
    const auto absorb_norms = [&] {
      if (absorbed == small_sq.size()) return;
      auto small = stacked_since(small_sq, absorbed);
      if (ddp) {
        communicator->wait(communicator->all_reduce(small));
        small = small / static_cast<double>(world);
      }
      feed(noise, small, stacked_since(big_sq, absorbed));
      absorbed = small_sq.size();
      if (si_absorbed < si_small_sq.size()) {
        feed(si_noise, stacked_since(si_small_sq, si_absorbed), stacked_since(si_big_sq, si_absorbed));
        si_absorbed = si_small_sq.size();
      }
    };
    loader.start_epoch(epoch);
    int64_t batch_index = 0;
    // --evals-per-epoch K: a curve sample after step s_j (j = 1..K; s_K is the epoch's end), its
    // means over the window since the previous one, summed over the ranks. In the first epoch, where
    // the loss moves fastest, s_j = S (j/K)^2 (the first within a few steps); then S j / K.
    const auto eval_step = [&](int j) {
      const double f = static_cast<double>(j) / o.evals_per_epoch;
      return static_cast<int64_t>(std::llround(static_cast<double>(steps_per_epoch) * (epoch == 0 ? f * f : f)));
    };
    int next_eval = 1;
    std::array<double, 3> window_start{0, 0, 0};  // the sums at the previous sample
    // The loss, correct and sample sums so far in this epoch, summed over the ranks.
    const auto reduced_sums = [&] {
      auto sums = torch::stack({loss_sum, correct, torch::tensor(static_cast<double>(samples), f64)});
      if (ddp) communicator->wait(communicator->all_reduce(sums));
      const auto t = sums.cpu();
      return std::array<double, 3>{t[0].item<double>(), t[1].item<double>(), t[2].item<double>()};
    };
    const auto add_sample = [&](const std::array<double, 3>& now, bool epoch_end, std::pair<double, double> test,
                                std::vector<double> probe_loss) {
      // DDP pads the ranks' shares to equal size: the examples never pass the epoch's end.
      const double n = static_cast<double>(train_set.size());
      const double window = now[2] - window_start[2];
      CurveSample sample;
      sample.examples = static_cast<double>(epoch) * n + (epoch_end ? n : std::min(now[2], n));
      sample.window_examples = std::min(window, sample.examples);
      sample.train_loss = (now[0] - window_start[0]) / window;
      sample.train_accuracy = (now[1] - window_start[1]) / window;
      sample.test_accuracy = test.first;
      sample.test_accuracy_recomputed = test.second;
      sample.probe_loss = std::move(probe_loss);
      window_start = now;
      if (!std::isfinite(sample.train_loss)) return;  // diverged: the epoch's end stops the run
      absorb_norms();
      sample.noise_scale = noise.noise_scale().value_or(0);
      sample.max_lr = curvature.max_lr().value_or(0);
      sample.curvature_noise_scale = curvature.noise_scale().value_or(0);
      sample.curvature_noise_scale_se = curvature.noise_scale_standard_error().value_or(0);
      take_scale_invariant(sample, si_window_sum, si_window_steps);
      curve.samples.push_back(sample);
    };
    while (auto batch = loader.next()) {
      const double lr = learning_rate_at(schedule, step);
      set_learning_rate(optimizer, lr);
      const auto images = batch->images.to(device);
      const auto labels = batch->labels.to(device);
      const int64_t b = labels.size(0);
      torch::Tensor last_loss;
      if (ddp) {
        optimizer.zero_grad();
        ddp_model->pre_forward();
        const auto output = model.forward(images);
        ddp_model->post_forward();
        const auto loss = torch::nn::functional::cross_entropy(output, labels);
        const GradientNorms norms = ddp_backward(params, *ddp_model, loss, process_batch, world);
        if (b == process_batch) {  // a partial last batch has other batch sizes: not measured
          small_sq.push_back(norms.small_sq_norm);
          big_sq.push_back(norms.big_sq_norm);
          small_size = norms.small_batch;
          big_size = norms.big_batch;
        }
        loss_sum += loss.detach().to(torch::kFloat64) * static_cast<double>(b);
        correct += output.detach().argmax(1).eq(labels).sum().to(torch::kFloat64);
        last_loss = loss.detach();
      } else {
        const MeanLoss mean_loss = [&](const torch::Tensor& x, const torch::Tensor& y) {
          const auto output = model.forward(x);
          auto loss = torch::nn::functional::cross_entropy(output, y);
          loss_sum += loss.detach().to(torch::kFloat64) * static_cast<double>(x.size(0));
          correct += output.detach().argmax(1).eq(y).sum().to(torch::kFloat64);
          last_loss = loss.detach();
          return loss;
        };
        const bool curvature_step = measure_curvature && b == o.batch && previous_images.defined() &&
                                    step % o.curvature_every == 0;
        std::vector<torch::Tensor> first_slice_grad;  // g_s: the curvature's micro-batch direction
        const auto norms = micro_batch_backward(params, mean_loss, images, labels, o.micro_batches,
                                                curvature_step ? &first_slice_grad : nullptr,
                                                si_block.empty() ? nullptr : &si_block);
        if (norms && b == o.batch) {
          small_sq.push_back(norms->small_sq_norm);
          big_sq.push_back(norms->big_sq_norm);
          small_size = norms->small_batch;
          big_size = norms->big_batch;
          if (norms->block_small_sq_norm.defined()) {
            si_small_sq.push_back(norms->block_small_sq_norm);
            si_big_sq.push_back(norms->block_big_sq_norm);
          }
        }
        if (measure_scale_invariant && step == 1) {
          si_block = scale_invariant_parameters(params);
          if (std::none_of(si_block.begin(), si_block.end(), [](bool f) { return f; })) si_block.clear();
        }
        if (step == 0 && b == o.batch) {
          curve.start_curvature = start_curvature(params, buffers, plain_loss, images, labels, o.micro_batches, lr);
          if (show_progress && curve.start_curvature) {
            const StartCurvature& c = *curve.start_curvature;
            std::fprintf(stderr,
                         "baseline: at the start lr / eps_max %.3g; %lld of %lld parameter tensors scale-invariant, "
                         "the others' lr / eps_max %s\n",
                         c.lr_over_eps_max, static_cast<long long>(c.scale_invariant),
                         static_cast<long long>(c.parameters),
                         c.rest_lr_over_eps_max ? std::to_string(*c.rest_lr_over_eps_max).c_str() : "-");
          }
        }
        if (measure_curvature && b == o.batch) {
          if (curvature_step) {
            // Along the batch's gradient and, with equal micro-batches, along the first one's.
            const auto measured = gradient_curvature(params, buffers, plain_loss, previous_images, previous_labels,
                                                     o.micro_batches, norms ? &first_slice_grad : nullptr);
            if (measured && std::isfinite(measured->grad_hessian_grad)) {
              if (norms && measured->small_grad_hessian_grad && std::isfinite(*measured->small_grad_hessian_grad)) {
                curvature.add(measured->grad_sq_norm, measured->grad_hessian_grad, *measured->small_grad_hessian_grad,
                              norms->small_batch, norms->big_batch);
              } else {
                curvature.add(measured->grad_sq_norm, measured->grad_hessian_grad);
              }
            }
          }
          previous_images = images;
          previous_labels = labels;
        }
      }
      if (o.optimizer == "lars") lars_step(params, o.lars_eta, o.weight_decay);
      std::vector<torch::Tensor> si_before;  // the scale-invariant parameters before the step
      if (!si_block.empty()) {
        for (size_t j = 0; j < params.size(); ++j) {
          if (si_block[j]) si_before.push_back(params[j].detach().clone());
        }
      }
      optimizer.step();
      if (!si_block.empty()) {
        torch::NoGradGuard no_grad;
        auto moved = torch::zeros({}, f64);
        for (size_t j = 0, i = 0; j < params.size(); ++j) {
          if (si_block[j]) moved += (params[j].detach() - si_before[i++]).square().sum(torch::kFloat64);
        }
        moved /= lr * lr;  // |v|^2: the step is lr v
        si_window_sum += moved;
        si_epoch_sum += moved;
        ++si_window_steps;
        ++si_epoch_steps;
      }
      ++step;
      ++batch_index;
      samples += b;
      if (next_pace < o.pace.at_steps.size() && step == o.pace.at_steps[next_pace]) {
        ++next_pace;
        const double examples = static_cast<double>(epoch) * static_cast<double>(train_set.size()) +
                                static_cast<double>(samples);
        for (PaceProbeReading& r : pace_probe(pace_run, o.pace, *pace_fixed, step, examples,
                                              learning_rate_at(schedule, step), !show_progress)) {
          curve.pace_probe.push_back(std::move(r));
        }
      }
      if (next_eval < o.evals_per_epoch && batch_index >= eval_step(next_eval)) {
        add_sample(reduced_sums(), /*epoch_end=*/false, test_accuracies(), probe_losses());
        // Fewer steps than samples: those that would land on the same step are one.
        while (next_eval < o.evals_per_epoch && eval_step(next_eval) <= batch_index) ++next_eval;
      }
      if (show_progress && (seconds_since(last_print) >= kProgressInterval)) {
        last_print = Clock::now();
        const double elapsed = seconds_since(run_start);
        const double eta = elapsed / static_cast<double>(step) *
                           static_cast<double>(steps_per_epoch * o.epochs - step);  // mean step time so far
        std::fprintf(stderr, "baseline: epoch %d/%d batch %lld/%lld lr %.4g elapsed %.1f s ETA %.1f s loss %.4f\n",
                     epoch + 1, o.epochs, static_cast<long long>(batch_index), static_cast<long long>(steps_per_epoch),
                     lr, elapsed, eta, last_loss.item<double>());
      }
    }

    // Per epoch, one collective for the sums, one in absorb_norms.
    const std::array<double, 3> sums = reduced_sums();
    if (!std::isfinite(sums[0])) {  // before the norms, which are not finite either
      throw std::runtime_error("epoch " + std::to_string(epoch + 1) + ": the training loss is not finite: training "
                               "diverged at lr " + std::to_string(learning_rate_at(schedule, step - 1)) +
                               " (the profile keeps the epochs before it)");
    }
    absorb_norms();
    const auto noise_scale = noise.noise_scale();
    if (!noise_scale) {
      const std::string why = "epoch " + std::to_string(epoch + 1) +
                              ": the gradient noise scale is not measurable: the moving averages are |G|^2 " +
                              std::to_string(noise.grad_sq_norm()) + " and tr(Sigma) " +
                              std::to_string(noise.trace_sigma()) + " after " + std::to_string(noise.steps()) +
                              " steps (gradient noise dominates the |G|^2 estimate: train more steps)";
      if (o.require_noise_scale) throw std::runtime_error(why);
      if (rank == 0) std::fprintf(stderr, "warning: %s; recorded as 0 (--noise-scale best-effort)\n", why.c_str());
    }
    EpochPoint point;
    point.epoch = epoch + 1;
    point.examples = static_cast<double>(epoch + 1) * static_cast<double>(train_set.size());
    point.train_loss = sums[0] / sums[2];
    point.train_accuracy = sums[1] / sums[2];
    std::tie(point.test_accuracy, point.test_accuracy_recomputed) = test_accuracies();
    point.probe_loss = probe_losses();
    point.grad_sq_norm = noise_scale ? noise.grad_sq_norm() : 0;
    point.trace_sigma = noise_scale ? noise.trace_sigma() : 0;
    point.noise_scale = noise_scale.value_or(0);
    point.max_lr = curvature.max_lr().value_or(0);
    point.curvature_noise_scale = curvature.noise_scale().value_or(0);
    point.curvature_noise_scale_se = curvature.noise_scale_standard_error().value_or(0);
    take_scale_invariant(point, si_epoch_sum, si_epoch_steps);
    curve.epochs.push_back(point);
    if (o.evals_per_epoch > 1) {
      add_sample(sums, /*epoch_end=*/true, {point.test_accuracy, point.test_accuracy_recomputed}, point.probe_loss);
    }
    if (show_progress) {
      std::fprintf(stderr,
                   "baseline: epoch %d/%d done in %.1f s: train loss %.4f, train accuracy %.4f, test accuracy %.4f, "
                   "|G|^2 %.4g, tr(Sigma) %.4g, B_simple %.1f, eps_max %.4g, B_noise %.1f +- %.1f\n",
                   epoch + 1, o.epochs, seconds_since(run_start), point.train_loss, point.train_accuracy,
                   point.test_accuracy, point.grad_sq_norm, point.trace_sigma, point.noise_scale, point.max_lr,
                   point.curvature_noise_scale, point.curvature_noise_scale_se);
      if (point.test_accuracy_recomputed >= 0) {
        std::fprintf(stderr, "baseline: test accuracy %.4f with BatchNorm's statistics recomputed on %lld images\n",
                     point.test_accuracy_recomputed, static_cast<long long>(curve.recompute_bn_images));
      }
      if (!point.probe_loss.empty()) {
        std::string readings;
        for (size_t i = 0; i < probe_batches.size(); ++i) {
          readings += (i ? ", " : "") + std::to_string(point.probe_loss[i]) + " at " + std::to_string(probe_batches[i]);
        }
        std::fprintf(stderr, "baseline: BatchNorm probe (training-mode loss of %lld images): %s\n",
                     static_cast<long long>(probe_batches.back()), readings.c_str());
      }
    }
    if (epoch_done) epoch_done(curve);
  }
  return curve;
}

void put_training_curve(Profile& profile, const TrainingCurve& curve) {
  for (auto& existing : profile.training) {
    if (existing.model == curve.model) {
      existing = curve;
      return;
    }
  }
  profile.training.push_back(curve);
}

namespace {

int run_baseline(BaselineOptions o, const std::string& command) {
  const Device device = resolve_device(o.device);
  o.device = device.kind_name();
  if (device.is_cuda() && o.gpus > cuda_device_count()) {
    throw UsageError("--gpus " + std::to_string(o.gpus) + ": only " + std::to_string(cuda_device_count()) +
                     " CUDA device(s) visible");
  }
  if (device.is_cuda() && o.gpus >= 2 && !backend_available("nccl")) {
    throw UsageError("--gpus " + std::to_string(o.gpus) + " --device cuda: this LibTorch has no c10d NCCL backend");
  }
  if (data_dir(o).empty() && o.train_samples.value_or(0) > kCifarTrainImages) {
    throw UsageError("--train-samples " + std::to_string(*o.train_samples) + " exceeds the " +
                     std::to_string(kCifarTrainImages) + " images of the synthetic training set");
  }
  MachineInfo machine = detect_host();
  if (o.threads == 0) o.threads = std::max(1, machine.cpu_cores / o.gpus);
  fill_device_info(machine, device, device.is_cuda() ? cuda_device_count() : o.gpus);
  machine.name = o.machine.empty() ? default_machine_name(machine) : o.machine;
  machine.threads = o.threads;
  if (o.profile_path.empty()) o.profile_path = "reports/" + machine.name + "/profile.yaml";
  prepare_profile(o.profile_path, machine, command, data_label(o));

  if (o.gpus >= 2) {
    if (!data_dir(o).empty()) {  // bad files: one clear error before the ranks start
      load_train_set(o);
      load_test_set(o);
    }
    TempDir store("trainsim-baseline-");  // the ranks' FileStore, removed at the end
    std::vector<std::string> args = {"worker", "baseline"};
    for (auto& a : to_baseline_worker_args(o)) args.push_back(std::move(a));
    launch_ranks(self_executable(), args, o.gpus, store.path(), kRankTimeoutSeconds);
  } else {
    torch::set_num_threads(o.threads);
    const data::ImageSet train_set = load_train_set(o);
    const data::ImageSet test_set = load_test_set(o);
    if (!o.quiet) {
      std::fprintf(stderr, "baseline: %s on %s, batch %lld in %lld micro-batches, %lld training images (%s), %d threads\n",
                   o.model.c_str(), o.device.c_str(), static_cast<long long>(o.batch),
                   static_cast<long long>(o.micro_batches), static_cast<long long>(train_set.size()),
                   data_label(o).c_str(), o.threads);
    }
    train_baseline(o, train_set, &test_set, nullptr,
                   [&](const TrainingCurve& curve) { save_curve(o.profile_path, curve); });
  }
  const Profile written = load_profile(o.profile_path);
  for (const auto& curve : written.training) {
    if (curve.model != o.model) continue;
    print_curve(curve, o.profile_path);
    if (curve.epochs.empty()) continue;
    const BaselineCurve baseline(curve, 10);  // the models here classify 10 classes
    if (baseline.never_trained()) {
      std::fprintf(stderr,
                   "warning: this run never trained (every epoch's mean loss >= ln 10, the untrained model's; last "
                   "%.4g): as a baseline, its curve gives no large-batch prediction (docs/LARGE_BATCH.md); another "
                   "seed or a learning-rate warm-up gives a curve that trains\n",
                   curve.epochs.back().train_loss);
    } else if (baseline.first_epoch_untrained()) {
      std::fprintf(stderr,
                   "warning: this run did not train in its first epoch (mean loss %.4g >= ln 10, the untrained "
                   "model's): as a baseline, its curve gives unreliable large-batch predictions "
                   "(docs/LARGE_BATCH.md); another seed or a learning-rate warm-up gives a curve that trains\n",
                   curve.epochs.front().train_loss);
    }
  }
  return 0;
}

int run_worker(const BaselineOptions& o) {
  torch::set_num_threads(o.threads);
  CommunicatorOptions comm_options;
  comm_options.backend = o.device == "cuda" ? "nccl" : "gloo";
  comm_options.rank = o.rank;
  comm_options.world_size = o.world_size;
  comm_options.device_index = o.rank;
  const auto communicator =
      std::make_unique<Communicator>(make_file_store(o.store_dir + "/filestore", o.world_size), comm_options);
  const data::ImageSet train_set = load_train_set(o);
  std::optional<data::ImageSet> test_set;
  if (o.rank == 0) test_set = load_test_set(o);
  EpochDone save;
  if (o.rank == 0) save = [&](const TrainingCurve& curve) { save_curve(o.profile_path, curve); };
  train_baseline(o, train_set, test_set ? &*test_set : nullptr, communicator.get(), save);
  return 0;
}

}  // namespace

int baseline_main(int argc, char** argv) {
  const auto options = parse_baseline_options(std::vector<std::string>(argv, argv + argc));
  if (!options) return 0;  // --help
  return run_baseline(*options, "measure " + join_command_line(argc, argv));  // argv[0] is the subcommand
}

int baseline_worker_main(int argc, char** argv) {
  const BaselineOptions options = parse_baseline_worker_options(std::vector<std::string>(argv, argv + argc));
  return run_worker(options);
}

}  // namespace trainsim::measure
