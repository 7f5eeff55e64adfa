#include "fit/fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <stdexcept>
#include <thread>

#include "format/errors.h"

namespace trainsim::fit {
namespace {

constexpr std::size_t index(Param p) { return static_cast<std::size_t>(p); }

// The range each parameter is fitted in (natural units). A parameter driven to its floor is a
// cost the observations show no sign of: reported as at zero, and priced as none.
struct Range {
  double lo, hi;
};
Range range_of(Param p, bool named_gpu) {
  switch (p) {
    case Param::kEfficiency: return named_gpu ? Range{1e-4, 2.0} : Range{1e6, 1e17};
    case Param::kOverhead: return {1e-7, 10};
    case Param::kLoaderSample: return {1e-8, 10};
    case Param::kLoaderStartup: return {1e-5, 1e3};
    case Param::kLinkBusbw: return {1e-3, 1e4};
    case Param::kLinkLatency: return {1e-8, 1};
    case Param::kDpReplica: return {1e-7, 10};
  }
  return {1e-9, 1e9};
}

// Whether a parameter is a cost (time added), so that its floor means "none": the efficiency and
// the link's bandwidth are rates, and their floors are the slowest device or link there is.
bool is_cost(Param p) { return p != Param::kEfficiency && p != Param::kLinkBusbw; }

// Where the fit starts (natural units); the efficiency is then rescaled to the observations.
// Start 0 is neutral, start 1 leans to a fast loader and costly host work, start 2 to a slow
// loader and little host work.
constexpr int kStarts = 3;
double start_of(Param p, bool named_gpu, int start) {
  const double host = start == 1 ? 10 : start == 2 ? 0.1 : 1;
  const double loader = start == 1 ? 0.01 : start == 2 ? 30 : 1;
  switch (p) {
    case Param::kEfficiency: return named_gpu ? 0.3 : 1e12;
    case Param::kOverhead: return 1e-3 * host;
    case Param::kLoaderSample: return 1e-4 * loader;
    case Param::kLoaderStartup: return 0.1;
    case Param::kLinkBusbw: return 10;
    case Param::kLinkLatency: return 1e-5;
    case Param::kDpReplica: return 1e-3 * host;
  }
  return 1;
}

// Which parameter goes first when the observations leave several undetermined: the least
// essential to a prediction (latency and DataParallel's host work refine times, the compute
// efficiency is the time).
constexpr Param kDropOrder[] = {Param::kLinkLatency, Param::kDpReplica,  Param::kLoaderStartup, Param::kLoaderSample,
                                Param::kOverhead,    Param::kLinkBusbw, Param::kEfficiency};

std::string gpu_key(const std::optional<GpuSpec>& gpu) { return gpu ? gpu->key : std::string(); }

InputError observation_error(const SweepConfig& config, const Observation& o, const std::string& message) {
  return InputError(config.file, o.line, "observations", message);
}

}  // namespace

const char* to_string(ParamStatus s) {
  switch (s) {
    case ParamStatus::kNotInPlay: return "not in play";
    case ParamStatus::kFromProfile: return "from the profile";
    case ParamStatus::kFitted: return "fitted";
    case ParamStatus::kAtZero: return "at zero";
    case ParamStatus::kUndetermined: return "undetermined";
  }
  return "?";
}

std::vector<std::string> FitResult::undetermined() const {
  std::vector<std::string> names;
  for (const ParamEstimate& e : params) {
    if (e.status == ParamStatus::kUndetermined) names.push_back(param_info(e.param, named_gpu).name);
  }
  return names;
}

DeviceFit::DeviceFit(FitSetup setup) : setup_(std::move(setup)) {
  const SweepConfig& c = setup_.config;
  for (int64_t b : c.batch_per_gpu) max_batch_ = std::max(max_batch_, b);
  for (const Observation& o : c.observations) {
    max_batch_ = std::max(max_batch_, o.batch_per_gpu);
    if (o.gpu && !setup_.target) {
      throw observation_error(c, o, "names gpu " + o.gpu->key + " but the config predicts for an unknown device: "
                                    "name the config's gpu: too");
    }
    if (o.gpu && setup_.measured && !setup_.measured_gpu) {
      throw observation_error(c, o, "names gpu " + o.gpu->key + " but the profile's device (" +
                                    setup_.measured->machine.device_name + ") is not a catalog GPU to transfer from");
    }
  }
  max_batch_ = std::min(max_batch_, c.train_samples);
}

const RooflineTable& DeviceFit::table_for(const std::optional<GpuSpec>& gpu) const {
  const std::string key = gpu_key(gpu);
  const std::lock_guard<std::mutex> lock(tables_mutex_);
  for (const auto& [k, table] : tables_) {
    if (k == key) return table;
  }
  tables_.emplace_back(key, RooflineTable(setup_.config.model, gpu, max_batch_));
  return tables_.back().second;
}

Profile DeviceFit::profile_for(const std::optional<GpuSpec>& gpu, const ParamValues& values) const {
  if (setup_.measured) {
    if (!gpu || !setup_.measured_gpu || gpu->key == setup_.measured_gpu->key) return *setup_.measured;
    return transfer_profile(*setup_.measured, setup_.config.model, *setup_.measured_gpu, *gpu);
  }
  return roofline_profile(table_for(gpu), values);
}

RunSpec DeviceFit::observation_spec(const Observation& o) const {
  RunSpec spec = config_spec(setup_.config, o.strategy, o.gpus, o.batch_per_gpu);
  spec.loader_workers = o.loader_workers.value_or(setup_.config.loader_workers);
  return spec;
}

InterconnectAssumption default_pcie_link() {
  GpuLink pcie3;
  pcie3.pcie_generation = 3;
  pcie3.pcie_lanes = 16;
  InterconnectAssumption link;
  link.bus_bandwidth_gbs = pcie3.pcie_gbs() / 2;  // device -> host memory -> device
  link.latency_us = 0;
  link.override_measured = true;
  return link;
}

bool DeviceFit::default_link() const {
  return !setup_.config.interconnect && !setup_.target && !setup_.measured && !setup_.config.topology;
}

std::optional<InterconnectAssumption> DeviceFit::fallback_link() const {
  if (setup_.config.interconnect) return setup_.config.interconnect;
  if (setup_.target) return catalog_interconnect(*setup_.target);
  if (default_link()) return default_pcie_link();
  return std::nullopt;
}

double DeviceFit::predict(const Observation& o, const ParamValues& values, bool link_fitted) const {
  RunSpec spec = run_spec_for(observation_spec(o), values, link_fitted);
  if (!link_fitted && o.gpus > 1 && !spec.interconnect && !spec.topology) spec.interconnect = fallback_link();
  if (o.gpus > 1 && !spec.interconnect && !spec.topology) {
    throw observation_error(setup_.config, o, "on " + std::to_string(o.gpus) +
                                                  " GPUs needs the link between them, which nothing gives "
                                                  "(an interconnect: block or a catalog gpu:)");
  }
  const std::optional<GpuSpec>& gpu = o.gpu ? o.gpu : setup_.target;
  const SimResult r = simulate_run(profile_for(gpu, values), setup_.config.model, spec);
  if (!r.runnable) throw observation_error(setup_.config, o, "cannot be simulated: " + r.not_runnable);
  return o.epoch_s ? r.epoch_s : r.iteration_s;
}

std::vector<Param> DeviceFit::in_play(const std::vector<std::size_t>& observations) const {
  const SweepConfig& c = setup_.config;
  bool multi = false, dp_multi = false, workers = false;
  for (std::size_t i : observations) {
    const Observation& o = c.observations[i];
    multi = multi || o.gpus > 1;
    dp_multi = dp_multi || (o.gpus > 1 && o.strategy == Strategy::kDp);
    workers = workers || o.loader_workers.value_or(c.loader_workers) > 0;
  }
  std::vector<Param> params;
  if (!setup_.measured) {
    params = {Param::kEfficiency, Param::kOverhead, Param::kLoaderSample};
    if (workers && !c.persistent_workers) params.push_back(Param::kLoaderStartup);
  }
  // A topology prices collectives itself (NCCL's model): the link is not fitted then.
  if (multi && !c.topology) {
    params.push_back(Param::kLinkBusbw);
    params.push_back(Param::kLinkLatency);
  }
  if (dp_multi) params.push_back(Param::kDpReplica);
  return params;
}

FitResult DeviceFit::fit_all(int threads, const Progress& progress) const {
  std::vector<std::size_t> all(setup_.config.observations.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return fit(all, threads, progress);
}

namespace {

// Runs task(0) ... task(n - 1) on up to `threads` threads, calling progress(done, n) after each
// (one call at a time); the first exception a task throws stops the rest and is rethrown.
void run_tasks(std::size_t n, int threads, const std::function<void(std::size_t)>& task,
               const DeviceFit::Progress& progress) {
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex mutex;
  std::exception_ptr failure;
  const auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        task(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = n;
        return;
      }
      const std::lock_guard<std::mutex> lock(mutex);
      ++done;
      if (progress) progress(done, n);
    }
  };
  std::vector<std::thread> pool;
  const auto count = std::min(static_cast<std::size_t>(std::max(1, threads)), n);
  for (std::size_t t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

// One least-squares solution over `free` (the other parameters held at their values in `start`).
struct Solution {
  ParamValues values{};
  Eigen::VectorXd residuals;  // log(predicted / measured) per observation
  Eigen::MatrixXd jacobian;   // d residual / d log(value), at the solution
  double cost() const { return residuals.squaredNorm(); }
};

using Residuals = std::function<Eigen::VectorXd(const ParamValues&)>;

// Levenberg-Marquardt in x = log(value), each parameter within its range, forward differences
// (backwards at the top of a range, where a step up would be clamped away).
Solution least_squares(const std::vector<Param>& free, const ParamValues& start, bool named,
                       const Residuals& residuals) {
  const auto m = static_cast<Eigen::Index>(free.size());
  const auto param = [&](Eigen::Index j) { return free[static_cast<std::size_t>(j)]; };
  const auto set = [&](const Eigen::VectorXd& x) {
    ParamValues v = start;
    for (Eigen::Index j = 0; j < m; ++j) {
      const Range range = range_of(param(j), named);
      at(v, param(j)) = std::clamp(std::exp(x[j]), range.lo, range.hi);
    }
    return v;
  };
  constexpr double kStep = 1e-4;
  const auto jacobian_at = [&](const Eigen::VectorXd& x, const Eigen::VectorXd& r) {
    Eigen::MatrixXd J(r.size(), m);
    for (Eigen::Index j = 0; j < m; ++j) {
      const double h = x[j] + kStep > std::log(range_of(param(j), named).hi) ? -kStep : kStep;
      Eigen::VectorXd xh = x;
      xh[j] += h;
      J.col(j) = (residuals(set(xh)) - r) / h;
    }
    return J;
  };
  Eigen::VectorXd x(m);
  for (Eigen::Index j = 0; j < m; ++j) x[j] = std::log(at(start, param(j)));
  Solution s;
  s.residuals = residuals(set(x));
  double cost = s.residuals.squaredNorm();
  double lambda = 1e-3;
  for (int iteration = 0; iteration < 200 && m > 0; ++iteration) {
    const Eigen::MatrixXd J = jacobian_at(x, s.residuals);
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * s.residuals;
    bool improved = false;
    double step = 0;
    while (lambda < 1e12) {
      Eigen::MatrixXd damped = A;
      for (Eigen::Index j = 0; j < m; ++j) damped(j, j) += lambda * (A(j, j) + 1e-12);
      Eigen::VectorXd trial = x + damped.ldlt().solve(-g);
      for (Eigen::Index j = 0; j < m; ++j) {
        const Range range = range_of(param(j), named);
        trial[j] = std::clamp(trial[j], std::log(range.lo), std::log(range.hi));
      }
      const Eigen::VectorXd trial_r = residuals(set(trial));
      const double trial_cost = trial_r.squaredNorm();
      if (std::isfinite(trial_cost) && trial_cost < cost) {
        step = (trial - x).norm();
        improved = cost - trial_cost > 1e-14 * std::max(cost, 1e-300);
        x = trial;
        s.residuals = trial_r;
        cost = trial_cost;
        lambda = std::max(lambda / 10, 1e-12);
        break;
      }
      lambda *= 10;
    }
    if (!improved || step < 1e-9 || cost < 1e-20) break;
  }
  s.values = set(x);
  s.jacobian = m > 0 ? jacobian_at(x, s.residuals) : Eigen::MatrixXd(s.residuals.size(), 0);
  return s;
}

// Which parameter goes first when the observations leave several undetermined (kDropOrder),
// among those with a share of the Jacobian's null space (columns normalised), or nullopt.
// A direction along which the residuals move 1000x less than along the best-determined one (the
// Jacobian's columns normalised) is one the observations do not pin down: a simulator's times are
// rounded to nanoseconds and its Jacobian is a finite difference, so exact zeros never show.
constexpr double kNullSingularValue = 1e-3;

// Parameters at the floor of their range are left to the floor test (fit_from).
std::optional<std::size_t> least_essential_undetermined(const std::vector<Param>& free, const Eigen::MatrixXd& J,
                                                        const std::vector<bool>& at_floor) {
  const auto m = J.cols();
  Eigen::MatrixXd scaled = J;
  std::optional<std::size_t> drop;
  const auto rank = [](Param p) { return std::find(std::begin(kDropOrder), std::end(kDropOrder), p) - std::begin(kDropOrder); };
  const auto consider = [&](std::size_t j) {
    if (!drop || rank(free[j]) < rank(free[*drop])) drop = j;
  };
  Eigen::VectorXd norms = J.colwise().norm();
  for (Eigen::Index j = 0; j < m; ++j) {
    if (at_floor[static_cast<std::size_t>(j)]) {
      scaled.col(j).setZero();
      norms[j] = 0;
    } else if (norms[j] < 1e-6) {
      consider(static_cast<std::size_t>(j));  // no observation moves with it at all
      scaled.col(j).setZero();
    } else {
      scaled.col(j) /= norms[j];
    }
  }
  if (drop) return drop;
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(scaled, Eigen::ComputeFullV);
  const Eigen::VectorXd& sv = svd.singularValues();
  const double s_max = sv.size() > 0 ? sv[0] : 0;
  for (Eigen::Index j = 0; j < m; ++j) {
    double in_null = 0;
    for (Eigen::Index k = 0; k < m; ++k) {
      const double sk = k < sv.size() ? sv[k] : 0;
      if (sk <= kNullSingularValue * std::max(s_max, 1e-300)) in_null += svd.matrixV()(j, k) * svd.matrixV()(j, k);
    }
    if (norms[j] > 0 && std::sqrt(in_null) > 0.1) consider(static_cast<std::size_t>(j));
  }
  return drop;
}

bool contains(const std::vector<Param>& list, Param p) { return std::find(list.begin(), list.end(), p) != list.end(); }

// The steps of one fit of `observations` (indices into the fit's config), in the order
// DeviceFit::fit_from takes them.
class FitSteps {
 public:
  FitSteps(const DeviceFit& fit, const std::vector<std::size_t>& observations, bool named)
      : fit_(fit), observations_(observations), named_(named) {}

  // Least squares over `free` from `start`, the residuals priced as while fitting `priced`.
  Solution solve(const std::vector<Param>& free, const ParamValues& start, const std::vector<Param>& priced) const {
    return least_squares(free, start, named_, residuals_over(priced));
  }

  // Starts the efficiency where the observation with the most work per iteration says.
  void start_efficiency(ParamValues& values, const std::vector<Param>& free) const {
    const SweepConfig& c = fit_.config();
    std::size_t largest = observations_.front();
    for (std::size_t i : observations_) {
      if (c.observations[i].batch_per_gpu > c.observations[largest].batch_per_gpu) largest = i;
    }
    const Observation& o = c.observations[largest];
    const Range range = range_of(Param::kEfficiency, named_);
    at(values, Param::kEfficiency) = std::clamp(
        at(values, Param::kEfficiency) * fit_.predict(o, values, contains(free, Param::kLinkBusbw)) / o.measured(),
        range.lo, range.hi);
  }

  // Takes out the least essential parameter the observations cannot determine, refits, and
  // repeats while there is one; each taken out is marked undetermined in `result`.
  Solution drop_undetermined(FitResult& result, std::vector<Param>& free, Solution solution) const {
    const auto floors = [&] {
      std::vector<bool> low;
      for (Param p : free) low.push_back(is_cost(p) && at(solution.values, p) <= range_of(p, named_).lo * (1 + 1e-9));
      return low;
    };
    while (const std::optional<std::size_t> drop = least_essential_undetermined(free, solution.jacobian, floors())) {
      const Param p = free[*drop];
      result.params[index(p)].status = ParamStatus::kUndetermined;
      free.erase(free.begin() + static_cast<std::ptrdiff_t>(*drop));
      ParamValues held = solution.values;
      // A cost nobody can tell is not priced; the rates and the link's latency keep their values.
      if (is_cost(p) && p != Param::kLinkLatency) at(held, p) = 0;
      solution = solve(free, held, free);
    }
    return solution;
  }

  // A cost driven to the floor of its range is either none (raising it spoils the fit) or free
  // (the others absorb it: undetermined). Raised to its starting value with the others refitted.
  // Raising it and fitting better means the descent stalled at the floor: fit again from there.
  // Each such cost leaves `free` at zero, marked in `result`; returns the refit of the rest.
  Solution settle_floors(FitResult& result, std::vector<Param>& free, Solution solution) const {
    int restarts = 0;
    for (std::size_t j = 0; j < free.size();) {
      const Param p = free[j];
      if (!is_cost(p) || at(solution.values, p) > range_of(p, named_).lo * (1 + 1e-9)) {
        ++j;
        continue;
      }
      std::vector<Param> others = free;
      others.erase(others.begin() + static_cast<std::ptrdiff_t>(j));
      ParamValues raised = solution.values;
      at(raised, p) = start_of(p, named_, 0);
      const Solution tried = solve(others, raised, free);
      if (tried.cost() < 0.95 * solution.cost() && restarts < 10) {
        ++restarts;
        solution = solve(free, tried.values, free);
        j = 0;
        continue;
      }
      const bool absorbed = tried.cost() <= solution.cost() * 1.05 + 1e-6;
      result.params[index(p)].status = absorbed ? ParamStatus::kUndetermined : ParamStatus::kAtZero;
      at(solution.values, p) = 0;
      free.erase(free.begin() + static_cast<std::ptrdiff_t>(j));
    }
    return solve(free, solution.values, free);
  }

  // Puts `solution` over `free` into `result`: the fitted parameters with their standard errors
  // (log space = relative: s^2 (J^T J)^-1) and limits, the covariance, every value, and the
  // observations' predictions with their RMS relative error.
  void record(FitResult& result, const std::vector<Param>& free, const Solution& solution) const {
    const auto n = static_cast<Eigen::Index>(observations_.size());
    const auto m = static_cast<Eigen::Index>(free.size());
    result.degrees_of_freedom = static_cast<int>(n - m);
    std::optional<Eigen::MatrixXd> covariance;
    const Eigen::MatrixXd normal = solution.jacobian.transpose() * solution.jacobian;
    const double s2 = n > m ? solution.cost() / static_cast<double>(n - m) : 0.0;  // residual variance
    if (m > 0 && n > m) covariance = normal.inverse() * s2;
    // The intervals' covariance: the residual spread, but never below a real timing's noise (an
    // exact fit has no residual to say how far a measured timing strays).
    result.fitted = free;
    result.noise_variance = std::max(s2, kTimingNoise * kTimingNoise);
    if (m > 0) {
      const Eigen::MatrixXd inverse = normal.completeOrthogonalDecomposition().pseudoInverse();
      for (Eigen::Index i = 0; i < m; ++i) {
        for (Eigen::Index j = 0; j < m; ++j) result.covariance.push_back(inverse(i, j) * result.noise_variance);
      }
    }
    for (Eigen::Index j = 0; j < m; ++j) {
      ParamEstimate& e = result.params[index(free[static_cast<std::size_t>(j)])];
      e.status = ParamStatus::kFitted;
      // At the top of its range, or a rate (device, link) at the bottom of its: an edge no real
      // machine reaches, so the observations ask for more than the model can give.
      const Range range = range_of(e.param, named_);
      const double v = at(solution.values, e.param);
      e.at_limit = v >= range.hi * (1 - 1e-9) || (!is_cost(e.param) && v <= range.lo * (1 + 1e-9));
      if (covariance) e.relative_se = std::sqrt(std::max(0.0, (*covariance)(j, j)));
    }
    result.values = solution.values;
    for (ParamEstimate& e : result.params) e.value = at(result.values, e.param);
    const bool link = link_fitted(result) || at(result.values, Param::kLinkBusbw) > 0;
    double sum = 0;
    for (std::size_t i : observations_) {
      const Observation& o = fit_.config().observations[i];
      const double p = fit_.predict(o, result.values, link);
      result.predicted.push_back(p);
      sum += std::pow((p - o.measured()) / o.measured(), 2);
    }
    result.rms_relative_error = std::sqrt(sum / static_cast<double>(observations_.size()));
  }

 private:
  // Collectives are priced with the fitted link while it is being fitted (else the fallback).
  // An undetermined link keeps the value at which it made no difference, for the fit's own
  // observations; predictions that need it are refused (unpredictable).
  Residuals residuals_over(const std::vector<Param>& fitted) const {
    const bool fitting_link = contains(fitted, Param::kLinkBusbw);
    return [this, fitting_link](const ParamValues& v) {
      const bool link = fitting_link || at(v, Param::kLinkBusbw) > 0;
      Eigen::VectorXd r(static_cast<Eigen::Index>(observations_.size()));
      for (std::size_t i = 0; i < observations_.size(); ++i) {
        const Observation& o = fit_.config().observations[observations_[i]];
        r[static_cast<Eigen::Index>(i)] = std::log(fit_.predict(o, v, link) / o.measured());
      }
      return r;
    };
  }

  const DeviceFit& fit_;
  const std::vector<std::size_t>& observations_;
  bool named_;
};
}  // namespace

FitResult DeviceFit::fit(const std::vector<std::size_t>& observations, int threads, const Progress& progress) const {
  // Least squares over a simulator is not convex: a loader-bound and a compute-bound reading of
  // the same epochs are separate minima. Each start leans one way; the best fit that determines
  // the compute wins, and a different explanation that fits nearly as well is reported.
  std::vector<FitResult> fits(kStarts);
  run_tasks(
      kStarts, threads, [&](std::size_t start) { fits[start] = fit_from(observations, static_cast<int>(start)); },
      progress);
  const auto usable = [](const FitResult& f) { return f.estimate(Param::kEfficiency).status != ParamStatus::kUndetermined; };
  const FitResult* best = nullptr;
  for (const FitResult& f : fits) {
    if (usable(f) && (!best || f.rms_relative_error < best->rms_relative_error)) best = &f;
  }
  const SweepConfig& c = setup_.config;
  if (!best) {
    throw InputError(c.file, c.observations[observations.front()].line, "observations",
                     "the observations cannot determine the compute (every reading of them leaves it free, e.g. "
                     "loader-bound epochs): give observations where the GPU's work shows (larger batches, "
                     "iteration times, more loader workers)");
  }
  FitResult result = *best;
  for (const FitResult& other : fits) {
    if (&other == best || other.rms_relative_error > 1.1 * best->rms_relative_error + 0.005) continue;
    for (const ParamEstimate& e : best->params) {
      const ParamEstimate& o = other.estimate(e.param);
      const double a = e.value, b = o.value;
      // Both readings say something about the parameter, and they disagree.
      const auto told = [](ParamStatus st) { return st == ParamStatus::kFitted || st == ParamStatus::kAtZero; };
      const bool differs = (a > 0) != (b > 0) || (a > 0 && (a / b > 2 || b / a > 2));
      if (told(e.status) && told(o.status) && differs) {
        result.alternative = std::make_shared<const FitResult>(other);
        break;
      }
    }
    if (result.alternative) break;
  }
  return result;
}

FitResult DeviceFit::refit(const std::vector<std::size_t>& observations, const FitResult& near) const {
  return fit_from(observations, 0, &near);
}

FitResult DeviceFit::fit_from(const std::vector<std::size_t>& observations, int start, const FitResult* warm) const {
  const bool named = setup_.target.has_value();
  FitResult result;
  result.named_gpu = named;
  for (int k = 0; k < kParamCount; ++k) {
    ParamEstimate e;
    e.param = static_cast<Param>(k);
    const bool profile_fixed = setup_.measured && static_cast<std::size_t>(k) <= index(Param::kLoaderStartup);
    e.status = profile_fixed ? ParamStatus::kFromProfile : ParamStatus::kNotInPlay;
    result.params.push_back(e);
  }
  // Not in play: its absent value (0). The measured profile needs no efficiency: 1.
  ParamValues values{};
  at(values, Param::kEfficiency) = 1;
  std::vector<Param> free = in_play(observations);
  if (warm) {
    // Fewer observations determine no more than more did: a parameter `warm` found undetermined
    // or at zero keeps that status and its value; the ones it fitted start from their values.
    std::vector<Param> fitted;
    for (Param p : free) {
      const ParamEstimate& e = warm->estimate(p);
      if (e.status == ParamStatus::kFitted) {
        fitted.push_back(p);
      } else if (e.status == ParamStatus::kUndetermined || e.status == ParamStatus::kAtZero) {
        result.params[index(p)].status = e.status;
      }
      at(values, p) = e.value;
    }
    free = fitted;
  } else {
    for (Param p : free) at(values, p) = start_of(p, named, start);
  }
  const FitSteps steps(*this, observations, named);
  if (!setup_.measured && !warm) steps.start_efficiency(values, free);
  // Fit; take out what the observations cannot determine; settle the costs at their floors.
  Solution solution = steps.drop_undetermined(result, free, steps.solve(free, values, free));
  solution = steps.settle_floors(result, free, std::move(solution));
  steps.record(result, free, solution);
  return result;
}

ParamValues nudged(const FitResult& fit, std::size_t j) {
  ParamValues v = fit.values;
  at(v, fit.fitted.at(j)) *= std::exp(kSensitivityStep);
  return v;
}

Interval interval_around(const FitResult& fit, double value, const std::vector<double>& sensitivity) {
  const std::size_t m = fit.fitted.size();
  double variance = fit.noise_variance;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < m; ++j) variance += sensitivity[i] * fit.covariance[i * m + j] * sensitivity[j];
  }
  const double sd = std::sqrt(std::max(0.0, variance));
  return Interval{value, value * std::exp(-sd), value * std::exp(sd)};
}

Interval DeviceFit::interval_of(const FitResult& fit, const std::function<double(const ParamValues&)>& predict_with) {
  const double value = predict_with(fit.values);
  std::vector<double> g(fit.fitted.size(), 0.0);
  for (std::size_t j = 0; j < g.size(); ++j) g[j] = std::log(predict_with(nudged(fit, j)) / value) / kSensitivityStep;
  return interval_around(fit, value, g);
}

Interval DeviceFit::interval(const Observation& o, const FitResult& fit) const {
  const bool link = link_fitted(fit);
  return interval_of(fit, [&](const ParamValues& v) { return predict(o, v, link); });
}

Profile DeviceFit::target_profile(const FitResult& fit) const { return profile_for(setup_.target, fit.values); }

bool link_fitted(const FitResult& fit) {
  const ParamStatus s = fit.estimate(Param::kLinkBusbw).status;
  return s == ParamStatus::kFitted || s == ParamStatus::kAtZero;
}

RunSpec DeviceFit::spec_for(const RunSpec& spec, const FitResult& fit) const {
  ParamValues values = fit.values;
  if (!link_fitted(fit)) at(values, Param::kLinkBusbw) = 0;  // the fallback link, or none
  RunSpec out = run_spec_for(spec, values, link_fitted(fit));
  if (!link_fitted(fit) && out.gpus > 1 && !out.interconnect && !out.topology) out.interconnect = fallback_link();
  return out;
}

std::optional<std::string> DeviceFit::unpredictable(const RunSpec& spec, const FitResult& fit) const {
  if (spec.gpus < 2 || link_fitted(fit) || fallback_link() || setup_.config.topology) return std::nullopt;
  // A measured profile predicts for its own device from its measured collective curves.
  if (setup_.measured && (!setup_.target || !setup_.measured_gpu || setup_.target->key == setup_.measured_gpu->key)) {
    return std::nullopt;
  }
  return "needs the link between GPUs, which no observation on >= 2 GPUs determines (give one, an "
         "interconnect: block or a gpu: from the catalog)";
}

bool holdout_starts_warm(const FitResult& full, std::size_t observations) {
  std::size_t in_play = 0;
  for (const ParamEstimate& e : full.params) {
    if (e.status != ParamStatus::kNotInPlay && e.status != ParamStatus::kFromProfile) ++in_play;
  }
  return observations >= 1 + kWarmFoldObservationsPerParameter * in_play;
}

std::vector<HoldoutRow> holdout(const DeviceFit& fit, const FitResult& full, int threads,
                                const DeviceFit::Progress& progress) {
  const std::size_t n = fit.config().observations.size();
  std::vector<HoldoutRow> rows(n);
  const bool warm = holdout_starts_warm(full, n);
  const auto fold = [&](std::size_t i) {
    HoldoutRow& row = rows[i];
    row.observation = i;
    std::vector<std::size_t> others;
    for (std::size_t j = 0; j < n; ++j) {
      if (j != i) others.push_back(j);
    }
    try {
      if (others.empty()) throw std::invalid_argument("no other observation");
      const FitResult f = warm ? fit.refit(others, full) : fit.fit(others);
      const Observation& o = fit.observation(i);
      if (std::optional<std::string> why = fit.unpredictable(fit.observation_spec(o), f)) {
        row.why_not = *why;
      } else {
        row.predicted = fit.predict(o, f.values, link_fitted(f));
      }
    } catch (const InputError& e) {
      row.why_not = e.message();
    } catch (const std::invalid_argument& e) {
      row.why_not = e.what();
    }
  };
  run_tasks(n, threads, fold, progress);
  return rows;
}

std::vector<HoldoutRow> score_held_out(const DeviceFit& device, const FitResult& fit) {
  std::vector<HoldoutRow> rows;
  const std::vector<Observation>& cells = device.config().held_out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    HoldoutRow row;
    row.observation = i;
    if (std::optional<std::string> why = device.unpredictable(device.observation_spec(cells[i]), fit)) {
      row.why_not = *why;
    } else {
      row.interval = device.interval(cells[i], fit);
      row.predicted = row.interval->value;
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace trainsim::fit
