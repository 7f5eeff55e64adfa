// The host as a resource: the launch queue (host issue ahead of the device, max-like iterations)
// and DataParallel's host side (the GIL over the replicas' forward, the autograd threads'
// backward), on synthetic profiles (tests/sim_test_profiles.h: every figure SYNTHETIC).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sim_test_profiles.h"
#include "train/simulator.h"
#include "train/step_model.h"

namespace trainsim {
namespace {

const char* const kModel = "resnet18-cifar";
constexpr int kParts = 10 + 1 + 10 + 2;  // ResNet-18's 10 layers forward, loss, backward, optimizer, zero_grad

RunSpec spec(Strategy s, int gpus, int64_t batch) {
  RunSpec r;
  r.strategy = s;
  r.gpus = gpus;
  r.batch_per_gpu = batch;
  r.train_samples = 128 * gpus * 400;
  r.loader_workers = 2;
  return r;
}

// A loader and copies that never decide: what is left is host issue and device compute.
testing::SyntheticKnobs knobs(double host_issue_s, double fwd_per_sample_s) {
  testing::SyntheticKnobs k;
  k.loader_samples_per_s_per_worker = 1e9;
  k.h2d_latency_s = 0;
  k.h2d_bytes_per_s = 1e15;
  k.alpha_s = 0;
  k.busbw_bytes_per_s = 1e15;
  k.host_issue_s = host_issue_s;
  k.fwd_fixed_s = 0;
  k.fwd_per_sample_s = fwd_per_sample_s;
  k.loss_fixed_s = 1e-6;
  k.loss_per_sample_s = 0;
  k.zero_grad_s = 1e-6;
  k.optimizer_s = 1e-6;
  return k;
}

double simulated_iteration(const testing::SyntheticKnobs& k, Strategy s, int gpus, int64_t batch) {
  const SimResult r = simulate_run(testing::synthetic_profile(k), kModel, spec(s, gpus, batch), SimOptions{});
  EXPECT_TRUE(r.runnable) << r.not_runnable;
  return r.iteration_s;
}

TEST(LaunchQueue, TheCriticalPathIsMaxLikeNotSumLike) {
  train::StepTimes t;
  t.forward_s = {1, 1};
  t.backward_s = {1, 1};
  t.loss_s = 1;
  t.optimizer_s = 1;
  t.zero_grad_s = 1;
  EXPECT_DOUBLE_EQ(t.critical_path_s(), 7);  // no issue times: the sum
  t.host_forward_s = {3, 3};
  t.host_backward_s = {3, 3};
  t.host_loss_s = t.host_optimizer_s = t.host_zero_grad_s = 3;
  EXPECT_DOUBLE_EQ(t.critical_path_s(), 7 * 3 + 1);  // host-bound: every issue, then the last op
  for (double* h : {&t.host_forward_s[0], &t.host_forward_s[1], &t.host_backward_s[0], &t.host_backward_s[1],
                    &t.host_loss_s, &t.host_optimizer_s, &t.host_zero_grad_s}) {
    *h = 0.25;
  }
  EXPECT_DOUBLE_EQ(t.critical_path_s(), 0.25 + 7);  // device-bound: the first issue, then every op
}

TEST(LaunchQueue, TheLoopOverheadIsWhatTheLoopCostsBeyondTheCriticalPath) {
  testing::SyntheticKnobs k = knobs(50e-6, 1e-6);
  k.overhead_s = 1e-3;
  const Profile p = testing::synthetic_profile(k);
  const ModelProfile& m = p.models.at(kModel);
  const train::StepModel steps(m, train::fused_loop(m));
  // At a measured batch the loop is the critical path + 1 ms, whichever of host or device binds.
  for (int64_t b : {32, 2048}) EXPECT_NEAR(steps.at(b).overhead_s, 1e-3, 1e-12) << b;
  EXPECT_TRUE(steps.at(128).has_host_issue());
}

TEST(LaunchQueue, HostBoundAndDeviceBoundIterationsCostTheMaxOfHostAndDevice) {
  // Host-bound: 23 parts issued at 200 us each (4.6 ms); the device's work at batch 32 is about
  // 10 x 3 x 32 us + small parts (about 1 ms). The iteration is the host's, not host + device.
  const double host = kParts * 200e-6;
  const double host_bound = simulated_iteration(knobs(200e-6, 1e-6), Strategy::kDdp, 1, 32);
  EXPECT_GT(host_bound, host);
  EXPECT_LT(host_bound, host + 0.2e-3);  // + the last part's device time, the batch hand-over
  // Device-bound: 10 us per issue, 1 ms per sample-layer: the device's 30 x ... dominates.
  const testing::SyntheticKnobs dk = knobs(10e-6, 10e-6);
  const Profile p = testing::synthetic_profile(dk);
  const ModelProfile& m = p.models.at(kModel);
  const train::StepTimes parts = train::StepModel(m, train::fused_loop(m)).at(128);
  const double device = parts.layers_s() + parts.loss_s + parts.optimizer_s + parts.zero_grad_s;
  const double device_bound = simulated_iteration(dk, Strategy::kDdp, 1, 128);
  EXPECT_GT(device_bound, device);
  EXPECT_LT(device_bound, device + 2 * 10e-6 + 1e-6);  // + the first issue
  EXPECT_LT(device_bound, device + kParts * 10e-6);     // max-like, not the sum
}

TEST(DataParallelHost, TheGilSerialisesTheReplicasForwardIssueAndNotTheirBackward) {
  // Host-bound: every replica's forward is issued by one interpreter (10 layers x 200 us each),
  // each replica's backward by its own device's autograd thread, in parallel.
  const testing::SyntheticKnobs k = knobs(200e-6, 1e-6);
  const double one = simulated_iteration(k, Strategy::kDp, 1, 32);
  const double forward_issue = 10 * 200e-6;
  for (int n : {2, 4}) {
    const double many = simulated_iteration(k, Strategy::kDp, n, 32);
    // (n - 1) more forward issues on the one host thread; the backward's 2 ms not repeated.
    EXPECT_GT(many - one, (n - 1) * forward_issue * 0.95) << n;
    EXPECT_LT(many - one, (n - 1) * forward_issue + 1e-3) << n;
  }
  // DDP's ranks each have their own process: no such growth.
  EXPECT_NEAR(simulated_iteration(k, Strategy::kDdp, 4, 32), simulated_iteration(k, Strategy::kDdp, 1, 32), 1e-4);
}

TEST(DataParallelHost, DeviceBoundReplicasRunInParallel) {
  // 40 us per sample-layer: the device's forward + backward at 128 per GPU is about 150 ms, the
  // host's issue 23 x 10 us. N replicas take about one replica's time (copies are free here).
  const testing::SyntheticKnobs k = knobs(10e-6, 40e-6);
  const double one = simulated_iteration(k, Strategy::kDp, 1, 128);
  for (int n : {2, 4}) {
    const double many = simulated_iteration(k, Strategy::kDp, n, 128);
    EXPECT_GT(many, one * 0.99) << n;
    EXPECT_LT(many, one * 1.01 + n * 10 * 10e-6) << n;
  }
}

TEST(DataParallelHost, PeerCopiesTakeTheLinkNotTheHostToDeviceCurve) {
  // A slow link between GPUs (1 GB/s, no latency) and a fast host-to-device copy: the scatter
  // of each other replica's chunk from GPU 0 and the gather of its outputs pay the link.
  testing::SyntheticKnobs k = knobs(10e-6, 1e-6);
  k.busbw_bytes_per_s = 1e9;
  SimOptions o;
  o.trace_iterations = 1;
  const SimResult r = simulate_run(testing::synthetic_profile(k), kModel, spec(Strategy::kDp, 4, 1024), o);
  int scatters = 0, gathers = 0;
  for (const OpRecord& op : r.trace) {
    const double s = static_cast<double>(op.end_ns - op.start_ns) * 1e-9;
    if (op.name == "scatter input") {
      ++scatters;
      EXPECT_NEAR(s, 1024.0 * 3 * 32 * 32 * 4 / 1e9, 1e-8);  // one chunk of 1024 images
    } else if (op.name == "gather outputs") {
      ++gathers;
      EXPECT_NEAR(s, 1024.0 * 10 * 4 / 1e9, 1e-8);  // one replica's logits
    } else if (op.name == "h2d") {
      EXPECT_LT(s, 1e-3);  // the global batch to GPU 0 on the fast host-to-device curve
    }
  }
  EXPECT_EQ(scatters, 3);
  EXPECT_EQ(gathers, 3);
}

// The synthetic profile with a pytorch section whose loop is its parts exactly and whose loader
// never decides, and DataParallel's host mechanisms as Python would measure them: 100 calls into
// ATen per forward, 5 us of Python each, 11 us to hand the GIL over, 0.5 ms of replicate per
// replica (SYNTHETIC figures).
Profile with_dp_mechanisms(const testing::SyntheticKnobs& k, bool measured) {
  Profile p = testing::synthetic_profile(k);
  const ModelProfile& m = p.models.at(kModel);
  PytorchProfile py;
  py.torch = "synthetic";
  py.threads = 1;
  py.probe_s = 1;
  py.loader = p.loader;
  PytorchLoop loop;
  loop.batches = m.batches;
  loop.iteration_s = m.iteration_s;
  loop.ddp_iteration_s = m.iteration_s;
  if (measured) {
    loop.forward_calls = 100;
    loop.replicate_s = 0.5e-3;
    // 128 calls: 5 us alone, 16 us each with 2 threads at once.
    py.gil = GilProfile{{1, 2}, 64, {{"linear16", 16, 8, 128, {128 * 5e-6, 2 * 128 * 16e-6}}}};
  }
  py.models[kModel] = loop;
  p.pytorch = py;
  return p;
}

TEST(DataParallelHost, MeasuredGilAndReplicateCostTheReplicasPython) {
  // Host-bound (200 us per part): on N replicas the forward's 100 calls each hold the GIL 11 us
  // longer for the hand-over, the N - 1 replicas after the first also their 5 us of Python, and
  // replicate's module copies add 0.5 ms per replica, all on the one host thread.
  const testing::SyntheticKnobs k = knobs(200e-6, 1e-6);
  RunSpec r = spec(Strategy::kDp, 1, 32);
  r.trainer = Trainer::kPytorch;
  const SimResult one = simulate_run(with_dp_mechanisms(k, true), kModel, r, SimOptions{});
  const SimResult one_plain = simulate_run(with_dp_mechanisms(k, false), kModel, r, SimOptions{});
  EXPECT_NEAR(one.iteration_s, one_plain.iteration_s, 1e-9);  // one GPU: DataParallel just calls the module
  for (int n : {2, 4}) {
    r.gpus = n;
    r.train_samples = 128 * n * 400;
    const SimResult plain = simulate_run(with_dp_mechanisms(k, false), kModel, r, SimOptions{});
    const SimResult priced = simulate_run(with_dp_mechanisms(k, true), kModel, r, SimOptions{});
    ASSERT_TRUE(priced.runnable) << priced.not_runnable;
    const double added = n * 100 * 11e-6 + (n - 1) * 100 * 5e-6 + n * 0.5e-3;
    EXPECT_NEAR(priced.iteration_s - plain.iteration_s, added, 0.02 * added) << n;
    bool noted = false;
    for (const std::string& note : priced.notes) noted |= note.find("100 calls into ATen per replica's forward") != std::string::npos;
    EXPECT_TRUE(noted) << ::testing::PrintToString(priced.notes);
  }
}

}  // namespace
}  // namespace trainsim
