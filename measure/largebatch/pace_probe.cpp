#include "largebatch/pace_probe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "data/loader.h"
#include "data/splitmix64.h"
#include "largebatch/gradient_noise.h"
#include "stats/pace_probe.h"

namespace trainsim::measure {
namespace {

// The run's weights, BatchNorm buffers and momentum at one moment, put back by restore().
class Snapshot {
 public:
  explicit Snapshot(const PaceProbeRun& run) : optimizer_(run.optimizer) {
    torch::NoGradGuard no_grad;
    for (const auto& p : *run.params) keep(p);
    for (const auto& b : *run.buffers) keep(b);
    for (auto& entry : run.optimizer->state()) {
      const auto& buffer = static_cast<torch::optim::SGDParamState&>(*entry.second).momentum_buffer();
      if (buffer.defined()) keep(buffer);
    }
    states_ = run.optimizer->state().size();
  }
  void restore() const {
    // A step from no state creates the momentum buffers: the probe never starts from there.
    if (optimizer_->state().size() != states_) throw std::logic_error("pace probe: the optimiser's state changed");
    torch::NoGradGuard no_grad;
    for (const auto& [live, saved] : saved_) live.copy_(saved);
  }

 private:
  void keep(const torch::Tensor& t) { saved_.emplace_back(t, t.detach().clone()); }
  torch::optim::SGD* optimizer_;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> saved_;
  size_t states_ = 0;
};

// Full batches of `batch` augmented training images, drawn by a loader of the probe's own, epoch
// after epoch (the partial last batch of each skipped). Throws std::invalid_argument for a batch
// larger than the training set, which would never be full.
class BatchStream {
 public:
  BatchStream(const PaceProbeRun& run, int64_t batch, uint64_t seed)
      : loader_(*run.train_set, options(run, batch, seed)), batch_(batch), device_(run.device) {
    if (batch > run.train_set->size()) {
      throw std::invalid_argument("pace probe: a branch's batch (" + std::to_string(batch) +
                                  ") exceeds the training set (" + std::to_string(run.train_set->size()) + " images)");
    }
    loader_.start_epoch(0);
  }
  std::pair<torch::Tensor, torch::Tensor> next() {
    for (;;) {
      if (auto b = loader_.next(); b && b->labels.size(0) == batch_) {
        return {b->images.to(device_), b->labels.to(device_)};
      }
      loader_.start_epoch(++epoch_);
    }
  }

 private:
  static data::LoaderOptions options(const PaceProbeRun& run, int64_t batch, uint64_t seed) {
    data::LoaderOptions o;
    o.batch_size = batch;
    o.workers = run.workers;
    o.shuffle = true;
    o.augment = true;
    o.seed = seed;
    return o;
  }
  data::DataLoader loader_;
  int64_t batch_;
  torch::Device device_;
  int64_t epoch_ = 0;
};

// `steps` optimiser steps on `stream` at `lr`, each gradient over the run's micro-batches; false
// where a loss is not finite (the steps stop: a branch that blew up made no progress).
bool train_steps(const PaceProbeRun& run, BatchStream& stream, int64_t steps, double lr) {
  set_learning_rate(*run.optimizer, lr);
  torch::Tensor losses;  // the step's micro-batch losses summed: one read per step, not per micro-batch
  const MeanLoss mean_loss = [&](const torch::Tensor& x, const torch::Tensor& y) {
    auto loss = torch::nn::functional::cross_entropy(run.model->forward(x), y);
    losses = losses.defined() ? losses + loss.detach() : loss.detach();
    return loss;
  };
  for (int64_t i = 0; i < steps; ++i) {
    const auto [images, labels] = stream.next();
    losses = torch::Tensor();
    micro_batch_backward(*run.params, mean_loss, images, labels, run.micro_batches);
    if (!std::isfinite(losses.item<double>())) return false;
    run.optimizer->step();
  }
  return true;
}

// A stream's seed for (run seed, probed step, draw, role), apart from the run's own loader's.
uint64_t stream_seed(uint64_t seed, int64_t step, int64_t draw, uint64_t role) {
  constexpr uint64_t kPaceProbe = 0x9ace9ace9ace9aceULL;
  uint64_t s = data::mix_seed(seed ^ kPaceProbe, static_cast<uint64_t>(step));
  s = data::mix_seed(s, static_cast<uint64_t>(draw));
  return data::mix_seed(s, role);
}

}  // namespace

std::vector<PaceProbeReading> pace_probe(const PaceProbeRun& run, const PaceProbeOptions& o, const ProbeSet& fixed,
                                         int64_t step, double examples, double lr, bool quiet) {
  const std::vector<int64_t> counts = pace_arm_counts(o);
  const std::vector<double> arm_counts(counts.begin(), counts.end());
  // The fixed set's training-mode loss after cooling from the state as it is now, which is restored.
  const auto cooled = [&](uint64_t cool_seed, bool finite) {
    if (!finite) return std::nan("");
    const Snapshot before(run);
    BatchStream stream(run, run.batch, cool_seed);
    const bool still_finite = train_steps(run, stream, o.cool_steps, lr * o.cool);
    const double loss = still_finite ? batchnorm_probe(*run.model, *run.buffers, fixed, {run.batch / run.micro_batches}).front()
                                     : std::nan("");
    before.restore();
    return loss;
  };
  std::vector<PaceProbeReading> readings(o.pairs.size());
  for (size_t i = 0; i < o.pairs.size(); ++i) {
    PaceProbeReading& r = readings[i];
    r.examples = examples;
    r.ratio = o.pairs[i].ratio;
    r.lr_ratio = o.pairs[i].lr_ratio;
    r.steps = o.steps;
    r.cool_steps = o.cool_steps;
    r.cool = o.cool;
    r.draws = o.draws;
  }
  const Snapshot origin(run);
  for (int64_t d = 0; d < o.draws; ++d) {
    const uint64_t cool_seed = stream_seed(run.seed, step, d, 1);
    std::vector<double> arm;
    {
      BatchStream stream(run, run.batch, stream_seed(run.seed, step, d, 0));
      int64_t done = 0;
      bool finite = true;
      for (const int64_t n : counts) {
        finite = finite && train_steps(run, stream, n - done, lr);
        done = n;
        arm.push_back(cooled(cool_seed, finite));
      }
      origin.restore();
    }
    for (size_t i = 0; i < o.pairs.size(); ++i) {
      const PacePair& p = o.pairs[i];
      BatchStream stream(run, p.ratio * run.batch, stream_seed(run.seed, step, d, 2 + i));
      const bool finite = train_steps(run, stream, o.steps, lr * p.lr_ratio);
      const double loss = cooled(cool_seed, finite);
      origin.restore();
      std::optional<double> gain;
      if (std::isfinite(loss) && std::all_of(arm.begin(), arm.end(), [](double v) { return std::isfinite(v); })) {
        gain = gain_from_readings(arm_counts, arm, loss, static_cast<double>(o.steps));
      }
      if (gain) readings[i].gains.push_back(*gain);
      if (!quiet) {
        std::fprintf(stderr,
                     "baseline: pace probe after step %lld, draw %lld/%lld: %lld steps at %lldx the batch and %gx the "
                     "lr cool to %.4f, the baseline's %lld-%lld steps to %.4f-%.4f: gain %s\n",
                     static_cast<long long>(step), static_cast<long long>(d + 1), static_cast<long long>(o.draws),
                     static_cast<long long>(o.steps), static_cast<long long>(p.ratio), p.lr_ratio, loss,
                     static_cast<long long>(counts.front()), static_cast<long long>(counts.back()), arm.front(),
                     arm.back(), gain ? std::to_string(*gain).c_str() : "outside the readings");
      }
    }
  }
  set_learning_rate(*run.optimizer, lr);
  if (!quiet && readings.size() >= 2) {
    const auto g1 = geometric_mean(readings[0].gains);
    const auto g2 = geometric_mean(readings[1].gains);
    const auto solved = g1 && g2 ? solve_step_equation(static_cast<double>(readings[0].ratio), readings[0].lr_ratio,
                                                       *g1, static_cast<double>(readings[1].ratio),
                                                       readings[1].lr_ratio, *g2)
                                 : std::nullopt;
    if (solved) {
      std::fprintf(stderr, "baseline: pace probe after step %lld: the step equation's alpha %.3f, nu %.3f (x_0 %.3f, "
                           "B_n %.1f)\n", static_cast<long long>(step), solved->alpha, solved->nu, solved->x0(),
                   solved->noise_scale(static_cast<double>(run.batch)));
    } else {
      std::fprintf(stderr, "baseline: pace probe after step %lld: the step equation is not solved from the first "
                           "two pairs (a gain missing, or outside the equation's range)\n", static_cast<long long>(step));
    }
  }
  return readings;
}

}  // namespace trainsim::measure
