#include "largebatch/validation_run.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "largebatch/gradient_noise.h"
#include "stats/noise_scale.h"

namespace trainsim::measure {
namespace {

// Samples [first, first + n) of `stream` as tensors.
void sample_tensors(const MixtureTask& task, uint64_t stream, int64_t first, int64_t n, torch::Tensor& inputs,
                    torch::Tensor& labels) {
  inputs = torch::empty({n, task.spec().dims}, torch::kFloat32);
  labels = torch::empty({n}, torch::kInt64);
  task.sample(stream, first, n, inputs.data_ptr<float>(), labels.data_ptr<int64_t>());
}

void check(const RunSettings& s) {
  if (s.batch < 1 || s.micro_batches < 1 || s.batch % s.micro_batches != 0) {
    throw std::invalid_argument("train_to_target: batch " + std::to_string(s.batch) + " and micro-batches " +
                                std::to_string(s.micro_batches) + ": need both >= 1, the batch divisible");
  }
  if (s.repeats < 1) throw std::invalid_argument("train_to_target: repeats must be >= 1");
  if (s.max_steps < 1 || !(s.target_loss > 0) || !(s.lr >= 0) || !(s.divergence_factor > 1)) {
    throw std::invalid_argument("train_to_target: need max_steps >= 1, target_loss > 0, lr >= 0 and "
                                "divergence_factor > 1");
  }
}

}  // namespace

ValidationProblem::ValidationProblem(const MixtureSpec& mixture, std::vector<int64_t> hidden_,
                                     int64_t held_out_samples, uint64_t init_seed)
    : task(mixture), hidden(std::move(hidden_)) {
  if (held_out_samples < 1) throw std::invalid_argument("ValidationProblem: need >= 1 held-out sample");
  sample_tensors(task, kHeldOutStream, 0, held_out_samples, held_out_inputs, held_out_labels);
  bayes_loss = task.bayes_loss(held_out_inputs.data_ptr<float>(), held_out_labels.data_ptr<int64_t>(), held_out_samples);
  torch::manual_seed(init_seed);
  initial = models::SmallMlp(mixture.dims, hidden, mixture.classes);
}

models::SmallMlp ValidationProblem::make_model() const {
  models::SmallMlp model(task.spec().dims, hidden, task.spec().classes);
  torch::NoGradGuard no_grad;
  const auto from = initial->parameters();
  auto to = model->parameters();
  for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
  return model;
}

double ValidationProblem::held_out_loss(models::SmallMlp& model) const {
  torch::NoGradGuard no_grad;
  return torch::nn::functional::cross_entropy(model->forward(held_out_inputs), held_out_labels).item<double>();
}

bool evaluation_due(int64_t step) {
  constexpr int64_t kPerDoubling = 64;
  int64_t interval = 1;
  while (interval * 2 * kPerDoubling <= step) interval *= 2;  // 2^floor(log2(step / 64)) from 128 on
  return step % interval == 0;
}

RunResult train_to_target(const ValidationProblem& problem, const RunSettings& s) {
  check(s);
  struct Copy {
    models::SmallMlp model{nullptr};
    std::vector<torch::Tensor> params;
    std::unique_ptr<torch::optim::SGD> optimizer;
  };
  std::vector<Copy> copies(static_cast<size_t>(s.repeats));
  for (auto& c : copies) {
    c.model = problem.make_model();
    c.params = c.model->parameters();
    c.optimizer = std::make_unique<torch::optim::SGD>(c.params, torch::optim::SGDOptions(s.lr).momentum(s.momentum));
  }
  auto mean_held_out_loss = [&] {
    double sum = 0;
    for (auto& c : copies) sum += problem.held_out_loss(c.model);
    return sum / static_cast<double>(copies.size());
  };
  GradientNoiseEstimator noise(s.ema_decay);

  RunResult result;
  const double initial_loss = mean_held_out_loss();
  if (initial_loss <= s.target_loss) {
    throw std::invalid_argument("train_to_target: the initial held-out loss " + std::to_string(initial_loss) +
                                " is already at or below the target " + std::to_string(s.target_loss));
  }
  result.curve.push_back(CurvePoint{0, initial_loss, std::nullopt, std::nullopt, std::nullopt});
  double lowest_loss = initial_loss;
  int64_t lowest_step = 0;
  torch::Tensor inputs;
  torch::Tensor labels;
  for (int64_t step = 0; step < s.max_steps; ++step) {
    double small_sq = 0;
    double big_sq = 0;
    std::optional<GradientNorms> norms;
    for (size_t r = 0; r < copies.size(); ++r) {
      Copy& c = copies[r];
      sample_tensors(problem.task, kTrainStream + r, step * s.batch, s.batch, inputs, labels);
      const MeanLoss mean_loss = [&c](const torch::Tensor& x, const torch::Tensor& y) {
        return torch::nn::functional::cross_entropy(c.model->forward(x), y);
      };
      if (s.micro_batches >= 2) {
        norms = micro_batch_backward(c.params, mean_loss, inputs, labels, s.micro_batches);
        small_sq += norms->small_sq_norm.item<double>();
        big_sq += norms->big_sq_norm.item<double>();
      } else {
        c.optimizer->zero_grad();
        mean_loss(inputs, labels).backward();
      }
      c.optimizer->step();
    }
    if (norms) {
      const double n = static_cast<double>(copies.size());
      noise.add(small_sq / n, big_sq / n, norms->small_batch, norms->big_batch);
    }
    result.steps_run = step + 1;
    if (!evaluation_due(result.steps_run) && result.steps_run != s.max_steps) continue;

    CurvePoint point;
    point.step = result.steps_run;
    point.loss = mean_held_out_loss();
    if (s.micro_batches >= 2) {
      point.grad_sq_norm = noise.grad_sq_norm();
      point.trace_sigma = noise.trace_sigma();
      point.noise_scale = noise.noise_scale();
    }
    const CurvePoint previous = result.curve.back();
    result.curve.push_back(point);
    if (!std::isfinite(point.loss) || point.loss > s.divergence_factor * initial_loss) {
      result.diverged = true;
      break;
    }
    if (point.loss <= s.target_loss) {
      // Linear interpolation between the evaluations around the crossing:
      //   S = s_prev + (L_prev - target) / (L_prev - L) * (s - s_prev)
      const double fraction = (previous.loss - s.target_loss) / (previous.loss - point.loss);
      result.steps_to_target =
          static_cast<double>(previous.step) + fraction * static_cast<double>(point.step - previous.step);
      break;
    }
    // A new lowest loss counts as progress only when it closes at least 1% of the remaining gap
    // to the target (fluctuations on a plateau make tiny new lows now and then).
    if (point.loss < lowest_loss - kProgressFraction * (lowest_loss - s.target_loss)) {
      lowest_loss = point.loss;
      lowest_step = point.step;
    }
    if (point.step >= kPlateauMinSteps && point.step > 2 * lowest_step) {
      result.stalled = true;
      break;
    }
  }
  return result;
}

}  // namespace trainsim::measure
