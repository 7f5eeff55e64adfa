// What the simulator takes from the measured pipeline (docs/SIMULATOR.md "The loop", "Host cores",
// "Loader"): the host's cores shared by processor sharing, whose loop and loader (trainer), worker
// start-up, the reducer's recorded buckets, not-runnable cells, the H2D curve, the test pass.
// Every profile here is SYNTHETIC (tests/sim_test_profiles.h).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "io/gpu_catalog.h"
#include "io/topology.h"
#include "sim_test_profiles.h"
#include "train/buckets.h"
#include "train/simulator.h"
#include "train/step_model.h"

namespace trainsim {
namespace {

const char* const kModel = "resnet18-cifar";

bool has_note(const SimResult& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// A 2-core CPU host, one intra-op thread per rank, a loader fast enough not to matter.
testing::SyntheticKnobs cpu_knobs() {
  testing::SyntheticKnobs k;
  k.device_kind = "cpu";
  k.cpu_cores = 2;
  k.threads = 1;
  k.loader_samples_per_s_per_worker = 1e7;
  return k;
}

RunSpec ddp_spec(int ranks, int64_t batch, int workers = 0, int64_t samples = 16384) {
  RunSpec s;
  s.strategy = Strategy::kDdp;
  s.gpus = ranks;
  s.batch_per_gpu = batch;
  s.train_samples = samples;
  s.loader_workers = workers;
  s.trainer = Trainer::kTrainsim;
  return s;
}

TEST(HostCores, CpuRanksNeverBeatTheCores) {
  // N ranks on 2 cores: the speedup T(1,b)/T(N,b) can never exceed min(N, 2), whatever N, batch
  // or loader workers (the cores are time-shared; each rank still has all of its work to do).
  const Profile p = testing::synthetic_profile(cpu_knobs());
  for (int workers : {0, 1, 2}) {
    for (int64_t batch : {32, 128, 512}) {
      const double t1 = simulate_run(p, kModel, ddp_spec(1, batch, workers)).epoch_s;
      for (int n : {2, 3, 4, 8}) {
        const SimResult r = simulate_run(p, kModel, ddp_spec(n, batch, workers));
        EXPECT_LE(t1 / r.epoch_s, std::min(n, 2) * (1 + 1e-9))
            << n << " ranks, batch " << batch << ", " << workers << " workers";
        if (n > 2) {
          EXPECT_TRUE(has_note(r, "are time-shared")) << ::testing::PrintToString(r.notes);
        }
      }
    }
  }
}

TEST(HostCores, CpuRanksNeverBeatTheCoresWhateverTheContentionMeasurementSays) {
  // A measured contention below 1 (two processes each "faster" than one alone: noise) must not
  // lift the speedup above the cores.
  Profile p = testing::synthetic_profile(cpu_knobs());
  p.models.at(kModel).host_contention = {{1, 32, 1.0}, {2, 32, 0.95}};
  for (int64_t batch : {32, 512, 2048}) {
    const double t1 = simulate_run(p, kModel, ddp_spec(1, batch)).epoch_s;
    EXPECT_LE(t1 / simulate_run(p, kModel, ddp_spec(2, batch)).epoch_s, 2 * (1 + 1e-9)) << batch;
  }
}

TEST(HostCores, GlooCollectivesTakeTheirCoresFromCompute) {
  // 2 ranks x 1 thread on 2 cores: each rank's core is always busy with its compute or its
  // Gloo all-reduce (the optimizer waits for the last bucket), so an iteration costs the work of
  // both: compute + communication. Without a core count nothing is shared and the all-reduces
  // hide behind backward except the last bucket.
  testing::SyntheticKnobs k = cpu_knobs();
  k.busbw_bytes_per_s = 5e9;  // all-reduces of 44.7 MB in all: ~9 ms per iteration, compute ~14 ms
  const Profile shared = testing::synthetic_profile(k);
  k.cpu_cores = 0;
  const Profile unshared = testing::synthetic_profile(k);
  const RunSpec spec = ddp_spec(2, 128);
  const SimResult a = simulate_run(shared, kModel, spec);
  const SimResult b = simulate_run(unshared, kModel, spec);
  // The work per iteration: the step's parts (no loop excess: iteration_s = parts) plus every
  // collective of the iteration (the comm stream's busy time when nothing is shared).
  const ModelProfile& m = shared.models.at(kModel);
  const train::StepModel steps(m, train::fused_loop(m));
  const train::StepTimes t = steps.at(128);
  const double compute = t.layers_s() + t.loss_s + t.zero_grad_s + t.optimizer_s;
  const double comm = b.comm_s / static_cast<double>(b.iterations);
  EXPECT_NEAR(a.iteration_s, compute + comm, 1e-3 * (compute + comm));
  EXPECT_LT(b.iteration_s, compute + 0.5 * comm);
  EXPECT_TRUE(has_note(a, "collectives (Gloo) and loader workers run on the same cores")) << ::testing::PrintToString(a.notes);
}

TEST(HostCores, GpuRanksKeepTheirComputeOffTheHostCores) {
  testing::SyntheticKnobs k;
  k.cpu_cores = 1;  // one host core for 4 GPU ranks: only host-side work shares it
  k.loader_samples_per_s_per_worker = 1e7;
  const Profile one_core = testing::synthetic_profile(k);
  k.cpu_cores = 0;
  const Profile unknown = testing::synthetic_profile(k);
  RunSpec spec = ddp_spec(4, 128);
  spec.loader_workers = 0;
  // No loop overhead, inline loading at 1e7 samples/s: the host work per iteration is ~13 us.
  const double with_pool = simulate_run(one_core, kModel, spec).epoch_s;
  const double without = simulate_run(unknown, kModel, spec).epoch_s;
  EXPECT_NEAR(with_pool / without, 1.0, 0.01);
}

TEST(HostCores, ATopologysNodeSharesItsOwnCores) {
  // 4 GPU ranks x 4 loader workers on one node: on 4 cores the 16 workers get a quarter core each
  // and the loader sets the pace; on 64 they each have one (compute-bound, ~14 ms an iteration
  // against 6.4 ms of loading). Without the topology's count the profiled machine's 16 stand in,
  // said as assumed; within the profiled machine's own GPUs nothing is assumed.
  testing::SyntheticKnobs k;
  k.cpu_cores = 16;
  k.loader_samples_per_s_per_worker = 5000;
  const Profile p = testing::synthetic_profile(k);
  const GpuCatalog catalog = load_gpu_catalog(std::string(TRAINSIM_SOURCE_DIR) + "/configs/gpus.yaml");
  Topology node;
  node.gpu = *catalog.find("h100-sxm");
  node.gpus_per_node = 4;
  node.fabric = Fabric::kNvswitch;
  RunSpec spec = ddp_spec(4, 128, /*workers=*/4);
  spec.topology = node;
  spec.topology->cpu_cores = 4;
  const SimResult few = simulate_run(p, kModel, spec);
  spec.topology->cpu_cores = 64;
  const SimResult many = simulate_run(p, kModel, spec);
  EXPECT_GT(few.epoch_s, 1.5 * many.epoch_s) << few.epoch_s << " vs " << many.epoch_s;
  EXPECT_GT(few.loader_stall_s, 0.3 * few.epoch_s) << few.loader_stall_s << " of " << few.epoch_s;
  // With a core each the workers wait only for the first batch (128 samples at 5000/s).
  EXPECT_NEAR(many.loader_stall_s, 128 / 5000.0, 1e-3) << many.loader_stall_s << " of " << many.epoch_s;
  EXPECT_FALSE(has_note(many, "host cores: assumed")) << ::testing::PrintToString(many.notes);

  spec.topology->cpu_cores = 0;
  const SimResult assumed = simulate_run(p, kModel, spec);
  EXPECT_TRUE(has_note(assumed, "host cores: assumed the profiled machine's 16 logical CPUs per node"))
      << ::testing::PrintToString(assumed.notes);
  spec.topology.reset();
  EXPECT_FALSE(has_note(simulate_run(p, kModel, spec), "host cores: assumed"));
  spec.gpus = 8;  // more GPUs than the profiled machine's 4, on no topology
  EXPECT_TRUE(has_note(simulate_run(p, kModel, spec),
                       "host cores: assumed the profiled machine's 16 logical CPUs for 8 GPUs (it has 4"));
}

TEST(IdenticalRanks, OneSimulatedRankStandsForTheNodesRanks) {
  // A node's DDP ranks are identical: one simulated with its share of the cores predicts what
  // simulating every rank (as a trace does, to show each) predicts, GPU and CPU ranks alike,
  // with the cores shared or not.
  testing::SyntheticKnobs gpu;
  gpu.cpu_cores = 16;
  gpu.loader_samples_per_s_per_worker = 20000;
  testing::SyntheticKnobs cpu = cpu_knobs();
  cpu.loader_samples_per_s_per_worker = 20000;
  for (const testing::SyntheticKnobs& k : {gpu, cpu}) {
    const Profile p = testing::synthetic_profile(k);
    for (int ranks : {2, 4, 8}) {
      for (int64_t batch : {32, 512}) {
        for (int workers : {0, 2}) {
          const RunSpec spec = ddp_spec(ranks, batch, workers);
          SimOptions every_rank;
          every_rank.trace_iterations = 1;
          const SimResult one = simulate_run(p, kModel, spec);
          const SimResult all = simulate_run(p, kModel, spec, every_rank);
          const std::string cell = k.device_kind + " " + std::to_string(ranks) + " ranks, batch " +
                                   std::to_string(batch) + ", " + std::to_string(workers) + " workers";
          EXPECT_NEAR(one.epoch_s, all.epoch_s, 1e-6 * all.epoch_s) << cell;
          EXPECT_NEAR(one.comm_s, all.comm_s, 1e-6 * all.epoch_s) << cell;
          EXPECT_NEAR(one.loader_stall_s, all.loader_stall_s, 1e-6 * all.epoch_s) << cell;
          EXPECT_EQ(one.notes, all.notes) << cell;
          EXPECT_FALSE(all.trace.empty()) << cell;
        }
      }
    }
  }
}

TEST(PageFaults, ATimingSpentInPageFaultsIsNoted) {
  // The profile's faults at its measured batches (32, 128, 512, 2048) and their cost: a note where
  // the nearest measured batch spent a tenth or more of its fused iteration in them, none elsewhere.
  Profile p = testing::synthetic_profile(cpu_knobs());
  ModelProfile& m = p.models.at(kModel);
  p.machine.page_fault_s = 8e-6;
  m.minor_faults.clear();
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    // 5% of the timing at 32 and 128, 40% at 512 and 2048.
    const double share = m.batches[i] >= 512 ? 0.4 : 0.05;
    m.minor_faults.push_back(share * m.iteration_s[i] / p.machine.page_fault_s);
  }
  const SimResult faulty = simulate_run(p, kModel, ddp_spec(1, 512));
  EXPECT_TRUE(has_note(faulty, "page faults: about 40% of the profile's fused iteration at batch 512"))
      << ::testing::PrintToString(faulty.notes);
  EXPECT_TRUE(has_note(simulate_run(p, kModel, ddp_spec(1, 400)), "at batch 512"));  // nearer 512 than 128
  EXPECT_FALSE(has_note(simulate_run(p, kModel, ddp_spec(1, 128)), "page faults"));
  // The pytorch trainer's loop comes from the profile's pytorch section: its own faults count.
  PytorchLoop loop{m.batches, m.iteration_s, m.iteration_s, std::nullopt, std::nullopt, std::nullopt, std::nullopt, {}};
  for (std::size_t i = 0; i < m.batches.size(); ++i) loop.minor_faults.push_back(0.2 * m.iteration_s[i] / 8e-6);
  p.pytorch = PytorchProfile{};
  p.pytorch->loader = p.loader;
  p.pytorch->models[kModel] = loop;
  RunSpec pytorch = ddp_spec(1, 128);
  pytorch.trainer = Trainer::kPytorch;
  EXPECT_TRUE(has_note(simulate_run(p, kModel, pytorch),
                       "page faults: about 20% of PyTorch's loop body in the profile at batch 128"));
  p.machine.page_fault_s = 0;  // the cost not measured: nothing to say
  EXPECT_FALSE(has_note(simulate_run(p, kModel, ddp_spec(1, 512)), "page faults"));
  EXPECT_FALSE(has_note(simulate_run(p, kModel, pytorch), "page faults"));
}

TEST(Loader, NonPersistentWorkersStartEveryEpoch) {
  testing::SyntheticKnobs k = cpu_knobs();
  k.cpu_cores = 16;
  Profile p = testing::synthetic_profile(k);
  for (LoaderPoint& point : p.loader.points) point.startup_s = point.workers > 0 ? 0.08 : 0.0;
  RunSpec spec = ddp_spec(1, 128, /*workers=*/2);
  spec.persistent_workers = true;
  const SimResult persistent = simulate_run(p, kModel, spec);
  spec.persistent_workers = false;
  const SimResult fresh = simulate_run(p, kModel, spec);
  // The first batch waits for the start-up; compute-bound afterwards, so the whole 80 ms shows.
  EXPECT_NEAR(fresh.epoch_s - persistent.epoch_s, 0.08, 1e-6);
  EXPECT_NEAR(fresh.loader_stall_s - persistent.loader_stall_s, 0.08, 1e-6);
  EXPECT_TRUE(has_note(fresh, "workers start 80.0 ms into every epoch")) << ::testing::PrintToString(fresh.notes);
  EXPECT_TRUE(has_note(persistent, "persistent workers")) << ::testing::PrintToString(persistent.notes);
  // Not measured: said, and none simulated.
  for (LoaderPoint& point : p.loader.points) point.startup_s.reset();
  const SimResult unknown = simulate_run(p, kModel, spec);
  EXPECT_NEAR(unknown.epoch_s, persistent.epoch_s, 1e-9);
  EXPECT_TRUE(has_note(unknown, "worker start-up not measured")) << ::testing::PrintToString(unknown.notes);
}

TEST(Trainer, PytorchUsesThePythonLoopAndDataLoader) {
  Profile p = testing::synthetic_profile(cpu_knobs());
  const ModelProfile& m = p.models.at(kModel);
  RunSpec spec = ddp_spec(1, 128, /*workers=*/0, /*samples=*/4096);
  spec.trainer = Trainer::kPytorch;
  // No pytorch section: the C++ pipeline stands in, and the notes say so.
  const SimResult standin = simulate_run(p, kModel, spec);
  EXPECT_TRUE(has_note(standin, "the C++ trainer's loop and loader stand in")) << ::testing::PrintToString(standin.notes);

  // Python's loop costs 20 ms more per iteration than the parts; its DataLoader loads 1000
  // samples/s inline: 128 / 1000 = 128 ms per batch.
  PytorchProfile py;
  py.torch = "test";
  py.threads = 1;
  py.probe_s = 1;
  py.loader.data = "synthetic";
  py.loader.batch = 128;
  py.loader.points = {{0, 1000, 0.0}};
  PytorchLoop loop;
  loop.batches = m.batches;
  loop.iteration_s = m.iteration_s;
  for (double s : m.iteration_s) loop.ddp_iteration_s.push_back(s + 0.020);
  py.models[kModel] = loop;
  p.pytorch = py;
  const SimResult pytorch = simulate_run(p, kModel, spec);
  spec.trainer = Trainer::kTrainsim;
  const SimResult trainsim = simulate_run(p, kModel, spec);
  // 32 iterations, each 20 ms of loop and 128 ms - 12.8 us of loading more than the C++ pipeline
  // (its inline loader: 1e7 samples/s, 12.8 us per batch).
  EXPECT_NEAR(pytorch.epoch_s - trainsim.epoch_s, 32 * (0.020 + 0.128 - 12.8e-6), 1e-6);
  EXPECT_TRUE(has_note(pytorch, "PyTorch's DDP loop on 1 rank minus its timed parts")) << ::testing::PrintToString(pytorch.notes);

  // A model Python did not time keeps PyTorch's DataLoader (the trainer's, not the model's): the
  // C++ loop stands in for a model measured by measure, and a traced model's loop is its traced
  // step (its iteration_s, the user's own PyTorch loop).
  p.pytorch->models.clear();
  spec.trainer = Trainer::kPytorch;
  const SimResult other = simulate_run(p, kModel, spec);
  EXPECT_NEAR(other.epoch_s - trainsim.epoch_s, 32 * (0.128 - 12.8e-6), 1e-6);
  EXPECT_TRUE(has_note(other, "PyTorch's DataLoader with the C++ trainer's loop standing in")) << ::testing::PrintToString(other.notes);
  p.models.at(kModel).source = "trace:step.json";
  const SimResult traced = simulate_run(p, kModel, spec);
  EXPECT_TRUE(has_note(traced, "its traced step")) << ::testing::PrintToString(traced.notes);
  EXPECT_NEAR(traced.epoch_s, other.epoch_s, 1e-6);  // no ddp_iteration_s: the same loop either way
}

// A pytorch section whose loop is the synthetic parts exactly (no excess) and whose DataLoader
// builds 1e6 samples/s per worker, with the worker start-up costs given.
PytorchProfile python_pipeline(const ModelProfile& m, std::optional<ForkCost> fork) {
  PytorchProfile py;
  py.torch = "test";
  py.threads = 1;
  py.probe_s = 1;
  py.loader.data = "synthetic";
  py.loader.batch = 128;
  py.loader.points = {{0, 1e6, 0.0}, {1, 1e6, 0.0}, {2, 2e6, 0.0}};
  PytorchLoop loop;
  loop.batches = m.batches;
  loop.iteration_s = m.iteration_s;
  loop.ddp_iteration_s = m.iteration_s;
  loop.fork = std::move(fork);
  py.models[kModel] = loop;
  return py;
}

TEST(Loader, PytorchWorkersStartedEveryEpochCostTheTrainingProcess) {
  testing::SyntheticKnobs k = cpu_knobs();
  Profile p = testing::synthetic_profile(k);
  const ModelProfile& m = p.models.at(kModel);
  // Measured at batches 32..2048 (flat here): fork 20 ms, first batch 60 ms, copy-on-write
  // 150 ms with one process; 30 ms, 80 ms and 400 ms with two at once.
  const auto flat = [&](double v) { return std::vector<double>(m.batches.size(), v); };
  ForkCost fork{1, {{1, flat(0.020), flat(0.060), flat(0.150)}, {2, flat(0.030), flat(0.080), flat(0.400)}}};
  p.pytorch = python_pipeline(m, fork);
  RunSpec spec = ddp_spec(1, 128, /*workers=*/1, /*samples=*/4096);
  spec.trainer = Trainer::kPytorch;
  spec.persistent_workers = true;
  const SimResult persistent = simulate_run(p, kModel, spec);
  spec.persistent_workers = false;
  const SimResult fresh = simulate_run(p, kModel, spec);
  // One process: the fork (20 ms), then the first batch: start-up 60 ms - 128 / 1e6 s of
  // building (the persistent run builds its first batch too), then the first iteration's 150 ms.
  EXPECT_NEAR(fresh.epoch_s - persistent.epoch_s, 0.020 + (0.060 - 128e-6) + 0.150, 1e-6);
  EXPECT_TRUE(has_note(fresh, "every epoch starts its workers: fork 20.0 ms, worker start-up 59.9 ms, "
                              "copy-on-write in the first iteration 150.0 ms"))
      << ::testing::PrintToString(fresh.notes);
  // Two ranks on 2 cores: the two-process figures, each rank on its own core.
  spec.gpus = 2;
  const SimResult two = simulate_run(p, kModel, spec);
  spec.persistent_workers = true;
  const SimResult two_persistent = simulate_run(p, kModel, spec);
  EXPECT_NEAR(two.epoch_s - two_persistent.epoch_s, 0.030 + (0.080 - 128e-6) + 0.400, 1e-3);
  // Four ranks: held at the two-process figures, with a note.
  spec.gpus = 4;
  spec.persistent_workers = false;
  EXPECT_TRUE(has_note(simulate_run(p, kModel, spec), "measured with up to 2 processes at once; 4 use that"));
  // measure train's threads fork nothing.
  spec.gpus = 1;
  spec.trainer = Trainer::kTrainsim;
  EXPECT_FALSE(has_note(simulate_run(p, kModel, spec), "copy-on-write"));
}

TEST(Buckets, TheReducersRecordedBucketsAreUsed) {
  testing::SyntheticKnobs k;
  Profile p = testing::synthetic_profile(k);
  ModelProfile& m = p.models.at(kModel);
  // DDP's first-iteration assignment: one bucket of all 62 tensors, 44,695,848 bytes.
  DdpBucket all;
  for (int i = 0; i < 62; ++i) all.params.push_back(61 - i);
  all.bytes = m.param_bytes();
  m.ddp_buckets = {all};
  const std::vector<train::GradientBucket> buckets = train::recorded_ddp_buckets(m);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].bytes, 44695848);
  EXPECT_EQ(buckets[0].tensors, 62);
  EXPECT_EQ(buckets[0].ready_after_layer, 0);  // waits for the stem's gradients
  SimOptions options;
  options.trace_iterations = 1;
  const SimResult r = simulate_run(p, kModel, ddp_spec(2, 128, 0, 4096), options);
  int all_reduces = 0;
  for (const OpRecord& op : r.trace) {
    if (op.resource == "gpu0.comm" && op.name.rfind("allreduce bucket", 0) == 0) ++all_reduces;
  }
  EXPECT_EQ(all_reduces, 1);
  EXPECT_TRUE(has_note(r, "ddp buckets: as the reducer built them")) << ::testing::PrintToString(r.notes);
}

TEST(Runnable, CpuProfilesRefuseDataParallelAndSyncBatchNorm) {
  const Profile p = testing::synthetic_profile(cpu_knobs());
  RunSpec dp = ddp_spec(2, 32);
  dp.strategy = Strategy::kDp;
  const SimResult r = simulate_run(p, kModel, dp);
  EXPECT_FALSE(r.runnable);
  EXPECT_EQ(r.not_runnable, "DataParallel over 2 devices needs CUDA devices; the profile's device is the CPU");
  EXPECT_EQ(r.epoch_s, 0.0);
  dp.gpus = 1;  // one device: the plain module call, which a CPU runs
  EXPECT_TRUE(simulate_run(p, kModel, dp).runnable);
  RunSpec sync = ddp_spec(2, 32);
  sync.sync_batchnorm = true;
  const SimResult s = simulate_run(p, kModel, sync);
  EXPECT_FALSE(s.runnable);
  EXPECT_NE(s.not_runnable.find("SyncBatchNorm needs CUDA tensors"), std::string::npos);
  // On a GPU profile both run.
  const Profile gpu = testing::synthetic_profile();
  dp.gpus = 2;
  EXPECT_TRUE(simulate_run(gpu, kModel, dp).runnable);
  EXPECT_TRUE(simulate_run(gpu, kModel, sync).runnable);
}

TEST(H2d, PageableUnlessTheLoaderPins) {
  testing::SyntheticKnobs k;
  Profile p = testing::synthetic_profile(k);
  // A batch of 128 x 12288 B = 1,572,864 B: 100 us pinned, 250 us from pageable memory.
  p.h2d.pinned = {{1572864, 100e-6}, {3145728, 200e-6}};
  p.h2d.pageable = {{1572864, 250e-6}, {3145728, 500e-6}};
  RunSpec spec = ddp_spec(1, 128, 0, 4096);
  const SimResult pageable = simulate_run(p, kModel, spec);
  spec.pin_memory = true;
  const SimResult pinned = simulate_run(p, kModel, spec);
  EXPECT_NEAR(pageable.compute_s - pinned.compute_s, 32 * 150e-6, 1e-9);
  // Without a pageable curve the pinned one stands in, with a note.
  p.h2d.pageable.clear();
  spec.pin_memory = false;
  const SimResult standin = simulate_run(p, kModel, spec);
  EXPECT_NEAR(standin.compute_s, pinned.compute_s, 1e-12);
  EXPECT_TRUE(has_note(standin, "no pageable-memory curve; the pinned one is used"));
}

TEST(TestPass, ClosedFormInlineLoading) {
  testing::SyntheticKnobs k = cpu_knobs();
  k.loader_samples_per_s_per_worker = 10000;
  const Profile p = testing::synthetic_profile(k);
  RunSpec spec = ddp_spec(1, 128, 0, 4096);
  spec.test_pass = TestPass{1000, 100};
  const SimResult r = simulate_run(p, kModel, spec);
  // 10 batches of 100: forward (10 layers: 8 blocks 20 + 400 us, stem and head 20 + 200 us)
  // = 8 x 420 + 2 x 220 = 3800 us, loss 10 + 2 = 12 us, loading 100 / 10000 = 10 ms.
  EXPECT_NEAR(r.test_s, 10 * (3800e-6 + 12e-6 + 0.010), 1e-9);
  spec.test_pass.reset();
  EXPECT_EQ(simulate_run(p, kModel, spec).epoch_s, r.epoch_s);  // not part of the epoch
}

}  // namespace
}  // namespace trainsim
