#pragma once
// Flags of `measure baseline` and of its DDP rank processes (`measure worker baseline ...`),
// parsed with Boost.Program_options into one plain struct. Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/lr_rule.h"
#include "largebatch/pace_probe_options.h"
#include "usage_error.h"

namespace trainsim::measure {

// --evals-per-epoch's bound: each sample evaluates the whole test set.
constexpr int kMaxEvalsPerEpoch = 100;

struct BaselineOptions {
  std::string model = "resnet18-cifar";  // resnet18-cifar or resnet18-imagenet (models/describe.h)
  int64_t batch = 128;                   // global batch B_0
  int64_t micro_batches = 4;             // one device: k micro-batches of batch / k (B_small)
  bool micro_batches_given = false;      // --micro-batches on the command line
  int gpus = 1;                          // DDP ranks (processes); >= 2: B_small = the per-rank batch
  int epochs = 5;
  int evals_per_epoch = 1;               // curve samples per epoch (loss window means, test accuracy)
  std::optional<int64_t> train_samples;  // first N training images; nullopt = all 50000
  std::optional<int64_t> test_samples;   // first N test images; nullopt = all 10000
  std::string data_dir;                  // CIFAR-10 binaries; empty = synthetic images (labelled so)
  std::string device;                    // "cpu" | "cuda"; empty = cuda when available
  int threads = 0;                       // intra-op threads per process; 0 = cores / processes
  int workers = 2;                       // data-loader worker threads per process
  uint64_t seed = 0;
  double lr = 0.1;                       // base learning rate at --lr-base-batch
  double momentum = 0.9;
  double weight_decay = 5e-4;
  LrRule lr_rule = LrRule::kConstant;
  int64_t lr_base_batch = 128;           // B_0 of the learning-rate rule
  double warmup_epochs = 5;              // linear-warmup only
  // "sgd", or "lars" (You et al. 2017): each weight tensor's step (gradient plus weight decay)
  // scaled by its trust ratio lars_eta ||w|| / (||g|| + weight_decay ||w||), the lr rule on top;
  // biases and BatchNorm's parameters (1-d tensors) keep plain SGD, as LARS implementations do.
  std::string optimizer = "sgd";
  double lars_eta = 0.001;               // You et al.'s trust coefficient
  double ema_decay = 0.99;               // of the noise-scale averages
  // One device: every N-th step also measures eps_max = |G|^2 / G^T H G (two more forward and
  // backward passes on the previous step's batch); 0: not measured. Not under DDP.
  int64_t curvature_every = 4;
  // false (--noise-scale best-effort): an epoch whose noise scale is not measurable is recorded
  // with |G|^2, tr(Sigma) and B_noise 0 and a warning instead of stopping the run (runs past the
  // critical batch, whose curves are compared, not used for predictions).
  bool require_noise_scale = true;
  // The BatchNorm probe: at every curve point, the training-mode mean loss (BatchNorm normalising by
  // each batch's own statistics) of the first N training images, unaugmented, at the baseline's
  // BatchNorm batch B_small, at 4^i B_small below N/2 and at the whole probe set at once
  // (batchnorm_probe_batches); the large-batch model reads from it how much lower a run with larger
  // BatchNorm batches records its loss (docs/LARGE_BATCH.md). 0: off.
  int64_t bn_probe_images = 2048;
  bool bn_probe_images_given = false;    // --bn-probe-images on the command line (else it shrinks to the set)
  // At every test evaluation, the test accuracy again with BatchNorm's statistics recomputed on the
  // first N training images (with_recomputed_statistics, state_probes.h); 0: off.
  int64_t recompute_bn_images = 0;
  // The pace probe (largebatch/pace_probe.h): off unless pace.at_steps is given. One device, SGD.
  PaceProbeOptions pace;
  std::string profile_path;              // empty = reports/<machine>/profile.yaml
  std::string machine;                   // empty = measure's default machine name
  bool quiet = false;
  // Set only in rank processes (appended by launch_ranks).
  int rank = -1;
  int world_size = 0;
  std::string store_dir;
};

// The batch each process trains per step: batch / gpus.
int64_t per_process_batch(const BaselineOptions& options);
// B_small of the two-batch estimator: the per-rank batch under DDP, else batch / micro_batches.
int64_t small_batch(const BaselineOptions& options);

// The BatchNorm batches the probe measures at: B_small, 4^i B_small below half the probe set, and the
// largest multiple of the last of those that fits in it (the whole probe set at once). Empty when
// the probe is off or the probe set holds fewer than 2 B_small images.
std::vector<int64_t> batchnorm_probe_batches(const BaselineOptions& options);

// Parses `baseline ...` (args[0], the subcommand name, is skipped) and checks the flags that need
// no device: throws UsageError. Returns nullopt after printing --help.
std::optional<BaselineOptions> parse_baseline_options(const std::vector<std::string>& args);
// The rank process's flags: the same set plus --rank, --world-size and --store (required).
BaselineOptions parse_baseline_worker_options(const std::vector<std::string>& args);
// The flags that make a rank process run exactly `options` (launch_ranks appends the rank flags).
std::vector<std::string> to_baseline_worker_args(const BaselineOptions& options);

std::string baseline_help();

}  // namespace trainsim::measure
