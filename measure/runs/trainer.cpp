#include "runs/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "data/loader.h"
#include "launch.h"
#include "largebatch/lr_schedule.h"
#include "memory_layout.h"
#include "models/describe.h"
#include "models/resnet.h"
#include "runs/data_parallel.h"
#include "runs/ddp.h"
#include "runs/distributed_sampler.h"
#include "runs/train_step.h"

namespace trainsim::measure {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

// Course hyper-parameters (SGD, lr 0.1, momentum 0.9, weight decay 5e-4).
constexpr double kLearningRate = 0.1;
constexpr double kMomentum = 0.9;
constexpr double kWeightDecay = 5e-4;

// One line on stderr at most every kInterval, and at the end of every epoch.
class Progress {
 public:
  static constexpr double kInterval = 2.0;  // seconds between progress lines

  Progress(bool enabled, int rank, int epochs)
      : enabled_(enabled), rank_(rank), epochs_(epochs), last_print_(Clock::now()) {}

  bool due(int64_t batch, int64_t batches) const {
    return enabled_ &&
           (batch == batches || seconds_between(last_print_, Clock::now()) >= kInterval);
  }

  // ETA = batches left in the run * mean batch time of this epoch so far.
  void print(int epoch, int64_t batch, int64_t batches, Clock::time_point epoch_start,
             double loss) {
    last_print_ = Clock::now();
    const double elapsed = seconds_between(epoch_start, last_print_);
    const int64_t left = (epochs_ - epoch - 1) * batches + (batches - batch);
    const double eta = batch > 0 ? elapsed / static_cast<double>(batch) * left : 0.0;
    std::fprintf(stderr,
                 "train%s: epoch %d/%d batch %lld/%lld elapsed %.1f s ETA %.1f s loss %.4f\n",
                 rank_label().c_str(), epoch + 1, epochs_, static_cast<long long>(batch),
                 static_cast<long long>(batches), elapsed, eta, loss);
  }

  void epoch_done(int epoch, const EpochMeasurement& m) const {
    if (!enabled_) return;
    const double samples = static_cast<double>(std::max<int64_t>(1, m.samples));
    std::fprintf(stderr,
                 "train%s: epoch %d/%d%s: %.3f s (loader wait %.3f s, %lld iterations), "
                 "loss %.4f, accuracy %.4f\n",
                 rank_label().c_str(), epoch + 1, epochs_, epoch + 1 == epochs_ ? " (timed)" : "",
                 m.epoch_s, m.loader_wait_s, static_cast<long long>(m.iterations),
                 m.loss_sum / samples, static_cast<double>(m.correct) / samples);
  }

 private:
  std::string rank_label() const { return rank_ >= 0 ? " rank " + std::to_string(rank_) : ""; }

  bool enabled_;
  int rank_;
  int epochs_;
  Clock::time_point last_print_;
};

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace

data::ImageSet first_samples(const data::ImageSet& set, int64_t n) {
  if (n > set.size()) {
    throw std::invalid_argument("--train-samples " + std::to_string(n) + " exceeds the " +
                                std::to_string(set.size()) + " images of the training set");
  }
  data::ImageSet subset;
  subset.format = set.format;
  subset.synthetic = set.synthetic;
  subset.labels.assign(set.labels.begin(), set.labels.begin() + n);
  subset.pixels.assign(set.pixels.begin(), set.pixels.begin() + n * set.format.pixels());
  return subset;
}

data::ImageSet select_samples(const data::ImageSet& set, const std::vector<int64_t>& indices) {
  data::ImageSet selected;
  selected.format = set.format;
  selected.synthetic = set.synthetic;
  selected.labels.reserve(indices.size());
  selected.pixels.reserve(indices.size() * static_cast<size_t>(set.format.pixels()));
  for (int64_t i : indices) {
    if (i < 0 || i >= set.size()) {
      throw std::out_of_range("select_samples: index " + std::to_string(i) + " outside a set of " +
                              std::to_string(set.size()));
    }
    selected.labels.push_back(set.labels[static_cast<size_t>(i)]);
    selected.pixels.insert(selected.pixels.end(), set.image(i), set.image(i) + set.format.pixels());
  }
  return selected;
}

std::vector<EpochMeasurement> train_epochs(const TrainOptions& options,
                                           const data::ImageSet& train_set,
                                           Communicator* communicator, bool show_progress) {
  const bool ddp = communicator != nullptr;
  if (ddp != (options.strategy == "ddp")) {
    throw std::logic_error("train_epochs: ddp needs a communicator and dp none");
  }
  const int rank = ddp ? communicator->rank() : 0;
  const int world = ddp ? communicator->world_size() : 1;
  const bool cuda = options.device == "cuda";
  // DDP: the communicator's device (cuda:LOCAL_RANK under a launcher on several nodes, where the
  // global rank can exceed this node's GPUs); dp and one process: cuda:0.
  const torch::Device device = !cuda ? torch::Device(torch::kCPU)
                               : ddp ? communicator->device()
                                     : torch::Device(torch::kCUDA, 0);
  if (cuda) at::globalContext().setBenchmarkCuDNN(true);  // the course sets cudnn.benchmark

  torch::manual_seed(options.seed);  // same initial weights everywhere (DDP broadcasts anyway)
  models::ResNet18 model(models::kResnet18Cifar);
  model->to(device);
  to_memory_format(*model, options.memory_format);
  model->train();
  std::unique_ptr<DistributedDataParallel> ddp_model;
  if (ddp) ddp_model = std::make_unique<DistributedDataParallel>(*model, *communicator);
  torch::optim::SGD optimizer(
      model->parameters(),
      torch::optim::SGDOptions(kLearningRate).momentum(kMomentum).weight_decay(kWeightDecay));

  // DataParallel as PyTorch's nn.DataParallel (runs/data_parallel.h); on one device it is the
  // plain module call, as in PyTorch.
  std::optional<DataParallel> dp_model;
  if (!ddp && options.gpus >= 2) {
    std::vector<torch::Device> dp_devices;
    for (int g = 0; g < options.gpus; ++g) {
      dp_devices.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(g));
    }
    dp_model.emplace(model, dp_devices, options.precision);
  }
  TrainStep train_step(
      [&](const torch::Tensor& images) { return dp_model ? dp_model->forward(images) : model->forward(images); },
      optimizer, ddp_model.get(), device, dp_model ? &*dp_model : nullptr, options.precision);

  data::LoaderOptions loader_options;
  loader_options.workers = options.workers;
  loader_options.augment = true;
  loader_options.pin_memory = false;  // the course's loader: pageable host memory
  if (ddp) {
    // The sampler decides the order; the loader's own seed only draws crops and flips, one
    // stream per rank.
    loader_options.batch_size = options.batch_per_gpu;
    loader_options.shuffle = false;
    loader_options.seed = options.seed + 1 + static_cast<uint64_t>(rank);
  } else {
    loader_options.batch_size = options.batch_per_gpu * options.gpus;
    loader_options.shuffle = true;
    loader_options.seed = options.seed;
  }
  std::optional<data::DataLoader> dp_loader;
  if (!ddp) dp_loader.emplace(train_set, loader_options);

  // --lr-rule for the global batch; steps per epoch: ceil(share / batch), the share being this
  // rank's ceil(n / world) under ddp.
  LrSchedule schedule;
  schedule.rule = options.lr_rule;
  schedule.base_lr = kLearningRate;
  schedule.base_batch = options.lr_base_batch;
  schedule.batch = options.batch_per_gpu * options.gpus;
  schedule.warmup_epochs = options.warmup_epochs;
  const int64_t share = (train_set.size() + world - 1) / world;
  schedule.steps_per_epoch = std::max<int64_t>(1, (share + loader_options.batch_size - 1) / loader_options.batch_size);
  validate(schedule);
  int64_t step = 0;

  Progress progress(show_progress, ddp ? rank : -1, options.epochs);
  std::vector<EpochMeasurement> epochs;
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    // DistributedSampler + a loader over this rank's share: built before the clock starts (in
    // PyTorch the sampler only yields indices; the copy is an artefact of our loader's API).
    data::ImageSet shard;
    std::optional<data::DataLoader> rank_loader;
    if (ddp) {
      shard = select_samples(train_set, distributed_sampler_indices(train_set.size(), world, rank,
                                                                    options.seed, epoch));
      rank_loader.emplace(shard, loader_options);
      communicator->barrier();  // every rank starts its epoch clock together
    }
    data::DataLoader& loader = ddp ? *rank_loader : *dp_loader;
    const int64_t batches = loader.batches_per_epoch();

    EpochMeasurement m;
    train_step.reset_statistics();
    const auto epoch_start = Clock::now();
    loader.start_epoch(epoch);
    while (true) {
      const auto wait_start = Clock::now();
      std::optional<data::Batch> batch = loader.next();
      m.loader_wait_s += seconds_between(wait_start, Clock::now());
      if (!batch) break;
      char step_text[64];
      std::snprintf(step_text, sizeof step_text, "epoch %d/%d, iteration %lld/%lld", epoch + 1, options.epochs,
                    static_cast<long long>(m.iterations + 1), static_cast<long long>(batches));
      set_rank_step(step_text);  // for the launcher's errors (launch.h)

      // The Q1 train time: H2D copy, forward, backward and update.
      const auto images = in_memory_format(batch->images.to(device), options.memory_format);
      const auto labels = batch->labels.to(device);
      for (auto& group : optimizer.param_groups()) {
        static_cast<torch::optim::SGDOptions&>(group.options()).lr(learning_rate_at(schedule, step));
      }
      ++step;
      const torch::Tensor loss = train_step.run(images, labels);
      m.samples += labels.size(0);
      ++m.iterations;
      if (progress.due(m.iterations, batches)) {
        progress.print(epoch, m.iterations, batches, epoch_start, loss.item<double>());
      }
    }
    synchronize(device);
    m.epoch_s = seconds_between(epoch_start, Clock::now());
    m.loss_sum = train_step.loss_sum().item<double>();
    m.correct = train_step.correct().item<int64_t>();
    progress.epoch_done(epoch, m);
    epochs.push_back(m);
  }
  return epochs;
}

}  // namespace trainsim::measure
