#pragma once
// Fitting a device to a few measured timings (docs/FIT.md): least squares over the parameters the
// observations determine, each with its standard error; the ones they cannot determine named.
//
// Each observation is predicted by the simulator itself (simulate_run on a profile built from the
// parameters: fit/device_model.h), so a fitted parameter means in a prediction exactly what it
// meant in the fit. Residuals are relative (log predicted - log measured): a table spanning
// 0.5 s and 500 s epochs weighs every cell alike. Parameters are fitted in log space (all are
// positive) by Levenberg-Marquardt with a forward-difference Jacobian (Eigen).

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fit/device_model.h"
#include "format/profile.h"
#include "io/config.h"
#include "io/gpu_catalog.h"
#include "train/simulator.h"

namespace trainsim::fit {

enum class ParamStatus {
  kNotInPlay,     // no observation and no prediction involves it (e.g. links with one GPU)
  kFromProfile,   // the measured profile fixes it (transfer)
  kFitted,        // determined by the observations
  kAtZero,        // the observations put it at (or below) the smallest value fitted: none
  kUndetermined,  // in play, but the observations cannot tell its value
};
const char* to_string(ParamStatus s);

struct ParamEstimate {
  Param param = Param::kEfficiency;
  ParamStatus status = ParamStatus::kNotInPlay;
  double value = 0;                   // what predictions use (0 unless fitted)
  std::optional<double> relative_se;  // standard error / value (log-space); none with no residual dof
  bool at_limit = false;              // fitted at the top of its range (a rate: either edge): the model cannot reach the observations
};

struct FitResult {
  bool named_gpu = false;              // efficiency relative to a catalog roofline
  std::vector<ParamEstimate> params;   // in Param order, all kParamCount
  ParamValues values{};                // what predictions use
  std::vector<double> predicted;       // per observation, its measured quantity
  int degrees_of_freedom = 0;          // observations - fitted parameters
  double rms_relative_error = 0;       // sqrt(mean(((predicted - measured) / measured)^2))
  // The prediction interval's ingredients (DeviceFit::interval): the covariance of the fitted
  // parameters' logs (row-major, `fitted` x `fitted`, in `fitted`'s order) and the log-space
  // variance of one measured timing, sigma^2 = max(residual variance, kTimingNoise^2) (the
  // residual variance is 0 without degrees of freedom): covariance = sigma^2 (J^T J)^+.
  std::vector<Param> fitted;
  std::vector<double> covariance;
  double noise_variance = 0;

  // Another minimum that fits nearly as well (rms within 10% + 0.5 points) with some parameter
  // more than 2x apart: the observations admit two explanations. Holds no alternative itself.
  std::shared_ptr<const FitResult> alternative;

  const ParamEstimate& estimate(Param p) const { return params[static_cast<std::size_t>(p)]; }
  std::vector<std::string> undetermined() const;  // names of the undetermined parameters
};

// The spread of a measured epoch or iteration time the intervals assume at least (log space,
// about 5%): repeats of one configuration on the machines this project timed spread 0.5-5.4%
// (CPU) and more on the GPUs (docs/FIT.md "Intervals"). Not fitted to any table.
inline constexpr double kTimingNoise = 0.05;

// A prediction with its interval: the central value and the bounds of the central 68% (one
// standard deviation each side in log space: the parameters' covariance carried through the
// simulator by finite differences, plus one timing's noise).
struct Interval {
  double value = 0;
  double lo = 0;
  double hi = 0;
  bool contains(double x) const { return lo <= x && x <= hi; }
  // More than 10x either way of its value (kUndeterminedSpread): the observations do not
  // determine the prediction; printed as such, kept in the CSV.
  bool undetermined() const { return hi > kUndeterminedSpread * value; }
};

// Intervals carry a fit's covariance through the simulator by finite differences of this step in
// each fitted parameter's log.
inline constexpr double kSensitivityStep = 1e-3;
// The fit's values with fitted parameter j (index into FitResult::fitted) nudged by that step.
ParamValues nudged(const FitResult& fit, std::size_t j);
// The 68% interval of a prediction `value` whose log moves with the fitted parameters' logs as
// `sensitivity` (d log value / d log parameter, in FitResult::fitted's order):
// value exp(+-sqrt(g^T C g + sigma^2)).
Interval interval_around(const FitResult& fit, double value, const std::vector<double>& sensitivity);

// The link a fit assumes between GPUs when nothing names one (no gpu:, no interconnect:, no
// multi-GPU observation that determines it): PCIe 3.0 x16 without peer-to-peer, so a collective's
// bytes go through host memory and cross PCIe twice: bus bandwidth half the link's 15.75 GB/s per
// direction, latency 0. Every prediction that uses it says so (assumed).
InterconnectAssumption default_pcie_link();

// What the fit and its predictions are about.
struct FitSetup {
  SweepConfig config;                   // model, data set, loader, trainer, file (errors)
  std::optional<GpuSpec> target;        // the GPU predicted for; none: an unknown device
  const Profile* measured = nullptr;    // a measured profile to transfer from, or nullptr
  std::optional<GpuSpec> measured_gpu;  // the catalog GPU `measured` was taken on
};

// Fits, predicts, and says what a prediction needs that the fit did not determine.
class DeviceFit {
 public:
  // Throws InputError (the config's file and the observation's line) for an observation the
  // setup cannot predict: a GPU without a roofline to move efficiencies across, a configuration
  // the simulator refuses.
  explicit DeviceFit(FitSetup setup);

  // Fits `observations` (indices into the config's). Throws InputError when the observations
  // cannot determine the compute (no prediction would be possible). The cold starts run on up to
  // `threads` threads (the result is the same for any count); `progress(done, starts)` is called
  // as each start ends, from one thread at a time.
  using Progress = std::function<void(std::size_t done, std::size_t total)>;
  FitResult fit(const std::vector<std::size_t>& observations, int threads = 1, const Progress& progress = {}) const;
  FitResult fit_all(int threads = 1, const Progress& progress = {}) const;
  // Fits `observations` from one start, `near` (a fit of a superset of them), instead of the cold
  // starts fit() tries: what `near` found undetermined or at zero stays so (fewer observations
  // determine no more), the parameters it fitted start from its values. A leave-one-out fold's
  // optimum lies next to the full fit's, so it is found in a few steps.
  FitResult refit(const std::vector<std::size_t>& observations, const FitResult& near) const;

  // The profile the sweep runs on for the target GPU with the fitted values, and the spec change.
  Profile target_profile(const FitResult& fit) const;
  RunSpec spec_for(const RunSpec& spec, const FitResult& fit) const;
  // Why `spec` cannot be predicted with this fit (a parameter it needs is undetermined), or nullopt.
  std::optional<std::string> unpredictable(const RunSpec& spec, const FitResult& fit) const;
  // The interconnect multi-GPU predictions use when the link was not fitted: the config's, else
  // the target's catalog link, else default_pcie_link() (a measured profile predicting for its own
  // device keeps its measured curves); nullopt: none.
  std::optional<InterconnectAssumption> fallback_link() const;
  // Whether that fallback is default_pcie_link().
  bool default_link() const;

  // The observation's measured quantity as the simulator predicts it with `values`.
  double predict(const Observation& o, const ParamValues& values, bool link_fitted) const;
  // The same with its 68% interval (one simulation per fitted parameter beyond the prediction).
  Interval interval(const Observation& o, const FitResult& fit) const;
  // The interval of any quantity `predict_with(values)` computes from the fit's parameters.
  static Interval interval_of(const FitResult& fit, const std::function<double(const ParamValues&)>& predict_with);
  const SweepConfig& config() const { return setup_.config; }
  RunSpec observation_spec(const Observation& o) const;
  const Observation& observation(std::size_t i) const { return setup_.config.observations.at(i); }

 private:
  // `warm`: start from that fit (refit()); nullptr: from start `start`.
  FitResult fit_from(const std::vector<std::size_t>& observations, int start, const FitResult* warm = nullptr) const;
  Profile profile_for(const std::optional<GpuSpec>& gpu, const ParamValues& values) const;
  const RooflineTable& table_for(const std::optional<GpuSpec>& gpu) const;
  std::vector<Param> in_play(const std::vector<std::size_t>& observations) const;

  FitSetup setup_;
  int64_t max_batch_ = 1;
  // By GPU key ("" unknown), built on first use; a deque keeps each table where it is while
  // others are added, and the mutex lets the folds of holdout() share them.
  mutable std::deque<std::pair<std::string, RooflineTable>> tables_;
  mutable std::mutex tables_mutex_;
};

// Whether the fit determined the link (else the fallback link, if any, prices collectives).
bool link_fitted(const FitResult& fit);

// Leave-one-out over the observations: each predicted by a fit of the others.
struct HoldoutRow {
  std::size_t observation = 0;
  std::optional<double> predicted;  // none: the others cannot predict it
  std::optional<Interval> interval; // score_held_out: the prediction's 68% interval
  std::string why_not;              // when not predicted: what the others leave undetermined
};
// With many observations per parameter in play (kWarmFoldObservationsPerParameter), each fold
// is a refit() from `full` (the fit of every observation): one observation barely moves the
// optimum, and n folds from the full fit's start cost about what n / 10 cold fits would. With
// fewer, each fold is a cold fit() of its own: the folds' optima are then not unique (a few
// observations, several readings), and a start from the full fit, which saw the held-out
// observation, would pick the reading nearest it (docs/FIT.md has both on the bundled configs).
// The folds run on `threads` threads (results in order, whatever the count);
// `progress(done, n)` is called after each fold, from one thread at a time.
inline constexpr std::size_t kWarmFoldObservationsPerParameter = 4;
bool holdout_starts_warm(const FitResult& full, std::size_t observations);
std::vector<HoldoutRow> holdout(const DeviceFit& fit, const FitResult& full, int threads = 1,
                                const DeviceFit::Progress& progress = {});

// The config's held_out: timings, each predicted from `fit` (rows index config.held_out).
std::vector<HoldoutRow> score_held_out(const DeviceFit& device, const FitResult& fit);

}  // namespace trainsim::fit
