#pragma once
// The McCandlish et al. (2018) trade-off between steps and examples needed to reach a given loss,
// and Pollux's statistical efficiency (docs/LARGE_BATCH.md "The McCandlish relation"):
//   (S/S_min - 1)(E/E_min - 1) = 1, i.e. S = S_min (1 + B_noise/B), E = E_min (1 + B/B_noise),
// with E = B S and B_crit = E_min / S_min (= B_noise in this model).
// All functions throw std::invalid_argument on a batch < 1, a non-positive count or a negative
// (or, where it divides, zero) noise scale.

namespace trainsim {

// S = S_min (1 + B_noise / B): optimizer steps to reach the loss at batch B.
double steps_at_batch(double min_steps, double noise_scale, double batch);
// E = E_min (1 + B / B_noise): training examples to reach the loss at batch B (noise_scale > 0).
double examples_at_batch(double min_examples, double noise_scale, double batch);

// Inversions from one observed run that reached the loss in `steps` steps at batch B:
// S_min = S / (1 + B_noise / B)
double min_steps_from(double batch, double steps, double noise_scale);
// E_min = E / (1 + B / B_noise) with E = B S (noise_scale > 0)
double min_examples_from(double batch, double steps, double noise_scale);
// B_crit = E_min / S_min
double critical_batch(double min_examples, double min_steps);

// The model fitted to two runs that reached the same loss: S_i = S_min + (S_min B_noise) / B_i is
// linear in 1/B_i, so S_min B_noise = (S_1 - S_2) / (1/B_1 - 1/B_2) and S_min = S_1 - S_min B_noise / B_1.
// Throws std::invalid_argument when the batches are equal or the fit gives S_min <= 0 or
// B_noise < 0 (the runs contradict the model).
struct McCandlishFit {
  double min_steps = 0;     // S_min
  double min_examples = 0;  // E_min = S_min B_noise
  double noise_scale = 0;   // B_noise
};
McCandlishFit fit_two_runs(double batch1, double steps1, double batch2, double steps2);

// Pollux: efficiency(M) = (phi + M_0) / (phi + M), phi the noise scale and M_0 the reference
// batch; the progress per example at batch M relative to M_0 (McCandlish: E(M_0) / E(M) at one loss).
// goodput = throughput * efficiency.
double pollux_efficiency(double noise_scale, double base_batch, double batch);

}  // namespace trainsim
