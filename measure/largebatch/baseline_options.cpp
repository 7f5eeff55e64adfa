#include "largebatch/baseline_options.h"

#include <boost/program_options.hpp>
#include <cmath>
#include <iostream>
#include <sstream>

#include "models/describe.h"

#include "cli_util.h"
#include "trainer_flags.h"

namespace trainsim::measure {
namespace po = boost::program_options;
namespace {

// Integers go through int64 first so that "-3" gets our own message, not a wrapped value.
struct RawOptions {
  std::string model;
  int64_t batch = 0;
  int64_t micro_batches = 0;
  int64_t gpus = 0;
  int64_t epochs = 0;
  int64_t evals_per_epoch = 0;
  int64_t train_samples = 0;
  int64_t test_samples = 0;
  std::string data_dir;
  std::string device;
  int64_t threads = 0;
  int64_t workers = 0;
  int64_t seed = 0;
  double lr = 0;
  double momentum = 0;
  double weight_decay = 0;
  std::string lr_rule;
  int64_t lr_base_batch = 0;
  double warmup_epochs = 0;
  std::string optimizer;
  double lars_eta = 0;
  double ema_decay = 0;
  int64_t curvature_every = 0;
  std::string noise_scale;
  int64_t bn_probe_images = 0;
  int64_t recompute_bn_images = 0;
  std::string pace_probe_at;
  std::string pace_pairs;
  int64_t pace_steps = 0;
  int64_t pace_draws = 0;
  int64_t pace_cool_steps = 0;
  double pace_cool = 0;
  int64_t pace_probe_images = 0;
  std::string profile_path;
  std::string machine;
  RankFlags rank_process;
};

po::options_description baseline_flags(RawOptions& raw) {
  const BaselineOptions d;
  po::options_description flags("measure baseline: a baseline training curve and the gradient noise scale",
                                /*line_length=*/100, /*min_description_length=*/50);
  // clang-format off
  flags.add_options()
    ("help,h", "print this help")
    ("model", po::value(&raw.model)->default_value(d.model),
       "resnet18-cifar or resnet18-imagenet (CIFAR-10 images), or fashion-cnn or fashion-cnn-gap (Fashion-MNIST "
       "images; -gap: its head pooled first, as ResNet-18's, which the course's lr 0.1 does not blow up at the "
       "start: docs/LARGE_BATCH.md)")
    ("batch", po::value(&raw.batch)->default_value(d.batch), "global batch B_0")
    ("micro-batches", po::value(&raw.micro_batches)->default_value(d.micro_batches),
       "one device: each step's gradient from k micro-batches of batch / k (B_small of the noise "
       "scale; BatchNorm then normalises each micro-batch on its own, as DDP does per rank)")
    ("gpus", po::value(&raw.gpus)->default_value(d.gpus),
       "DDP ranks (processes, one device each); >= 2: B_small is the per-rank batch")
    ("epochs", po::value(&raw.epochs)->default_value(d.epochs), "epochs to train (one curve point each)")
    ("evals-per-epoch", po::value(&raw.evals_per_epoch)->default_value(d.evals_per_epoch),
       "K > 1: also K curve samples per epoch (training loss and accuracy over the steps since the "
       "previous one, test accuracy, noise scale), evenly spaced, in the first epoch quadratically "
       "(after S (j/K)^2 of its S steps): the large-batch model's early curve")
    ("train-samples", po::value(&raw.train_samples), "first N training images (default: all of --data's, or 50000 generated)")
    ("test-samples", po::value(&raw.test_samples), "first N test images (default: all of --data's, or 10000 generated)")
    ("data", po::value(&raw.data_dir),
       "ResNet-18: folder with the CIFAR-10 binaries (data_batch_1..5.bin, test_batch.bin); default: "
       "synthetic images (a synthetic held-out set for the test accuracy), and the profile says `synthetic`. "
       "the fashion-cnns: folder with the Fashion-MNIST IDX files (train-/t10k-images-idx3-ubyte, "
       "train-/t10k-labels-idx1-ubyte, plain or .gz); default: /usr/share/datasets/fashion-mnist "
       "(Debian's dataset-fashion-mnist)")
    ("device", po::value(&raw.device), "cpu or cuda (default: cuda when available, else cpu)")
    ("threads", po::value(&raw.threads), "intra-op threads per process (default: cores / processes)")
    ("workers", po::value(&raw.workers)->default_value(d.workers), "data-loader worker threads per process")
    ("seed", po::value(&raw.seed)->default_value(0), "initial weights, shuffling, augmentation, synthetic data")
    ("lr", po::value(&raw.lr)->default_value(d.lr), "base learning rate (at --lr-base-batch)")
    ("momentum", po::value(&raw.momentum)->default_value(d.momentum), "SGD momentum")
    ("weight-decay", po::value(&raw.weight_decay)->default_value(d.weight_decay), "SGD weight decay")
    ("lr-rule", po::value(&raw.lr_rule)->default_value(to_string(d.lr_rule)),
       "constant, linear (lr B/B0), linear-warmup (ramp to lr B/B0 over --warmup-epochs), sqrt (lr sqrt(B/B0))")
    ("lr-base-batch", po::value(&raw.lr_base_batch)->default_value(d.lr_base_batch), "B0 of the lr rule")
    ("warmup-epochs", po::value(&raw.warmup_epochs)->default_value(d.warmup_epochs), "k of linear-warmup")
    ("optimizer", po::value(&raw.optimizer)->default_value(d.optimizer),
       "sgd (momentum SGD), or lars: each weight tensor's step scaled by --lars-eta ||w|| / (||g|| + "
       "weight decay ||w||) under the lr rule (You et al. 2017); biases and BatchNorm stay plain SGD")
    ("lars-eta", po::value(&raw.lars_eta)->default_value(d.lars_eta), "lars: the trust coefficient")
    ("ema-decay", po::value(&raw.ema_decay)->default_value(d.ema_decay),
       "decay of the moving averages of |G|^2 and tr(Sigma) (0.99: about 200 steps)")
    ("curvature-every", po::value(&raw.curvature_every)->default_value(d.curvature_every),
       "one device: every N-th step also measures eps_max = |G|^2 / G^T H G, the largest useful lr "
       "(two more forward and backward passes on the previous step's batch); 0: off")
    ("noise-scale", po::value(&raw.noise_scale)->default_value("required"),
       "required: an epoch whose noise scale is not measurable (the |G|^2 or tr(Sigma) average not "
       "positive) stops the run; best-effort: it is recorded as 0 with a warning (large-batch runs "
       "whose curve is compared, never used to predict)")
    ("bn-probe-images", po::value(&raw.bn_probe_images)->default_value(d.bn_probe_images),
       "at every curve point, the training-mode loss (BatchNorm on each batch's own statistics) of the first N "
       "training images, unaugmented, at B_small, 4^i B_small below N/2 and all N at once (forward passes only, "
       "BatchNorm's running statistics restored): how much lower a run with larger BatchNorm batches records its "
       "loss, which the large-batch model subtracts (docs/LARGE_BATCH.md); 0: off (default N: 2048, shrunk to a "
       "smaller training set)")
    ("recompute-bn", po::value(&raw.recompute_bn_images)->default_value(d.recompute_bn_images),
       "at every test evaluation, the test accuracy again after BatchNorm's statistics are estimated on the weights as "
       "they are (\"precise BatchNorm\"): the plain average of the statistics of the first N training images, "
       "unaugmented, in the run's BatchNorm batches (whole ones only), the running statistics restored after so the run "
       "goes on as without it; recorded as test_accuracy_recomputed; 0: off")
    ("pace-probe-at", po::value(&raw.pace_probe_at),
       "the pace probe (docs/LARGE_BATCH.md, \"The pace probe\"), after each of these optimiser steps (comma list): "
       "from the run's state, --pace-steps steps at each --pace-pairs batch and lr against the run's batch and lr "
       "continued, each cooled and read in training mode on a fixed set; the baseline's steps a branch's step is worth. "
       "One device, SGD; the run itself goes on as without it (default: off)")
    ("pace-pairs", po::value(&raw.pace_pairs)->default_value(pace_pairs_text(d.pace.pairs)),
       "the probe's branches, RATIOxLR_RATIO each: the batch and the lr over the run's")
    ("pace-steps", po::value(&raw.pace_steps)->default_value(d.pace.steps), "a branch's steps")
    ("pace-draws", po::value(&raw.pace_draws)->default_value(d.pace.draws),
       "independent draws of the probe's batches at each probed step")
    ("pace-cool-steps", po::value(&raw.pace_cool_steps)->default_value(d.pace.cool_steps),
       "cooling steps before each reading, at the run's batch")
    ("pace-cool", po::value(&raw.pace_cool)->default_value(d.pace.cool), "the cooling lr over the run's, in (0, 1)")
    ("pace-probe-images", po::value(&raw.pace_probe_images)->default_value(d.pace.images),
       "the fixed set: the first N training images (a multiple of B_small)")
    ("profile", po::value(&raw.profile_path),
       "profile the curve is written into (default: reports/<machine>/profile.yaml; created if missing)")
    ("machine", po::value(&raw.machine), "machine name of the default --profile")
    ("quiet", "no progress on stderr");
  // clang-format on
  return flags;
}

// The pace probe's flags into o.pace (after the rest of o); its flags without --pace-probe-at are an error.
void validate_pace_probe(const RawOptions& raw, const po::variables_map& vm, BaselineOptions& o) {
  if (!vm.count("pace-probe-at")) {
    for (const char* flag : {"pace-pairs", "pace-steps", "pace-draws", "pace-cool-steps", "pace-cool", "pace-probe-images"}) {
      if (!vm[flag].defaulted()) throw UsageError(std::string("--") + flag + " needs --pace-probe-at");
    }
    return;
  }
  o.pace.at_steps = parse_int_list(raw.pace_probe_at, "--pace-probe-at", /*minimum=*/1);
  for (size_t i = 1; i < o.pace.at_steps.size(); ++i) {
    if (o.pace.at_steps[i] <= o.pace.at_steps[i - 1]) {
      throw UsageError("--pace-probe-at: the steps must be strictly ascending (" + std::to_string(o.pace.at_steps[i]) +
                       " follows " + std::to_string(o.pace.at_steps[i - 1]) + ")");
    }
  }
  if (o.gpus >= 2) throw UsageError("--pace-probe-at: the pace probe runs on one device, not with --gpus " + std::to_string(o.gpus));
  if (o.optimizer != "sgd") throw UsageError("--pace-probe-at: the pace probe needs --optimizer sgd");
  try {
    o.pace.pairs = parse_pace_pairs(raw.pace_pairs);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--pace-pairs: ") + e.what());
  }
  o.pace.steps = at_least("pace-steps", raw.pace_steps, 1);
  o.pace.draws = at_least("pace-draws", raw.pace_draws, 1);
  o.pace.cool_steps = at_least("pace-cool-steps", raw.pace_cool_steps, 1);
  if (!(raw.pace_cool > 0 && raw.pace_cool < 1)) {
    throw UsageError("--pace-cool: " + std::to_string(raw.pace_cool) + " is not in (0, 1)");
  }
  o.pace.cool = raw.pace_cool;
  o.pace.images = at_least("pace-probe-images", raw.pace_probe_images, 1);
  if (o.pace.images % small_batch(o) != 0) {
    throw UsageError("--pace-probe-images " + std::to_string(o.pace.images) + " is not a multiple of the BatchNorm batch " +
                     std::to_string(small_batch(o)) + " (B_small)");
  }
  if (o.train_samples && *o.train_samples < o.pace.images) {
    throw UsageError("--pace-probe-images " + std::to_string(o.pace.images) + " exceeds --train-samples " +
                     std::to_string(*o.train_samples));
  }
}

BaselineOptions validated(const RawOptions& raw, const po::variables_map& vm) {
  BaselineOptions o;
  bool known_model = false;
  for (const auto& name : models::known_models()) known_model = known_model || name == raw.model;
  if (!known_model) throw UsageError("--model: '" + raw.model + "' is not a known model");
  o.model = raw.model;
  o.batch = at_least("batch", raw.batch, 2);
  o.micro_batches = at_least("micro-batches", raw.micro_batches, 2);
  o.micro_batches_given = !vm["micro-batches"].defaulted();
  o.gpus = bounded_int("gpus", raw.gpus, 1);
  o.epochs = bounded_int("epochs", raw.epochs, 1);
  o.evals_per_epoch = bounded_int("evals-per-epoch", raw.evals_per_epoch, 1);
  if (o.evals_per_epoch > kMaxEvalsPerEpoch) {
    throw UsageError("--evals-per-epoch " + std::to_string(o.evals_per_epoch) + ": at most " +
                     std::to_string(kMaxEvalsPerEpoch) + " (each evaluates the whole test set)");
  }
  if (vm.count("train-samples")) o.train_samples = at_least("train-samples", raw.train_samples, 1);
  if (vm.count("test-samples")) o.test_samples = at_least("test-samples", raw.test_samples, 1);
  o.data_dir = raw.data_dir;
  if (vm.count("device")) o.device = checked_device(raw.device);
  if (vm.count("threads")) o.threads = bounded_int("threads", raw.threads, 1);
  o.workers = bounded_int("workers", raw.workers, 0);
  o.seed = static_cast<uint64_t>(at_least("seed", raw.seed, 0));
  o.lr = finite_non_negative("lr", raw.lr);
  o.momentum = finite_non_negative("momentum", raw.momentum);
  o.weight_decay = finite_non_negative("weight-decay", raw.weight_decay);
  o.lr_rule = checked_lr_rule(raw.lr_rule);
  o.lr_base_batch = at_least("lr-base-batch", raw.lr_base_batch, 1);
  o.warmup_epochs = finite_non_negative("warmup-epochs", raw.warmup_epochs);
  if (raw.optimizer != "sgd" && raw.optimizer != "lars") {
    throw UsageError("--optimizer: '" + raw.optimizer + "' is not one of sgd, lars");
  }
  o.optimizer = raw.optimizer;
  if (!(raw.lars_eta > 0) || !std::isfinite(raw.lars_eta)) {
    throw UsageError("--lars-eta: " + std::to_string(raw.lars_eta) + " must be a finite number > 0");
  }
  o.lars_eta = raw.lars_eta;
  if (!(raw.ema_decay >= 0 && raw.ema_decay < 1)) {
    throw UsageError("--ema-decay: " + std::to_string(raw.ema_decay) + " is not in [0, 1)");
  }
  o.ema_decay = raw.ema_decay;
  o.curvature_every = bounded_int("curvature-every", raw.curvature_every, 0);
  if (raw.noise_scale != "required" && raw.noise_scale != "best-effort") {
    throw UsageError("--noise-scale: '" + raw.noise_scale + "' is not one of required, best-effort");
  }
  o.require_noise_scale = raw.noise_scale == "required";
  o.bn_probe_images = at_least("bn-probe-images", raw.bn_probe_images, 0);
  o.bn_probe_images_given = !vm["bn-probe-images"].defaulted();
  o.recompute_bn_images = at_least("recompute-bn", raw.recompute_bn_images, 0);
  o.profile_path = raw.profile_path;
  o.machine = raw.machine;
  o.quiet = vm.count("quiet") > 0;
  validate_pace_probe(raw, vm, o);

  if (o.gpus >= 2) {
    if (vm.count("curvature-every") && !vm["curvature-every"].defaulted() && o.curvature_every > 0) {
      throw UsageError("--curvature-every: eps_max is measured on one device only, not with --gpus " +
                       std::to_string(o.gpus));
    }
    o.curvature_every = 0;
    if (o.micro_batches_given) {
      throw UsageError("--micro-batches: with --gpus " + std::to_string(o.gpus) +
                       " the noise scale uses each rank's gradient (B_small = the per-rank batch) instead");
    }
    if (o.batch % o.gpus != 0) {
      throw UsageError("--batch " + std::to_string(o.batch) + " is not divisible by --gpus " + std::to_string(o.gpus));
    }
  } else if (o.batch % o.micro_batches != 0) {
    throw UsageError("--batch " + std::to_string(o.batch) + " is not divisible by --micro-batches " +
                     std::to_string(o.micro_batches));
  }
  // The default probe shrinks to a smaller training set (train_baseline); one asked for does not.
  if (o.bn_probe_images_given && o.train_samples && *o.train_samples < o.bn_probe_images) {
    throw UsageError("--bn-probe-images " + std::to_string(o.bn_probe_images) + " exceeds --train-samples " +
                     std::to_string(*o.train_samples) + ": the probe set is the first training images");
  }
  if (o.bn_probe_images_given && o.bn_probe_images > 0 && o.bn_probe_images < 2 * small_batch(o)) {
    throw UsageError("--bn-probe-images " + std::to_string(o.bn_probe_images) + ": at least twice the BatchNorm batch " +
                     std::to_string(small_batch(o)) + " (B_small), or 0 for no probe");
  }
  if (o.recompute_bn_images > 0 && o.recompute_bn_images < small_batch(o)) {
    throw UsageError("--recompute-bn " + std::to_string(o.recompute_bn_images) + ": at least the BatchNorm batch " +
                     std::to_string(small_batch(o)) + ", or 0 for off");
  }
  if (o.recompute_bn_images > 0 && o.train_samples && *o.train_samples < o.recompute_bn_images) {
    throw UsageError("--recompute-bn " + std::to_string(o.recompute_bn_images) + " exceeds --train-samples " +
                     std::to_string(*o.train_samples) + ": the statistics are the first training images'");
  }
  if (o.train_samples && *o.train_samples < o.batch) {
    throw UsageError("--train-samples " + std::to_string(*o.train_samples) + " is below --batch " +
                     std::to_string(o.batch) + ": no full batch to measure the noise scale on");
  }
  return o;
}

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& flags) {
  if (args.empty()) throw UsageError("baseline: missing subcommand name");
  const po::variables_map vm = parse_flags(args, flags, "baseline: ");
  return vm;
}

std::string number(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

int64_t per_process_batch(const BaselineOptions& o) { return o.batch / o.gpus; }

int64_t small_batch(const BaselineOptions& o) { return o.gpus >= 2 ? o.batch / o.gpus : o.batch / o.micro_batches; }

std::vector<int64_t> batchnorm_probe_batches(const BaselineOptions& o) {
  const int64_t b0 = small_batch(o);
  std::vector<int64_t> batches;
  if (o.bn_probe_images < 2 * b0) return batches;
  batches.push_back(b0);
  for (int64_t b = 4 * b0; 2 * b < o.bn_probe_images; b *= 4) batches.push_back(b);
  const int64_t whole = o.bn_probe_images / batches.back() * batches.back();
  if (whole > batches.back()) batches.push_back(whole);
  return batches;
}

std::optional<BaselineOptions> parse_baseline_options(const std::vector<std::string>& args) {
  RawOptions raw;
  const auto flags = baseline_flags(raw);
  const auto vm = parse(args, flags);
  if (vm.count("help")) {
    std::cout << baseline_help();
    return std::nullopt;
  }
  return validated(raw, vm);
}

BaselineOptions parse_baseline_worker_options(const std::vector<std::string>& args) {
  RawOptions raw;
  po::options_description flags;
  flags.add(baseline_flags(raw)).add(rank_flags(raw.rank_process));
  const auto vm = parse(args, flags);
  BaselineOptions o = validated(raw, vm);
  apply_rank_flags(raw.rank_process, o);
  return o;
}

std::vector<std::string> to_baseline_worker_args(const BaselineOptions& o) {
  std::vector<std::string> args = {"--model",         o.model,
                                   "--batch",         std::to_string(o.batch),
                                   "--gpus",          std::to_string(o.gpus),
                                   "--epochs",        std::to_string(o.epochs),
                                   "--evals-per-epoch", std::to_string(o.evals_per_epoch),
                                   "--workers",       std::to_string(o.workers),
                                   "--seed",          std::to_string(o.seed),
                                   "--lr",            number(o.lr),
                                   "--momentum",      number(o.momentum),
                                   "--weight-decay",  number(o.weight_decay),
                                   "--lr-rule",       to_string(o.lr_rule),
                                   "--lr-base-batch", std::to_string(o.lr_base_batch),
                                   "--warmup-epochs", number(o.warmup_epochs),
                                   "--optimizer",     o.optimizer,
                                   "--lars-eta",      number(o.lars_eta),
                                   "--ema-decay",     number(o.ema_decay),
                                   "--noise-scale",   o.require_noise_scale ? "required" : "best-effort"};
  if (o.micro_batches_given) args.insert(args.end(), {"--micro-batches", std::to_string(o.micro_batches)});
  if (o.bn_probe_images_given) args.insert(args.end(), {"--bn-probe-images", std::to_string(o.bn_probe_images)});
  if (o.recompute_bn_images > 0) args.insert(args.end(), {"--recompute-bn", std::to_string(o.recompute_bn_images)});
  if (o.train_samples) args.insert(args.end(), {"--train-samples", std::to_string(*o.train_samples)});
  if (o.test_samples) args.insert(args.end(), {"--test-samples", std::to_string(*o.test_samples)});
  if (!o.data_dir.empty()) args.insert(args.end(), {"--data", o.data_dir});
  if (!o.device.empty()) args.insert(args.end(), {"--device", o.device});
  if (o.threads > 0) args.insert(args.end(), {"--threads", std::to_string(o.threads)});
  if (!o.profile_path.empty()) args.insert(args.end(), {"--profile", o.profile_path});
  if (!o.machine.empty()) args.insert(args.end(), {"--machine", o.machine});
  if (o.quiet) args.push_back("--quiet");
  return args;
}

std::string baseline_help() {
  RawOptions raw;
  std::ostringstream out;
  out << "Usage: measure baseline [flags]\n\n"
         "Trains the model with the course's settings (SGD lr 0.1, momentum 0.9, weight decay 5e-4, batch 128)\n"
         "and records per epoch the mean training loss and accuracy, the test accuracy and the gradient noise\n"
         "scale B_simple = tr(Sigma) / |G|^2 (two-batch estimator). The curve goes into the profile's\n"
         "`training:` section (replacing the model's previous curve), rewritten after every epoch.\n\n"
      << baseline_flags(raw);
  return out.str();
}

}  // namespace trainsim::measure
