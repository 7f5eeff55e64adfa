// Whole epochs through simulate_run on synthetic profiles (tests/sim_test_profiles.h).

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "des/time.h"
#include "hw/collective_model.h"
#include "sim_test_profiles.h"
#include "train/buckets.h"
#include "train/ddp_graph.h"
#include "train/dp_graph.h"
#include "train/epoch_runner.h"
#include "train/graph_inputs.h"
#include "train/step_model.h"
#include "train/training_graph.h"
#include "train/simulator.h"

namespace trainsim {
namespace {

const char* const kModel = "resnet18-cifar";

RunSpec spec(Strategy s, int gpus, int64_t batch, int64_t samples = 50000, int workers = 2) {
  RunSpec r;
  r.strategy = s;
  r.gpus = gpus;
  r.batch_per_gpu = batch;
  r.train_samples = samples;
  r.loader_workers = workers;
  return r;
}

SimResult run(const Profile& p, const RunSpec& s, bool exact = false, int trace = 0) {
  SimOptions o;
  o.exact = exact;
  o.trace_iterations = trace;
  return simulate_run(p, kModel, s, o);
}

// A fast loader: 1e6 samples/s per worker, so compute decides (the synthetic default is 20k).
Profile fast_loader_profile() {
  testing::SyntheticKnobs k;
  k.loader_samples_per_s_per_worker = 1e6;
  return testing::synthetic_profile(k);
}

TEST(SimulateRun, IterationsCountThePartialLastBatch) {
  const Profile p = fast_loader_profile();
  // dp, 1 GPU, 128: ceil(50000 / 128) = 391 (390 full batches, the last one 80 samples).
  SimResult r = run(p, spec(Strategy::kDp, 1, 128));
  EXPECT_EQ(r.global_batch, 128);
  EXPECT_EQ(r.iterations, 391);
  // ddp, 4 GPUs, 128: each rank gets ceil(50000 / 4) = 12500 samples, ceil(12500 / 128) = 98
  // iterations (= ceil(50000 / 512)); global batch 512.
  r = run(p, spec(Strategy::kDdp, 4, 128));
  EXPECT_EQ(r.global_batch, 512);
  EXPECT_EQ(r.iterations, 98);
}

TEST(SimulateRun, ABatchLargerThanTheDatasetIsOneBatch) {
  const Profile p = fast_loader_profile();
  // dp, 4 GPUs x 8192 > 5000 samples: one iteration of the whole data set.
  SimResult r = run(p, spec(Strategy::kDp, 4, 8192, 5000));
  EXPECT_EQ(r.global_batch, 5000);
  EXPECT_EQ(r.iterations, 1);
  // ddp, 2 GPUs x 8192: each rank's 2500 samples in one batch.
  r = run(p, spec(Strategy::kDdp, 2, 8192, 5000));
  EXPECT_EQ(r.global_batch, 5000);
  EXPECT_EQ(r.iterations, 1);
  EXPECT_GT(r.epoch_s, 0);
}

TEST(SimulateRun, SlowLoaderMakesTheEpochLoaderBound) {
  testing::SyntheticKnobs k;
  k.loader_samples_per_s_per_worker = 1000;  // a worker needs 128 / 1000 = 0.128 s per batch
  const Profile slow = testing::synthetic_profile(k);
  const Profile fast = fast_loader_profile();
  const RunSpec s = spec(Strategy::kDp, 1, 128, /*samples=*/128 * 40, /*workers=*/2);
  const SimResult r = run(slow, s);
  const SimResult f = run(fast, s);
  ASSERT_EQ(r.iterations, 40);
  // Compute per iteration C is ~15 ms (10 layers of 3 x (20 us + 4 us x 128 x w) + loss +
  // optimizer + zero_grad + h2d), far below the loader's 0.128 s / 2 workers = 64 ms per batch:
  // the loader is the slower stage, so batches (hence iterations) come every 64 ms ...
  EXPECT_NEAR(r.iteration_s, 0.064, 1e-9);
  // ... the two workers deliver batches 2j and 2j+1 together at 0.128 (j+1) s, the last pair at
  // 20 x 0.128 = 2.56 s, and the epoch ends after the last two iterations' compute: 2.56 + 2C.
  const double compute_per_iteration = f.train_s / f.iterations;
  EXPECT_NEAR(r.epoch_s, 2.56 + 2 * compute_per_iteration, 1e-6);
  // The training loop itself is the same with either loader: train_s = iterations x C.
  EXPECT_NEAR(r.train_s, f.train_s, 1e-9);
  EXPECT_NEAR(r.loader_stall_s, r.epoch_s - r.train_s, 1e-12);
  EXPECT_GT(r.loader_stall_s, 0.5 * r.epoch_s);
}

TEST(SimulateRun, DdpExposesOnlyTheTailWhenCommunicationIsFasterThanBackward) {
  const Profile p = fast_loader_profile();  // busbw 100 GB/s, alpha 10 us
  const SimResult r = run(p, spec(Strategy::kDdp, 2, 128));
  // Each block's backward takes 2 x (20 + 4 x 128) us = 1.064 ms; bucket 1 (26.5 MB) all-reduces
  // in 2 x 10 us + 26.5e6 / 100e9 s = 0.285 ms while layer3.0 .. layer1.0 run backward, bucket 0
  // while layer4.0 does. What compute cannot hide: the buffer broadcast before forward (compute
  // waits for it) and the last bucket, launched after the stem's backward, the last compute op.
  const ModelProfile& m = p.models.at(kModel);
  double buffer_bytes = 0;
  for (const LayerProfile& l : m.layers) buffer_bytes += static_cast<double>(l.buffer_bytes);
  const hw::CollectiveModel coll(p.collectives, std::nullopt);
  const std::vector<train::GradientBucket> buckets = train::ddp_buckets(m);
  const des::SimTime tail =
      des::to_ns(coll.seconds(hw::CollectiveOp::kBroadcast, 2, buffer_bytes)) +
      des::to_ns(coll.seconds(hw::CollectiveOp::kAllReduce, 2,
                              static_cast<double>(buckets.back().bytes)));
  EXPECT_NEAR(r.exposed_comm_s, des::to_seconds(tail) * static_cast<double>(r.iterations), 1e-9);
  EXPECT_GT(r.comm_s, r.exposed_comm_s * 2);  // buckets 0 and 1 (35.9 MB of 44.7) are hidden
  // Bus bytes per rank and epoch: per iteration 2(n-1)/n x 44,695,848 (all-reduce, n = 2) + the
  // buffers' broadcast.
  EXPECT_NEAR(r.comm_bytes_per_rank, r.iterations * (44695848.0 + buffer_bytes), 1e-3);
}

TEST(SimulateRun, DataParallelNeverOverlapsCommunicationWithCompute) {
  const Profile p = fast_loader_profile();
  for (int gpus : {2, 4}) {
    const SimResult r = run(p, spec(Strategy::kDp, gpus, 128));
    EXPECT_GT(r.comm_s, 0);
    EXPECT_EQ(r.exposed_comm_s, r.comm_s) << gpus << " GPUs";
  }
}

// DataParallel over N GPUs: one iteration's ops and dependencies grow linearly in N (the output
// gradients' fan-in goes through one join, not N x N edges), so 4096 GPUs stay cheap.
std::pair<std::size_t, std::size_t> dp_iteration_size(int gpus) {
  const Profile p = testing::synthetic_profile();
  const ModelProfile& m = p.models.at("resnet18-cifar");
  const train::StepModel steps(m, train::fused_loop(m));
  const hw::CollectiveModel coll(p.collectives, std::nullopt);
  train::TrainingGraph graph;
  train::GraphInputs in{m, steps, coll, nullptr};
  in.gpus = gpus;
  in.batch_per_gpu = 8;
  in.train_samples = 1 << 20;
  in.workers = 0;
  in.inline_rate = 1e6;
  train::DpGraph dp(graph, in);
  dp.add_iteration(0);
  return {graph.ops.op_count(), graph.ops.edge_count()};
}

TEST(DpGraph, OneIterationGrowsLinearlyInTheGpus) {
  const auto [ops_small, edges_small] = dp_iteration_size(256);
  const auto [ops_large, edges_large] = dp_iteration_size(1024);
  // 4x the GPUs: about 4x the ops and edges (quadratic fan-in would be 16x the edges).
  EXPECT_LT(static_cast<double>(ops_large) / ops_small, 4.2);
  EXPECT_LT(static_cast<double>(edges_large) / edges_small, 4.2);
}

// DDP across nodes simulates one node's ranks: every rank runs the same iteration, so the epoch's
// timeline is the one all N ranks give (no host pool here: each rank's own streams and workers).
train::EpochTimeline ddp_epoch(int gpus, int simulated_ranks, std::size_t& ops) {
  const Profile p = testing::synthetic_profile();
  const ModelProfile& m = p.models.at("resnet18-cifar");
  const train::StepModel steps(m, train::fused_loop(m));
  const hw::CollectiveModel coll(p.collectives, std::nullopt);
  train::TrainingGraph graph;
  train::GraphInputs in{m, steps, coll, nullptr};
  in.gpus = gpus;
  in.simulated_ranks = simulated_ranks;
  in.batch_per_gpu = 16;
  in.train_samples = 4096;
  in.workers = 2;
  in.loader_rate_per_worker = 3000;
  train::DdpGraph ddp(graph, in);
  train::EpochTimeline t = train::run_epoch(graph, ddp, /*exact=*/true, 0);
  ops = graph.ops.op_count();
  return t;
}

TEST(DdpGraph, OneNodesRanksGiveTheTimelineOfAllRanks) {
  std::size_t all_ops = 0, node_ops = 0;
  const train::EpochTimeline all = ddp_epoch(16, 0, all_ops);
  const train::EpochTimeline node = ddp_epoch(16, 4, node_ops);
  ASSERT_EQ(all.simulated_iterations, 16);  // 4096 / 16 ranks / 16 per batch
  EXPECT_EQ(all.digest, node.digest);        // every iteration's end, loop end and batch-ready time
  EXPECT_EQ(all.epoch_end, node.epoch_end);
  EXPECT_EQ(all.loader_stall, node.loader_stall);
  EXPECT_LT(node_ops * 3, all_ops);  // a quarter of the ranks' ops, plus the shared collectives
}

// An exact epoch that retires its finished ops as it goes gives the same timeline and holds only
// the ops in flight: a few iterations' worth, however long the epoch.
TEST(DdpGraph, RetiringFinishedOpsKeepsTheTimelineAndBoundsTheOpsHeld) {
  const Profile p = testing::synthetic_profile();
  const ModelProfile& m = p.models.at("resnet18-cifar");
  const train::StepModel steps(m, train::fused_loop(m));
  const hw::CollectiveModel coll(p.collectives, std::nullopt);
  const auto epoch = [&](int64_t samples, bool retire, std::size_t& held, std::size_t& total, des::OpId& retired) {
    train::TrainingGraph graph;
    train::GraphInputs in{m, steps, coll, nullptr};
    in.gpus = 2;
    in.batch_per_gpu = 16;
    in.train_samples = samples;
    in.workers = 2;
    in.loader_rate_per_worker = 3000;
    train::DdpGraph ddp(graph, in);
    retired = 0;
    train::RetireOps take;
    if (retire) {
      take = [&](des::OpId first, des::OpId last) {
        EXPECT_EQ(first, retired);  // a prefix at a time, in order, none twice
        for (des::OpId id = first; id < last; ++id) EXPECT_TRUE(graph.ops.done(id));
        retired = last;
      };
    }
    train::EpochTimeline t = train::run_epoch(graph, ddp, /*exact=*/true, 0, take);
    held = graph.ops.held_ops();
    total = graph.ops.op_count();
    return t;
  };
  std::size_t held = 0, total = 0, held_long = 0, total_long = 0, unused = 0;
  des::OpId retired = 0, retired_long = 0;
  const train::EpochTimeline plain = epoch(32768, false, unused, unused, retired);
  const train::EpochTimeline retiring = epoch(32768, true, held, total, retired);
  EXPECT_EQ(plain.digest, retiring.digest);
  EXPECT_EQ(plain.epoch_end, retiring.epoch_end);
  EXPECT_EQ(plain.loader_stall, retiring.loader_stall);
  EXPECT_GT(retired, total / 2);
  epoch(8 * 32768, true, held_long, total_long, retired_long);
  EXPECT_GT(total_long, 7 * total);
  // What is held at the end is at most kRetireEvery iterations and a few in flight.
  EXPECT_LT(held_long, total / 1024 * 2 * (train::kRetireEvery + 4));
  EXPECT_LE(held_long, 2 * held + 16);  // 8x the epoch, about the same held
}

TEST(SimulateRun, OneGpuHasNoCommunication) {
  const Profile p = fast_loader_profile();
  for (Strategy s : {Strategy::kDp, Strategy::kDdp}) {
    const SimResult r = run(p, spec(s, 1, 128));
    EXPECT_EQ(r.comm_s, 0);
    EXPECT_EQ(r.comm_bytes_per_rank, 0);
  }
}

void expect_identical(const SimResult& a, const SimResult& b) {
  EXPECT_EQ(a.global_batch, b.global_batch);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.fits, b.fits);
  EXPECT_EQ(a.peak_mem_bytes, b.peak_mem_bytes);
  EXPECT_EQ(a.epoch_s, b.epoch_s);
  EXPECT_EQ(a.train_s, b.train_s);
  EXPECT_EQ(a.compute_s, b.compute_s);
  EXPECT_EQ(a.comm_s, b.comm_s);
  EXPECT_EQ(a.exposed_comm_s, b.exposed_comm_s);
  EXPECT_EQ(a.loader_stall_s, b.loader_stall_s);
  EXPECT_EQ(a.iteration_s, b.iteration_s);
  EXPECT_EQ(a.comm_bytes_per_rank, b.comm_bytes_per_rank);
  EXPECT_EQ(a.busbw_gbs, b.busbw_gbs);
  EXPECT_EQ(a.extrapolated, b.extrapolated);
  EXPECT_EQ(a.simulated_iterations, b.simulated_iterations);
  EXPECT_EQ(a.notes, b.notes);
  ASSERT_EQ(a.trace.size(), b.trace.size());
  for (std::size_t i = 0; i < a.trace.size(); ++i) {
    EXPECT_EQ(a.trace[i].resource, b.trace[i].resource);
    EXPECT_EQ(a.trace[i].name, b.trace[i].name);
    EXPECT_EQ(a.trace[i].start_ns, b.trace[i].start_ns);
    EXPECT_EQ(a.trace[i].end_ns, b.trace[i].end_ns);
  }
}

TEST(SimulateRun, SameInputGivesBitIdenticalResults) {
  const Profile p = testing::synthetic_profile();
  for (Strategy s : {Strategy::kDp, Strategy::kDdp}) {
    const RunSpec rs = spec(s, 4, 128);
    expect_identical(run(p, rs, false, 2), run(p, rs, false, 2));
  }
}

struct Scenario {
  const char* what;
  Profile profile;
  RunSpec spec;
};

TEST(SimulateRun, ExtrapolatedSteadyStateAgreesWithExactSimulation) {
  testing::SyntheticKnobs slow;
  slow.loader_samples_per_s_per_worker = 3000;  // loader-bound at batch 128 with 2 workers
  testing::SyntheticKnobs cpu;
  cpu.device_kind = "cpu";
  cpu.overhead_s = 2e-3;
  const Profile fast = fast_loader_profile();
  const std::vector<Scenario> scenarios = {
      {"dp 1 GPU, 32, partial last batch", fast, spec(Strategy::kDp, 1, 32)},
      {"ddp 4 GPUs, 128, partial last batch", fast, spec(Strategy::kDdp, 4, 128)},
      {"dp 4 GPUs, 128", fast, spec(Strategy::kDp, 4, 128)},
      {"dp 2 GPUs, 512, last batch on fewer replicas", fast, spec(Strategy::kDp, 2, 512, 50001)},
      {"loader-bound dp 1 GPU", testing::synthetic_profile(slow), spec(Strategy::kDp, 1, 128)},
      {"loader-bound ddp 2 GPUs, 3 workers", testing::synthetic_profile(slow),
       spec(Strategy::kDdp, 2, 128, 50000, 3)},
      {"inline loading ddp 2 GPUs", fast, spec(Strategy::kDdp, 2, 64, 50000, 0)},
      {"cpu profile with overhead, ddp 2", testing::synthetic_profile(cpu),
       spec(Strategy::kDdp, 2, 32)},
      {"batch > dataset", fast, spec(Strategy::kDp, 4, 8192, 20000)},
  };
  int extrapolated = 0;
  for (const Scenario& sc : scenarios) {
    const SimResult x = run(sc.profile, sc.spec, /*exact=*/false);
    const SimResult e = run(sc.profile, sc.spec, /*exact=*/true);
    EXPECT_EQ(e.simulated_iterations, e.iterations) << sc.what;
    extrapolated += x.extrapolated ? 1 : 0;
    const auto agree = [&](double a, double b, const char* field) {
      EXPECT_LE(std::abs(a - b), 1e-3 * std::abs(b) + 1e-12) << sc.what << ": " << field;
    };
    agree(x.epoch_s, e.epoch_s, "epoch_s");
    agree(x.train_s, e.train_s, "train_s");
    agree(x.compute_s, e.compute_s, "compute_s");
    agree(x.comm_s, e.comm_s, "comm_s");
    agree(x.exposed_comm_s, e.exposed_comm_s, "exposed_comm_s");
    agree(x.loader_stall_s, e.loader_stall_s, "loader_stall_s");
    agree(x.comm_bytes_per_rank, e.comm_bytes_per_rank, "comm_bytes_per_rank");
    agree(x.iteration_s, e.iteration_s, "iteration_s");
  }
  // All but the one-iteration scenario are long enough to extrapolate.
  EXPECT_EQ(extrapolated, static_cast<int>(scenarios.size()) - 1);
}

TEST(SimulateRun, PredictsTheOutOfMemoryBoundary) {
  // peak(b) = static + 100 MB + 2 MB x b, static = 3 x 44,695,848 + buffers (20 BatchNorms over
  // 4,800 channels: 2 x 4 x 4,800 + 20 x 8 = 38,560 B) = 134,126,104 B. On 16e9 B:
  // b <= (16e9 - 100e6 - 134,126,104) / 2e6 = 7882.9, so 7882 fits and 7883 does not.
  const Profile p = fast_loader_profile();
  EXPECT_TRUE(run(p, spec(Strategy::kDp, 1, 7882, 20000)).fits);
  EXPECT_FALSE(run(p, spec(Strategy::kDp, 1, 7883, 20000)).fits);
  // A measured out-of-memory batch is a hard boundary.
  testing::SyntheticKnobs k;
  k.oom_batch = 4096;
  const Profile o = testing::synthetic_profile(k);
  EXPECT_TRUE(run(o, spec(Strategy::kDdp, 2, 4095, 20000)).fits);
  const SimResult no = run(o, spec(Strategy::kDdp, 2, 4096, 20000));
  EXPECT_FALSE(no.fits);
  EXPECT_GT(no.epoch_s, 0);  // times are still predicted
  // DataParallel's GPU 0 also holds the gathered outputs (global x 10 x 4 B) and the reduced
  // gradients (44,695,848 B): at 4 x 7882 it no longer fits (7882 did on one GPU with 4.7 MB of
  // headroom; this adds 1.26 MB + 44.7 MB).
  EXPECT_FALSE(run(p, spec(Strategy::kDp, 4, 7882, 40000)).fits);
}

TEST(SimulateRun, CpuRanksShareHostMemory) {
  testing::SyntheticKnobs k;
  k.device_kind = "cpu";
  const Profile p = testing::synthetic_profile(k);
  const SimResult one = run(p, spec(Strategy::kDdp, 1, 128));
  const SimResult four = run(p, spec(Strategy::kDdp, 4, 128));
  EXPECT_DOUBLE_EQ(four.peak_mem_bytes, 4 * one.peak_mem_bytes);
}

TEST(SimulateRun, TraceNamesResourcesLayersAndBuckets) {
  const SimResult r = run(fast_loader_profile(), spec(Strategy::kDdp, 2, 128), false, 2);
  bool fwd = false, bucket = false, worker = false, h2d = false;
  for (const OpRecord& op : r.trace) {
    EXPECT_LT(op.iteration, 2);
    EXPECT_LT(op.start_ns, op.end_ns);
    fwd |= op.resource == "gpu0.compute" && op.name == "fwd layer2.0" && op.category == "compute";
    bucket |= op.resource == "gpu1.comm" && op.name == "allreduce bucket 1 (25.3 MiB)";
    worker |= op.resource == "gpu0.loader.worker1" && op.category == "loader";
    h2d |= op.resource == "gpu0.copy" && op.name == "h2d";
  }
  EXPECT_TRUE(fwd && bucket && worker && h2d);
}

TEST(SimulateRun, MissingModelOrBadSpecIsAnError) {
  const Profile p = fast_loader_profile();
  EXPECT_THROW(simulate_run(p, "resnet50", spec(Strategy::kDdp, 1, 128)), std::invalid_argument);
  EXPECT_THROW(run(p, spec(Strategy::kDdp, 0, 128)), std::invalid_argument);
  EXPECT_THROW(run(p, spec(Strategy::kDdp, 1, 0)), std::invalid_argument);
  // 8 ranks: no curve, but the 2- and 4-rank curves are fitted; with no curves at all and no
  // assumed interconnect, the run cannot be priced.
  testing::SyntheticKnobs k;
  k.collective_ranks = {};
  EXPECT_THROW(run(testing::synthetic_profile(k), spec(Strategy::kDdp, 2, 128)),
               std::invalid_argument);
  const SimResult eight = run(p, spec(Strategy::kDdp, 8, 128));
  bool noted = false;
  for (const std::string& n : eight.notes) noted |= n.find("ring fit from 4-rank curve") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace trainsim
