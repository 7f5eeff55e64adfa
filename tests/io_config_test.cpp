// Sweep config parsing: defaults, path resolution, and one InputError per kind of bad input, each
// pinned to the exact file, line and key path a user would be pointed at.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "io/config.h"
#include "format/errors.h"
#include "temp_dir.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test, removed afterwards.
class ConfigTest : public ::testing::Test {
 protected:

  // Writes `text` to dir/relative and returns the full path.
  std::string write(const std::string& relative, const std::string& text) {
    const fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  // The InputError that loading `path` throws; a test failure (and an empty error) if it loads.
  static InputError load_error(const std::string& path) {
    try {
      load_sweep_config(path);
    } catch (const InputError& e) {
      return e;
    }
    ADD_FAILURE() << path << ": expected InputError";
    return InputError("", 0, "", "");
  }

  ::trainsim::testing::TempDir temp_{"trainsim-io-config"};
  fs::path dir_ = temp_.path();
};

TEST_F(ConfigTest, ToStringNamesEachStrategy) {
  EXPECT_STREQ(to_string(Strategy::kDdp), "ddp");
  EXPECT_STREQ(to_string(Strategy::kDp), "dp");
}

TEST_F(ConfigTest, ReadsEveryKeyAndResolvesProfileRelativeToConfigFolder) {
  const std::string profile = write("reports/m1/profile.yaml", "schema_version: 1\n");
  const std::string config = write("configs/sweep.yaml",
                                   "# comment line\n"
                                   "profile: ../reports/m1/profile.yaml\n"
                                   "model: resnet18-imagenet\n"
                                   "dataset: {train_samples: 1000}\n"
                                   "loader: {workers: 0, persistent_workers: true, pin_memory: true}\n"
                                   "trainer: trainsim\n"
                                   "precision: bf16-amp\n"
                                   "memory_format: channels_last\n"
                                   "test_pass: {samples: 2000, batch: 50}\n"
                                   "sweep:\n"
                                   "  strategy: [dp, ddp]\n"
                                   "  gpus: [1, 2, 4]\n"
                                   "  batch_per_gpu: [32, 8192]\n"
                                   "interconnect: {bus_bandwidth_gbs: 100, latency_us: 10,"
                                   " override_measured: true}\n");
  const SweepConfig c = load_sweep_config(config);
  EXPECT_EQ(c.file, config);
  // configs/../reports/m1/profile.yaml, normalised lexically.
  EXPECT_EQ(c.profile_path, profile);
  EXPECT_EQ(c.profile_line, 2);  // line 1 is the comment
  EXPECT_EQ(c.model, "resnet18-imagenet");
  EXPECT_EQ(c.train_samples, 1000);
  EXPECT_EQ(c.loader_workers, 0);
  EXPECT_TRUE(c.persistent_workers);
  EXPECT_TRUE(c.pin_memory);
  EXPECT_EQ(c.trainer, Trainer::kTrainsim);
  EXPECT_EQ(c.precision, Precision::kBf16Amp);
  EXPECT_EQ(c.precision_line, 7);
  EXPECT_EQ(c.memory_format, MemoryFormat::kChannelsLast);
  EXPECT_EQ(c.memory_format_line, 8);
  ASSERT_TRUE(c.test_pass.has_value());
  EXPECT_EQ(c.test_pass->samples, 2000);
  EXPECT_EQ(c.test_pass->batch, 50);
  EXPECT_EQ(c.strategies, (std::vector<Strategy>{Strategy::kDp, Strategy::kDdp}));
  EXPECT_EQ(c.gpus, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(c.batch_per_gpu, (std::vector<int64_t>{32, 8192}));
  ASSERT_TRUE(c.interconnect.has_value());
  EXPECT_EQ(c.interconnect->bus_bandwidth_gbs, 100.0);
  EXPECT_EQ(c.interconnect->latency_us, 10.0);
  EXPECT_TRUE(c.interconnect->override_measured);
}

// docs/FIT.md: with observations to fit, no profile is needed; gpu: names a catalog entry.
TEST_F(ConfigTest, ObservationsNeedNoProfileAndGpusComeFromTheCatalog) {
  const std::string config = write("fit.yaml",
                                   "gpu: a100-sxm4-40gb\n"
                                   "loader: {workers: 2}\n"
                                   "observations:\n"
                                   "  - {strategy: ddp, gpus: 1, batch_per_gpu: 32, loader_workers: 4, iteration_s: 0.035}\n"
                                   "  - {strategy: dp, gpus: 2, batch_per_gpu: 128, epoch_s: 12.5, gpu: rtx-2080-ti}\n"
                                   "held_out:\n"
                                   "  - {strategy: ddp, gpus: 1, batch_per_gpu: 512, epoch_s: 7.1}\n"
                                   "sweep: {strategy: ddp, gpus: [1, 8], batch_per_gpu: 128}\n");
  const SweepConfig c = load_sweep_config(config);
  EXPECT_TRUE(c.profile_path.empty());
  ASSERT_TRUE(c.gpu);
  EXPECT_EQ(c.gpu->key, "a100-sxm4-40gb");
  EXPECT_EQ(c.gpu_line, 1);
  ASSERT_EQ(c.observations.size(), 2u);
  EXPECT_EQ(c.observations[0].line, 4);
  EXPECT_EQ(c.observations[0].loader_workers, 4);
  EXPECT_DOUBLE_EQ(c.observations[0].measured(), 0.035);
  EXPECT_STREQ(c.observations[0].measure(), "iteration_s");
  EXPECT_FALSE(c.observations[0].gpu);
  EXPECT_EQ(c.observations[1].strategy, Strategy::kDp);
  ASSERT_TRUE(c.observations[1].gpu);
  EXPECT_EQ(c.observations[1].gpu->key, "rtx-2080-ti");
  EXPECT_FALSE(c.observations[1].loader_workers);  // the config's loader.workers applies
  ASSERT_EQ(c.held_out.size(), 1u);
  EXPECT_DOUBLE_EQ(*c.held_out[0].epoch_s, 7.1);
}

// docs/SCALE.md: a preset is a whole system; fields given beside it override it.
TEST_F(ConfigTest, TopologyPresetsAndTheCollectivesTableNeedNoSweep) {
  const std::string config = write("scale.yaml",
                                   "topology: {preset: dgx-h100, nodes: 2}\n"
                                   "collectives: {op: all_reduce, min_bytes: 8, max_bytes: 8G, factor: 2}\n");
  const SweepConfig c = load_sweep_config(config);
  ASSERT_TRUE(c.topology);
  EXPECT_EQ(c.topology->gpu.key, "h100-sxm");
  EXPECT_EQ(c.topology->gpus(), 16);
  EXPECT_EQ(c.topology->fabric, Fabric::kNvswitch);
  ASSERT_TRUE(c.topology->nic);
  EXPECT_DOUBLE_EQ(c.topology->nic->gbps, 400);
  EXPECT_TRUE(c.topology->nic->per_gpu);
  EXPECT_EQ(c.topology->cpu_cores, 224);  // the DGX H100 datasheet's 112 cores, 2 threads each
  ASSERT_TRUE(c.collectives);
  EXPECT_DOUBLE_EQ(c.collectives->max_bytes, 8.0 * 1024 * 1024 * 1024);
  EXPECT_TRUE(c.strategies.empty());  // no sweep: the collectives table only
  EXPECT_TRUE(c.profile_path.empty());

  // The short form: the GPU's usual system (NVLink where it has it).
  const SweepConfig shortform = load_sweep_config(write(
      "short.yaml", "topology: {gpu: t4, gpus_per_node: 4}\ncollectives: {}\n"));
  EXPECT_EQ(shortform.topology->fabric, Fabric::kPcie);
  EXPECT_TRUE(shortform.topology->p2p);
  EXPECT_FALSE(shortform.topology->nccl);  // the newest NCCL the model has
  EXPECT_EQ(shortform.topology->cpu_cores, 0);  // not given: the simulation assumes the profile's
  EXPECT_EQ(load_sweep_config(write("cores.yaml", "topology: {preset: hgx-h100, cpu_cores: 96}\ncollectives: {}\n"))
                .topology->cpu_cores,
            96);

  // `nccl:` the release whose cost model prices collectives; the patch level is dropped.
  const SweepConfig versioned = load_sweep_config(write(
      "nccl.yaml", "topology: {gpu: t4, gpus_per_node: 4, nccl: \"2.4.2\"}\ncollectives: {}\n"));
  ASSERT_TRUE(versioned.topology->nccl);
  EXPECT_EQ(versioned.topology->nccl->major, 2);
  EXPECT_EQ(versioned.topology->nccl->minor, 4);
  EXPECT_EQ(load_sweep_config(write("nccl.yaml", "topology: {gpu: t4, nccl: 2.26}\ncollectives: {}\n"))
                .topology->nccl->minor,
            26);
  for (const char* bad : {"two", "2", "2.26.1.1", "2.x", "-2.4"}) {
    const std::string text = std::string("topology: {gpu: t4, nccl: \"") + bad + "\"}\ncollectives: {}\n";
    EXPECT_THROW(load_sweep_config(write("nccl.yaml", text)), InputError) << bad;
  }
  // `pcie: {switches}`: the GPUs of a node under each PCIe switch.
  const SweepConfig switched = load_sweep_config(write(
      "switch.yaml", "topology: {gpu: t4, gpus_per_node: 4, fabric: pcie, p2p: false, pcie: {switches: 2}}\n"
                     "collectives: {}\n"));
  EXPECT_EQ(switched.topology->pcie_switches, 2);
  EXPECT_NE(switched.topology->describe().find("(through host memory), 2 GPUs per PCIe switch"), std::string::npos)
      << switched.topology->describe();
  EXPECT_EQ(shortform.topology->pcie_switches, 0);
  // `nccl_algo:` NCCL_ALGO's list, one name or several; none: every algorithm.
  EXPECT_TRUE(shortform.topology->nccl_algo.empty());
  EXPECT_EQ(load_sweep_config(write("algo.yaml", "topology: {preset: hgx-h100, nccl_algo: ring}\ncollectives: {}\n"))
                .topology->nccl_algo,
            std::vector<std::string>{"ring"});
  const SweepConfig two = load_sweep_config(
      write("algo.yaml", "topology: {preset: hgx-h100, nccl_algo: [tree, ring]}\ncollectives: {}\n"));
  EXPECT_EQ(two.topology->nccl_algo, (std::vector<std::string>{"tree", "ring"}));
  EXPECT_NE(two.topology->describe().find("NCCL's algorithms: tree, ring"), std::string::npos) << two.topology->describe();
}

TEST_F(ConfigTest, WithoutObservationsTheProfileIsRequired) {
  const std::string config = write("nofit.yaml", "gpu: t4\nsweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n");
  const InputError e = load_error(config);
  EXPECT_EQ(e.key(), "profile");
  EXPECT_NE(e.message().find("missing required key 'profile'"), std::string::npos) << e.what();
}

TEST_F(ConfigTest, TenMillionIterationsPerEpochIsTheLongestEpochAccepted) {
  write("profile.yaml", "schema_version: 1\n");
  // 1 GPU at batch 32: 10^7 iterations per epoch, for dp and ddp alike.
  const std::string config = write("sweep.yaml",
                                   "profile: profile.yaml\n"
                                   "dataset: {train_samples: 320000000}\n"
                                   "sweep: {strategy: [dp, ddp], gpus: [1, 2], batch_per_gpu: [32, 16]}\n");
  EXPECT_THROW(load_sweep_config(config), InputError);  // batch 16: 2 x 10^7 iterations
  const std::string fits = write("sweep.yaml",
                                 "profile: profile.yaml\n"
                                 "dataset: {train_samples: 320000000}\n"
                                 "sweep: {strategy: [dp, ddp], gpus: [1, 2], batch_per_gpu: [32]}\n");
  EXPECT_EQ(load_sweep_config(fits).train_samples, 320000000);
}

TEST_F(ConfigTest, OptionalKeysTakeDocumentedDefaultsAndScalarsAreOneElementLists) {
  write("profile.yaml", "schema_version: 1\n");
  const std::string config = write("sweep.yaml",
                                   "profile: profile.yaml\n"
                                   "sweep:\n"
                                   "  strategy: ddp\n"
                                   "  gpus: 2\n"
                                   "  batch_per_gpu: 128\n"
                                   "interconnect: {bus_bandwidth_gbs: 12.5, latency_us: 0}\n");
  const SweepConfig c = load_sweep_config(config);
  EXPECT_EQ(c.profile_path, (dir_ / "profile.yaml").string());
  EXPECT_EQ(c.model, "resnet18-cifar");
  EXPECT_EQ(c.train_samples, 50000);
  EXPECT_EQ(c.loader_workers, 2);
  EXPECT_FALSE(c.persistent_workers);  // the course's DataLoader: workers start every epoch
  EXPECT_FALSE(c.pin_memory);          // and pageable memory
  EXPECT_EQ(c.trainer, Trainer::kPytorch);
  EXPECT_EQ(c.precision, Precision::kFp32);
  EXPECT_EQ(c.precision_line, 0);
  EXPECT_EQ(c.memory_format, MemoryFormat::kNchw);
  EXPECT_EQ(c.memory_format_line, 0);
  EXPECT_FALSE(c.test_pass.has_value());  // off unless asked
  EXPECT_EQ(c.strategies, std::vector<Strategy>{Strategy::kDdp});
  EXPECT_EQ(c.gpus, std::vector<int>{2});
  EXPECT_EQ(c.batch_per_gpu, std::vector<int64_t>{128});
  ASSERT_TRUE(c.interconnect.has_value());
  EXPECT_FALSE(c.interconnect->override_measured);  // default false
}

TEST_F(ConfigTest, TestPassAsABoolTakesTheCoursesSizes) {
  write("profile.yaml", "schema_version: 1\n");
  const std::string sweep = "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n";
  const SweepConfig on = load_sweep_config(write("on.yaml", "profile: profile.yaml\n" + sweep + "test_pass: true\n"));
  ASSERT_TRUE(on.test_pass.has_value());
  EXPECT_EQ(on.test_pass->samples, 10000);
  EXPECT_EQ(on.test_pass->batch, 100);
  const SweepConfig off = load_sweep_config(write("off.yaml", "profile: profile.yaml\n" + sweep + "test_pass: false\n"));
  EXPECT_FALSE(off.test_pass.has_value());
  EXPECT_STREQ(to_string(Trainer::kPytorch), "pytorch");
  EXPECT_STREQ(to_string(Trainer::kTrainsim), "trainsim");
}

TEST_F(ConfigTest, LargeBatchKeys) {
  write("profile.yaml", "schema_version: 1\n");
  const std::string config = write("sweep.yaml",
                                   "profile: profile.yaml\n"
                                   "sweep: {strategy: ddp, gpus: 4, batch_per_gpu: 2048}\n"
                                   "lr_rule: sqrt\n"
                                   "large_batch:\n"
                                   "  epochs: 3\n"
                                   "  target_loss: 0.75\n"
                                   "  target_accuracy: 0.85\n"
                                   "  warmup_epochs: 0.5\n"
                                   "  past_bound: edge-of-stability\n"
                                   "  pace_probe: true\n"
                                   "sync_batchnorm: true\n");
  const SweepConfig c = load_sweep_config(config);
  EXPECT_EQ(c.lr_rule, LrRule::kSqrt);
  ASSERT_TRUE(c.large_batch.has_value());
  EXPECT_EQ(c.large_batch->key, "large_batch");
  EXPECT_EQ(c.large_batch->line, 4);
  EXPECT_EQ(c.large_batch->epochs, 3);
  EXPECT_EQ(c.large_batch->target_loss, 0.75);
  EXPECT_EQ(c.large_batch->target_accuracy, 0.85);
  EXPECT_EQ(c.large_batch->warmup_epochs, 0.5);
  EXPECT_EQ(c.large_batch->past_bound, PastBound::kEdge);
  EXPECT_EQ(c.large_batch->pace_probe, std::optional<bool>(true));
  EXPECT_TRUE(c.sync_batchnorm);
}

TEST_F(ConfigTest, LargeBatchDefaults) {
  write("profile.yaml", "schema_version: 1\n");
  const std::string base = "profile: profile.yaml\nsweep: {strategy: ddp, gpus: 1, batch_per_gpu: 128}\n";
  // Neither key: no large-batch request, linear-warmup, no SyncBatchNorm.
  const SweepConfig none = load_sweep_config(write("none.yaml", base));
  EXPECT_FALSE(none.large_batch.has_value());
  EXPECT_EQ(none.lr_rule, LrRule::kLinearWarmup);
  EXPECT_FALSE(none.sync_batchnorm);
  // `large_batch:` with nothing under it: a request with every default.
  const SweepConfig empty = load_sweep_config(write("empty.yaml", base + "large_batch:\n"));
  ASSERT_TRUE(empty.large_batch.has_value());
  EXPECT_EQ(empty.large_batch->epochs, 5);
  EXPECT_FALSE(empty.large_batch->target_loss.has_value());
  EXPECT_FALSE(empty.large_batch->target_accuracy.has_value());
  EXPECT_EQ(empty.large_batch->warmup_epochs, 5);  // measure baseline's default ramp
  EXPECT_EQ(empty.large_batch->past_bound, PastBound::kFromStart);
  EXPECT_FALSE(empty.large_batch->pace_probe.has_value());  // LargeBatchSettings' default
  EXPECT_EQ(empty.large_batch->line, 3);
  // `lr_rule:` alone also asks for predictions; errors about the curve then point at it.
  const SweepConfig rule = load_sweep_config(write("rule.yaml", base + "\nlr_rule: constant\n"));
  ASSERT_TRUE(rule.large_batch.has_value());
  EXPECT_EQ(rule.large_batch->key, "lr_rule");
  EXPECT_EQ(rule.large_batch->line, 4);
  EXPECT_EQ(rule.lr_rule, LrRule::kConstant);
  EXPECT_EQ(rule.large_batch->epochs, 5);
}

// large_batch.profile: Q4 from another machine's profile (the main job's CPU curve under a GPU
// sweep). Q4's sweep takes that profile as measured: none of the config's links or GPU.
TEST_F(ConfigTest, LargeBatchProfileGivesQ4ItsOwnSweepOnThatMachine) {
  write("gpu/profile.yaml", "schema_version: 1\n");
  const std::string cpu = write("cpu/profile.yaml", "schema_version: 1\n");
  const std::string base = "profile: ../gpu/profile.yaml\nsweep: {strategy: ddp, gpus: [1, 4], batch_per_gpu: 128}\n"
                           "topology: {preset: hgx-h100}\n";
  const SweepConfig c = load_sweep_config(
      write("configs/a.yaml", base + "large_batch: {model: fashion-cnn-gap,\n  profile: ../cpu/profile.yaml}\n"));
  ASSERT_TRUE(c.large_batch.has_value());
  EXPECT_EQ(c.large_batch->profile_path, cpu);
  EXPECT_EQ(c.large_batch->profile_line, 5);
  const std::optional<SweepConfig> q4 = large_batch_sweep(c);
  ASSERT_TRUE(q4.has_value());
  EXPECT_EQ(q4->profile_path, cpu);
  EXPECT_EQ(q4->profile_line, 5);
  EXPECT_EQ(q4->model, "fashion-cnn-gap");
  EXPECT_EQ(q4->train_samples, 60000);
  EXPECT_FALSE(q4->topology.has_value());
  EXPECT_TRUE(q4->large_batch->profile_path.empty());
  EXPECT_FALSE(large_batch_sweep(*q4).has_value());  // Q4's own sweep is Q4's
  // The same model on another profile is a sweep of its own too; the config's own profile is not.
  EXPECT_TRUE(large_batch_sweep(load_sweep_config(write("configs/b.yaml", base + "large_batch: {profile: ../cpu/profile.yaml}\n"))));
  EXPECT_FALSE(large_batch_sweep(load_sweep_config(write("configs/c.yaml", base + "large_batch: {profile: ../gpu/profile.yaml}\n"))));
  // A profile that is not there: the file, the line and the key.
  const InputError e = load_error(write("configs/d.yaml", base + "large_batch:\n  model: fashion-cnn\n  profile: nope.yaml\n"));
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.key(), "large_batch.profile");
  EXPECT_NE(e.message().find("nope.yaml does not exist"), std::string::npos) << e.what();
}

// precision: as a list, profile: a map with one profile per precision (docs/PRECISION.md "Several
// precisions"): the first is the tables', the others are predicted beside them.
TEST_F(ConfigTest, SeveralPrecisionsEachWithItsOwnProfile) {
  const std::string fp32 = write("fp32/profile.yaml", "schema_version: 1\n");
  const std::string bf16 = write("bf16/profile.yaml", "schema_version: 1\n");
  const std::string sweep = "sweep: {strategy: ddp, gpus: [1, 2], batch_per_gpu: 32}\n";
  const SweepConfig c = load_sweep_config(write("configs/a.yaml", "precision: [fp32, bf16-amp]\nprofile:\n"
                                                                  "  bf16-amp: ../bf16/profile.yaml\n"
                                                                  "  fp32: ../fp32/profile.yaml\n" + sweep));
  EXPECT_EQ(c.precision, Precision::kFp32);
  EXPECT_EQ(c.precision_line, 1);
  EXPECT_EQ(c.profile_path, fp32);
  EXPECT_EQ(c.profile_line, 4);
  ASSERT_EQ(c.other_variants.size(), 1u);
  EXPECT_EQ(c.other_variants[0].precision, Precision::kBf16Amp);
  EXPECT_EQ(c.other_variants[0].profile_path, bf16);
  EXPECT_EQ(c.other_variants[0].line, 3);
  // The list's order decides the tables': bf16-amp first.
  const SweepConfig b = load_sweep_config(write("configs/b.yaml", "precision: [bf16-amp, fp32]\nprofile:\n"
                                                                  "  bf16-amp: ../bf16/profile.yaml\n"
                                                                  "  fp32: ../fp32/profile.yaml\n" + sweep));
  EXPECT_EQ(b.precision, Precision::kBf16Amp);
  EXPECT_EQ(b.profile_path, bf16);
  ASSERT_EQ(b.other_variants.size(), 1u);
  EXPECT_EQ(b.other_variants[0].precision, Precision::kFp32);
  // A single scalar precision keeps the plain profile: no other precisions.
  EXPECT_TRUE(load_sweep_config(write("configs/c.yaml", "profile: ../fp32/profile.yaml\n" + sweep))
                  .other_variants.empty());
}

TEST_F(ConfigTest, SeveralPrecisionsAreCheckedAgainstTheirProfiles) {
  write("fp32/profile.yaml", "schema_version: 1\n");
  const std::string sweep = "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n";
  struct Case {
    std::string yaml;
    int line;
    std::string key, message;
  };
  const std::vector<Case> cases = {
      {"precision: fp32\nprofile: {fp32: ../fp32/profile.yaml}\n", 2, "profile",
       "a map of profiles needs precision: [NAME, ...] or memory_format: [NAME, ...] listing its keys"},
      {"precision: [fp32, bf16-amp]\nprofile: ../fp32/profile.yaml\n", 1, "precision",
       "a list of precisions needs profile: {PRECISION: FILE, ...}, a profile measured in each"},
      {"precision: [fp32]\nprofile:\n  fp32: ../fp32/profile.yaml\n  bf16-amp: ../fp32/profile.yaml\n", 4,
       "profile.bf16-amp", "'bf16-amp' is not a precision of precision: (fp32)"},
      {"precision: [fp32, bf16-amp]\nprofile:\n  fp32: ../fp32/profile.yaml\n", 3, "profile",
       "no profile for precision bf16-amp"},
      {"precision: [fp32, fp32]\nprofile:\n  fp32: ../fp32/profile.yaml\n", 1, "precision[1]",
       "fp32 is given twice"},
      {"precision: []\nprofile:\n  fp32: ../fp32/profile.yaml\n", 1, "precision", "names no precision"},
      {"precision: [fp32, bf16-amp]\nprofile:\n  fp32: ../fp32/profile.yaml\n  bf16-amp: ../nope.yaml\n", 4,
       "profile.bf16-amp", "does not exist"},
      {"precision: [fp32, bf16-amp]\ngpu: h100-sxm\nprofile:\n  fp32: ../fp32/profile.yaml\n"
       "  bf16-amp: ../fp32/profile.yaml\n", 1, "precision[1]", "not with gpu: or observations:"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const InputError e = load_error(write("configs/bad" + std::to_string(i) + ".yaml", c.yaml + sweep));
    EXPECT_EQ(e.line(), c.line) << e.what();
    EXPECT_EQ(e.key(), c.key) << e.what();
    EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
  }
}

// precision: and memory_format: both lists: every precision in every format, each with its profile
// under PRECISION/FORMAT, the tables' entry each list's first.
TEST_F(ConfigTest, PrecisionsAndMemoryFormatsCrossed) {
  for (const char* f : {"a", "b", "c", "d"}) write(std::string(f) + "/profile.yaml", "schema_version: 1\n");
  const std::string sweep = "sweep: {strategy: ddp, gpus: [1, 2], batch_per_gpu: 32}\n";
  const std::string lists = "precision: [bf16-amp, fp32]\nmemory_format: [channels_last, nchw]\nprofile:\n";
  const SweepConfig c = load_sweep_config(write("configs/x.yaml", lists +
                                                                  "  fp32/nchw: ../a/profile.yaml\n"
                                                                  "  fp32/channels_last: ../b/profile.yaml\n"
                                                                  "  bf16-amp/nchw: ../c/profile.yaml\n"
                                                                  "  bf16-amp/channels_last: ../d/profile.yaml\n" +
                                                                  sweep));
  EXPECT_EQ(c.variant_axis, SweepConfig::VariantAxis::kBoth);
  EXPECT_EQ(c.precision, Precision::kBf16Amp);
  EXPECT_EQ(c.memory_format, MemoryFormat::kChannelsLast);
  EXPECT_EQ(c.precision_line, 1);
  EXPECT_EQ(c.memory_format_line, 2);
  EXPECT_EQ(c.profile_line, 7);
  ASSERT_EQ(c.other_variants.size(), 3u);
  const std::vector<std::string> others = {"bf16-amp/nchw", "fp32/channels_last", "fp32/nchw"};
  const std::vector<int> lines = {6, 5, 4};
  for (std::size_t i = 0; i < others.size(); ++i) {
    const SweepConfig::VariantProfile& v = c.other_variants[i];
    EXPECT_EQ(variant_name(c.variant_axis, v.precision, v.memory_format), others[i]);
    EXPECT_EQ(v.line, lines[i]);
  }
  // Every pair needs its profile; a key that is no pair of the lists is refused.
  const InputError missing = load_error(write("configs/y.yaml", lists + "  fp32/nchw: ../a/profile.yaml\n" + sweep));
  EXPECT_EQ(missing.key(), "profile");
  EXPECT_NE(missing.message().find("no profile for precision/memory format bf16-amp/channels_last"), std::string::npos)
      << missing.what();
  const InputError extra = load_error(write("configs/z.yaml", "precision: [fp32]\nmemory_format: [nchw]\nprofile:\n"
                                                              "  fp32/nchw: ../a/profile.yaml\n"
                                                              "  fp32/channels_last: ../b/profile.yaml\n" + sweep));
  EXPECT_EQ(extra.line(), 5);
  EXPECT_NE(extra.message().find("'fp32/channels_last' is not a precision/memory format of precision: x "
                                 "memory_format: (fp32/nchw)"),
            std::string::npos)
      << extra.what();
}

// memory_format: a list, as precision: is: the tables' format first, each other from its own
// profile; the precision (one, or fp32) is the same for every format.
TEST_F(ConfigTest, SeveralMemoryFormatsEachWithItsProfile) {
  const std::string nchw = write("nchw/profile.yaml", "schema_version: 1\n");
  const std::string last = write("cl/profile.yaml", "schema_version: 1\n");
  const std::string sweep = "sweep: {strategy: ddp, gpus: [1, 2], batch_per_gpu: 32}\n";
  const SweepConfig c = load_sweep_config(write("configs/a.yaml", "memory_format: [nchw, channels_last]\nprofile:\n"
                                                                  "  channels_last: ../cl/profile.yaml\n"
                                                                  "  nchw: ../nchw/profile.yaml\n"
                                                                  "precision: bf16-amp\n" + sweep));
  EXPECT_EQ(c.variant_axis, SweepConfig::VariantAxis::kMemoryFormat);
  EXPECT_EQ(c.memory_format, MemoryFormat::kNchw);
  EXPECT_EQ(c.memory_format_line, 1);
  EXPECT_EQ(c.profile_path, nchw);
  EXPECT_EQ(c.profile_line, 4);
  EXPECT_EQ(c.precision, Precision::kBf16Amp);
  ASSERT_EQ(c.other_variants.size(), 1u);
  EXPECT_EQ(c.other_variants[0].memory_format, MemoryFormat::kChannelsLast);
  EXPECT_EQ(c.other_variants[0].precision, Precision::kBf16Amp);  // the config's one precision
  EXPECT_EQ(c.other_variants[0].profile_path, last);
  EXPECT_EQ(c.other_variants[0].line, 3);
  // A precision list's entries keep the config's one memory format.
  const SweepConfig p = load_sweep_config(write("configs/p.yaml", "precision: [fp32, bf16-amp]\nprofile:\n"
                                                                  "  fp32: ../nchw/profile.yaml\n"
                                                                  "  bf16-amp: ../cl/profile.yaml\n"
                                                                  "memory_format: channels_last\n" + sweep));
  EXPECT_EQ(p.variant_axis, SweepConfig::VariantAxis::kPrecision);
  ASSERT_EQ(p.other_variants.size(), 1u);
  EXPECT_EQ(p.other_variants[0].precision, Precision::kBf16Amp);
  EXPECT_EQ(p.other_variants[0].memory_format, MemoryFormat::kChannelsLast);

  struct Case {
    std::string yaml;
    int line;
    std::string key, message;
  };
  const std::vector<Case> cases = {
      {"memory_format: [nchw, channels_last]\nprofile: ../nchw/profile.yaml\n", 1, "memory_format",
       "a list of memory formats needs profile: {FORMAT: FILE, ...}, a profile measured in each"},
      {"memory_format: [nchw]\nprofile:\n  nchw: ../nchw/profile.yaml\n  channels_last: ../cl/profile.yaml\n", 4,
       "profile.channels_last", "'channels_last' is not a memory format of memory_format: (nchw)"},
      {"memory_format: [nchw, channels_last]\nprofile:\n  nchw: ../nchw/profile.yaml\n", 3, "profile",
       "no profile for memory format channels_last"},
      {"memory_format: [nchw, nhwc]\nprofile:\n  nchw: ../nchw/profile.yaml\n", 1, "memory_format[1]",
       "unknown memory format 'nhwc'"},
      {"memory_format: [channels_last, channels_last]\nprofile:\n  channels_last: ../cl/profile.yaml\n", 1,
       "memory_format[1]", "channels_last is given twice"},
      {"memory_format: []\nprofile:\n  nchw: ../nchw/profile.yaml\n", 1, "memory_format", "names no memory format"},
      {"precision: [fp32]\nmemory_format: [nchw]\nprofile:\n  fp32: ../nchw/profile.yaml\n", 4, "profile",
       "no profile for precision/memory format fp32/nchw (give fp32/nchw: FILE"},
      {"memory_format: [nchw, channels_last]\nobservations: []\nprofile:\n  nchw: ../nchw/profile.yaml\n"
       "  channels_last: ../cl/profile.yaml\n", 1, "memory_format[1]", "not with gpu: or observations:"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& bad = cases[i];
    const InputError e = load_error(write("configs/bad" + std::to_string(i) + ".yaml", bad.yaml + sweep));
    EXPECT_EQ(e.line(), bad.line) << e.what();
    EXPECT_EQ(e.key(), bad.key) << e.what();
    EXPECT_NE(e.message().find(bad.message), std::string::npos) << e.what();
  }
}

TEST_F(ConfigTest, NoInterconnectBlockMeansNoAssumption) {
  const std::string config = std::string(TRAINSIM_FIXTURES_DIR) + "/io/sweep-fixture.yaml";
  const SweepConfig c = load_sweep_config(config);
  EXPECT_EQ(c.profile_path, std::string(TRAINSIM_FIXTURES_DIR) + "/io/test-fixture-profile.yaml");
  EXPECT_FALSE(c.interconnect.has_value());
}

TEST_F(ConfigTest, MissingFileIsLineZero) {
  const std::string missing = (dir_ / "nope.yaml").string();
  const InputError e = load_error(missing);
  EXPECT_EQ(e.file(), missing);
  EXPECT_EQ(e.line(), 0);
  EXPECT_EQ(e.key(), "");
  EXPECT_NE(e.message().find("No such file"), std::string::npos) << e.what();
}

// A config that is /dev/zero was read forever (issue 13): inputs are read up to kMaxInputBytes.
TEST_F(ConfigTest, DevZeroIsRefusedAtTheSizeLimit) {
  const InputError e = load_error("/dev/zero");
  EXPECT_EQ(std::string(e.what()), "/dev/zero: larger than 64 MiB: not a YAML file");
}

// YAML's three line breaks: LF, CRLF and a lone CR (the last one yaml-cpp 0.7 would take for
// text, so that a comment ran on over the next key). Lines are numbered by all three.
TEST_F(ConfigTest, EveryYamlLineBreakEndsALine) {
  write("profile.yaml", "schema_version: 1\n");
  const SweepConfig c = load_sweep_config(write(
      "sweep.yaml", "profile: profile.yaml\r# a comment\rmodel: fashion-cnn\r\n"
                    "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 8}\r"));
  EXPECT_EQ(c.model, "fashion-cnn");
  EXPECT_EQ(c.model_line, 3);
  const std::string bad = write("bad.yaml", "profile: profile.yaml\r\n# note\rloader: {worker: 2}\n");
  EXPECT_EQ(std::string(load_error(bad).what()),
            bad + ":3: loader.worker: unknown key 'worker' (did you mean 'workers'?)");
}

// A byte order mark may open a UTF-8 file; a UTF-16 file is refused by name.
TEST_F(ConfigTest, ByteOrderMarks) {
  write("profile.yaml", "schema_version: 1\n");
  const SweepConfig c = load_sweep_config(write(
      "sweep.yaml", "\xef\xbb\xbfprofile: profile.yaml\nsweep: {strategy: ddp, gpus: 1, batch_per_gpu: 8}\n"));
  EXPECT_EQ(c.gpus, (std::vector<int>{1}));
  // The mark is not text: an alias's name and a '---' are found behind it.
  const std::string alias = write("alias.yaml", "\xef\xbb\xbfprofile: profile.yaml\nsweep: {gpus: *n}\n");
  EXPECT_EQ(std::string(load_error(alias).what()), alias + ":2: YAML alias '*n' names no anchor defined before it");
  const std::string second = write("second.yaml", "\xef\xbb\xbfprofile: profile.yaml\n---\nsweep: {}\n");
  EXPECT_EQ(std::string(load_error(second).what()),
            second + ":2: a second YAML document ('---'): one document per file");
  const std::string utf16 = write("utf16.yaml", std::string("\xff\xfep\0r\0", 6));
  EXPECT_EQ(std::string(load_error(utf16).what()), utf16 + ":1: a YAML file in UTF-16: save it as UTF-8");
}

// An alias reads as the node of its anchor.
TEST_F(ConfigTest, AnAliasReadsAsItsAnchorsNode) {
  write("profile.yaml", "schema_version: 1\n");
  const std::string config = write("sweep.yaml",
                                   "profile: profile.yaml\n"
                                   "sweep: {strategy: ddp, gpus: &sizes [1, 2], batch_per_gpu: *sizes}\n");
  const SweepConfig c = load_sweep_config(config);
  EXPECT_EQ(c.gpus, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.batch_per_gpu, (std::vector<int64_t>{1, 2}));
}

// Any model name the profile may hold: the config takes it with its epoch (the profile check,
// require_for_model, says whether the profile has it).
TEST_F(ConfigTest, AnyModelWithItsEpochIsTaken) {
  write("profile.yaml", "schema_version: 1\n");
  const SweepConfig c = load_sweep_config(write("sweep.yaml",
                                                "profile: profile.yaml\n"
                                                "model: my-transformer\n"
                                                "dataset: {train_samples: 1234}\n"
                                                "sweep: {strategy: ddp, gpus: [1, 2], batch_per_gpu: 8}\n"));
  EXPECT_EQ(c.model, "my-transformer");
  EXPECT_EQ(c.model_line, 2);
  EXPECT_EQ(c.train_samples, 1234);
  EXPECT_FALSE(described_model("my-transformer"));
  EXPECT_TRUE(described_model("fashion-cnn"));
  EXPECT_TRUE(described_model("fashion-cnn-gap"));
}

// Nesting is bounded (kMaxDepth), so no file can take the reader's stack or time with depth.
TEST_F(ConfigTest, ListsNestedDeeperThanTheLimitAreAnError) {
  write("profile.yaml", "schema_version: 1\n");
  const std::string config = write("sweep.yaml", "profile: profile.yaml\ndataset: " +
                                                     std::string(100000, '[') + "\n");
  const InputError e = load_error(config);
  EXPECT_EQ(std::string(e.what()),
            config + ":2: lists and maps nested deeper than 64 levels");
}

TEST_F(ConfigTest, WhatIsTheOneLineUsersSee) {
  write("profile.yaml", "schema_version: 1\n");
  const std::string config = write("sweep.yaml",
                                   "profile: profile.yaml\n"
                                   "loader: {worker: 2}\n"
                                   "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 1}\n");
  const InputError e = load_error(config);
  EXPECT_EQ(std::string(e.what()),
            config + ":2: loader.worker: unknown key 'worker' (did you mean 'workers'?)");
}

// One bad config: the YAML after a valid `profile:` line, and where the error must point.
struct BadConfig {
  const char* name;
  const char* yaml;     // appended after "profile: profile.yaml\n" (line 1)
  int line;
  const char* key;
  const char* message;  // substring of InputError::message()
};

// gtest prints a parameter on failure; show its name, not its bytes.
void PrintTo(const BadConfig& bad, std::ostream* out) { *out << bad.name; }

class BadConfigTest : public ConfigTest, public ::testing::WithParamInterface<BadConfig> {};

constexpr const char* kGoodSweep =
    "sweep:\n"
    "  strategy: [dp, ddp]\n"
    "  gpus: [1, 2]\n"
    "  batch_per_gpu: [32]\n";

TEST_P(BadConfigTest, PointsAtTheOffendingNode) {
  const BadConfig& bad = GetParam();
  write("profile.yaml", "schema_version: 1\n");
  const std::string config = write("sweep.yaml", std::string("profile: profile.yaml\n") + bad.yaml);
  const InputError e = load_error(config);
  EXPECT_EQ(e.file(), config);
  EXPECT_EQ(e.line(), bad.line) << e.what();
  EXPECT_EQ(e.key(), bad.key) << e.what();
  EXPECT_NE(e.message().find(bad.message), std::string::npos) << e.what();
}

// Line numbers: line 1 is always "profile: profile.yaml"; the YAML below starts on line 2.
INSTANTIATE_TEST_SUITE_P(
    Config, BadConfigTest,
    ::testing::Values(
        // The `[` on line 3 is never closed; the parser gives up on line 4, where it reports.
        BadConfig{"SyntaxError", "sweep:\n  gpus: [1, 2\n  strategy: ddp\n", 4, "",
                  "YAML syntax error"},
        // YAML is Unicode: a byte that is not UTF-8, or a control character, is an error at its
        // line and column (checked on the text: yaml-cpp would take either into a string).
        BadConfig{"Latin1ByteInAComment", "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n"
                  "# caf\xe9 au lait\n", 3, "", "YAML syntax error: invalid trailing UTF-8 octet at column 7"},
        BadConfig{"ControlCharacterInAValue", "dataset: {train_samples: 5\x01}\n", 2, "",
                  "YAML syntax error: control characters are not allowed at column 27"},
        BadConfig{"OverlongUtf8", "# \xc0\xaf\n", 2, "",
                  "YAML syntax error: invalid length of a UTF-8 sequence at column 3"},
        BadConfig{"Utf8Surrogate", "dataset: {train_samples: 5}  # \xed\xa0\x80\n", 2, "",
                  "YAML syntax error: invalid Unicode character at column 32"},
        BadConfig{"ASecondDocument", "---\nsweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n", 2,
                  "", "a second YAML document ('---'): one document per file"},
        // After '...' the document is over: what follows is a second one, not more keys.
        BadConfig{"KeysAfterTheDocumentsEnd", "...\nsweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n",
                  3, "", "text after the end of the document (a second top-level node)"},
        BadConfig{"AliasOfNoAnchor", "sweep: {strategy: ddp, gpus: *n, batch_per_gpu: 32}\n", 2, "",
                  "YAML alias '*n' names no anchor defined before it"},
        // An anchor names its node once the node is complete: no cycles.
        BadConfig{"AliasInsideItsAnchor", "dataset: &d {train_samples: *d}\n", 2, "",
                  "YAML alias '*d' names the list or map that holds it"},
        // docs/SCALE.md: topology:, collectives:, collectives_log:.
        BadConfig{"UnknownTopologyPreset", "topology: {preset: dgx-b300}\n", 2, "topology.preset",
                  "unknown preset 'dgx-b300' (known: dgx-a100, dgx-h100"},
        BadConfig{"NodesWithoutNics", "topology: {gpu: a100-sxm4-40gb, nodes: 2, gpus_per_node: 8}\n", 2,
                  "topology.nodes", "2 nodes need the NICs between them"},
        BadConfig{"NvswitchNeedsNvlink", "topology: {gpu: t4, fabric: nvswitch}\n", 2, "topology.fabric",
                  "fabric nvswitch needs NVLink, and t4 has none"},
        BadConfig{"TopologyNeedsItsGpu", "topology: {nodes: 1}\n", 2, "topology.gpu",
                  "missing required key 'gpu'"},
        BadConfig{"NicPerSomethingElse", "topology: {preset: hgx-h100, nic: {gbps: 400, per: rack}}\n", 2,
                  "topology.nic.per", "expected gpu or node"},
        BadConfig{"TopologyWithoutCores", "topology: {preset: hgx-h100, cpu_cores: 0}\n", 2, "topology.cpu_cores",
                  "must be >= 1, got 0"},
        BadConfig{"TopologyCoresPastAnyServer", "topology: {preset: hgx-h100, cpu_cores: 100000}\n", 2,
                  "topology.cpu_cores", "must be <= 65536, got 100000"},
        BadConfig{"UnknownNcclAlgorithm", "topology: {preset: hgx-h100, nccl_algo: [ring, collnet]}\n", 2,
                  "topology.nccl_algo[1]", "unknown NCCL algorithm 'collnet' (expected ring, tree, nvls or nvls_tree)"},
        BadConfig{"NcclAlgoWithoutRing", "topology: {preset: hgx-h100, nccl_algo: nvls}\n", 2, "topology.nccl_algo",
                  "must include ring: it is the one algorithm NCCL runs every collective with"},
        BadConfig{"PcieSwitchesOnNvlink", "topology: {preset: hgx-h100, pcie: {switches: 2}}\n", 2, "topology.pcie",
                  "describes a PCIe node's switches, and the fabric is nvswitch"},
        BadConfig{"PcieSwitchesSplitUnevenly",
                  "topology: {gpu: t4, gpus_per_node: 4, fabric: pcie, pcie: {switches: 3}}\n", 2,
                  "topology.pcie.switches", "4 GPUs per node do not split evenly over 3 switches"},
        BadConfig{"CollectivesLogOfAnotherOp",
                  "topology: {gpu: h100-sxm, gpus_per_node: 8}\ncollectives: {op: all_reduce, log: "
                  TRAINSIM_SOURCE_DIR "/reports/published/nccl-tests/nccl-h100sxm-8gpu-together-ring-nccl2262-all_gather.log}\n",
                  3, "collectives.log", "is a log of all_gather_perf, and op is all_reduce"},
        BadConfig{"CollectivesLogOfOtherRanks",
                  "topology: {gpu: h100-sxm, gpus_per_node: 4}\ncollectives: {op: all_gather, log: "
                  TRAINSIM_SOURCE_DIR "/reports/published/nccl-tests/nccl-h100sxm-8gpu-together-ring-nccl2262-all_gather.log}\n",
                  3, "collectives.log", "the log ran on 8 ranks, the topology has 4 GPUs"},
        BadConfig{"ClusterLogOfMoreRanksThanTheTopology",
                  "topology: {gpu: h100-sxm, gpus_per_node: 4}\ncollectives_log: " TRAINSIM_SOURCE_DIR
                  "/reports/published/nccl-tests/nccl-h100sxm-8gpu-together-ring-nccl2262-all_reduce.log\n",
                  3, "collectives_log", "the log ran on 8 ranks, more than the topology's 4 GPUs"},
        BadConfig{"CollectivesWithoutTopology", "collectives: {op: all_reduce}\n", 2, "collectives",
                  "give topology: too"},
        BadConfig{"CollectivesUnknownOp", "topology: {preset: dgx-h100}\ncollectives: {op: all_to_all}\n", 3,
                  "collectives.op", "unknown collective 'all_to_all'"},
        BadConfig{"CollectivesBadSize", "topology: {preset: dgx-h100}\ncollectives: {max_bytes: 8X}\n", 3,
                  "collectives.max_bytes", "expected a byte count >= 1 such as 8, 64K, 128M or 8G"},
        BadConfig{"TopologyAndInterconnect",
                  "topology: {preset: dgx-h100}\ninterconnect: {bus_bandwidth_gbs: 100, latency_us: 5}\n"
                  "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n",
                  3,
                  "interconnect", "give topology: or interconnect:, not both"},
        // docs/FIT.md: gpu:, observations:, held_out:.
        BadConfig{"UnknownGpuListsTheCatalog", "gpu: a100\n", 2, "gpu",
                  "unknown GPU 'a100' (catalog "},
        BadConfig{"ObservationWithoutATime",
                  "observations:\n  - {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n", 3, "observations[0]",
                  "needs epoch_s or iteration_s"},
        BadConfig{"ObservationWithBothTimes",
                  "observations:\n  - {strategy: ddp, gpus: 1, batch_per_gpu: 32, epoch_s: 5,\n"
                  "     iteration_s: 0.1}\n",
                  4, "observations[0].iteration_s", "give epoch_s or iteration_s, not both"},
        BadConfig{"ObservationZeroTime",
                  "observations:\n  - {strategy: ddp, gpus: 1, batch_per_gpu: 32, epoch_s: 0}\n", 3,
                  "observations[0].epoch_s", "must be a measured time of at least 1e-09 s"},
        BadConfig{"ObservationDenormalTime",
                  "observations:\n  - {strategy: ddp, gpus: 1, batch_per_gpu: 32, iteration_s: 1e-320}\n", 3,
                  "observations[0].iteration_s", "at least 1e-09 s (1 ns), got '1e-320'"},
        BadConfig{"ObservationUnknownGpu",
                  "observations:\n  - {strategy: dp, gpus: 2, batch_per_gpu: 32, epoch_s: 9, gpu: v100}\n", 3,
                  "observations[0].gpu", "unknown GPU 'v100'"},
        BadConfig{"ObservationUnknownKey",
                  "observations:\n  - {strategy: ddp, gpus: 1, batch: 32, epoch_s: 9}\n", 3,
                  "observations[0].batch", "unknown key 'batch'"},
        BadConfig{"HeldOutWithoutObservations",
                  "held_out:\n  - {strategy: ddp, gpus: 1, batch_per_gpu: 32, epoch_s: 9}\n", 2, "held_out",
                  "give observations: too"},
        BadConfig{"UnknownTopLevelKeySuggestsClosest", "sweeps: {}\n", 2, "sweeps",
                  "unknown key 'sweeps' (did you mean 'sweep'?)"},
        BadConfig{"UnknownNestedKeySuggestsClosest",
                  "sweep:\n  strategy: ddp\n  gpu: [1]\n  batch_per_gpu: [32]\n", 4, "sweep.gpu",
                  "unknown key 'gpu' (did you mean 'gpus'?)"},
        BadConfig{"UnknownKeyFarFromAnyListsKnownKeys", "dataset: {images: 5}\n", 2,
                  "dataset.images", "unknown key 'images' (known keys: train_samples)"},
        BadConfig{"IntegerGivenText", "dataset: {train_samples: abc}\n", 2,
                  "dataset.train_samples", "expected an integer, got 'abc'"},
        // 2^63 - 1 samples once ended in "error: internal: cannot create std::vector larger than
        // max_size()": an epoch of 2.9e17 iterations.
        BadConfig{"TrainSamples2To63Minus1IsTooManyIterations",
                  "dataset: {train_samples: 9223372036854775807}\nsweep: {strategy: ddp, gpus: [1, 2], "
                  "batch_per_gpu: [64, 32]}\n",
                  2, "dataset.train_samples",
                  "9223372036854775807 samples make epochs of 288230376151711744 iterations per rank at "
                  "batch_per_gpu 32; at most 10000000 are simulated"},
        // The bound itself: 320,000,000 samples at batch 32 is 10^7 iterations and loads.
        BadConfig{"OneSampleOverTenMillionIterations",
                  "dataset: {train_samples: 320000001}\nsweep: {strategy: dp, gpus: 1, batch_per_gpu: 32}\n",
                  2, "dataset.train_samples", "make epochs of 10000001 iterations per rank"},
        // 2^31 - 1 GPUs once hung, and 10^5 DataParallel GPUs ran out of memory after a minute.
        BadConfig{"Gpus2To31Minus1IsMoreThanTheSimulatorTakes",
                  "sweep: {strategy: ddp, gpus: [2, 2147483647], batch_per_gpu: 32}\n", 2, "sweep.gpus[1]",
                  "at most 1048576 GPUs are simulated, got 2147483647"},
        // One machine's ranks are each simulated; beyond 4096 a topology's nodes are needed.
        BadConfig{"MoreThanOneMachineTakesWithoutATopology",
                  "sweep: {strategy: ddp, gpus: [8, 4097], batch_per_gpu: 32}\n", 2, "sweep.gpus[1]",
                  "at most 4096 GPUs on one machine are simulated (each rank is); more need a topology: of "
                  "nodes, got 4097"},
        BadConfig{"MoreGpusThanTheTopologysNodes",
                  "topology: {preset: dgx-h100, nodes: 2}\nsweep: {strategy: ddp, gpus: [16, 32], batch_per_gpu: 32}\n",
                  3, "sweep.gpus[1]", "32 GPUs are more than the topology's 2 nodes x 8 GPUs (give topology.nodes)"},
        BadConfig{"ScaleOutNeedsATopology",
                  "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\nscale_out: {gpus: [8]}\n", 3,
                  "scale_out.topology", "missing required key 'topology'"},
        BadConfig{"ScaleOutNeedsASweep", "scale_out: {topology: {preset: dgx-h100}, gpus: [8]}\n"
                  "topology: {preset: dgx-h100}\ncollectives: {}\n", 2, "scale_out",
                  "give sweep: too"},
        BadConfig{"ScaleOutUnknownKey",
                  "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n"
                  "scale_out: {topology: {preset: dgx-h100}, gpus: [8], strategy: dp}\n", 3,
                  "scale_out.strategy", "unknown key"},
        BadConfig{"MoreGpusPerNodeThanOneMachineTakes", "topology: {gpu: t4, gpus_per_node: 5000}\n", 2,
                  "topology.gpus_per_node", "at most 4096 GPUs per node are simulated"},
        // 2^31 - 1 loader workers once hung (10^8 already took 10 GB).
        BadConfig{"LoaderWorkers2To31Minus1IsMoreThanTheSimulatorTakes",
                  "loader: {workers: 2147483647}\nsweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\n", 2,
                  "loader.workers", "at most 1024 loader worker processes per rank are simulated, got 2147483647"},
        BadConfig{"IntegerGivenFraction",
                  "sweep:\n  strategy: ddp\n  gpus: [1, 2, 1.5]\n  batch_per_gpu: [32]\n", 4,
                  "sweep.gpus[2]", "expected an integer, got '1.5'"},
        BadConfig{"IntegerWithTrailingText",
                  "sweep:\n  strategy: ddp\n  gpus: [1]\n  batch_per_gpu:\n    - 32\n    - 12abc\n",
                  7, "sweep.batch_per_gpu[1]", "expected an integer, got '12abc'"},
        BadConfig{"QuotedNumberIsAString", "loader: {workers: \"2\"}\n", 2, "loader.workers",
                  "expected an integer, got the string \"2\""},
        BadConfig{"GpusOutOfIntRange",
                  "sweep:\n  strategy: ddp\n  gpus: [3000000000]\n  batch_per_gpu: [32]\n", 4,
                  "sweep.gpus[0]", "must be <= 2147483647"},
        BadConfig{"MissingSweepReportedAtTopMap", "model: resnet18-cifar\n", 1, "sweep",
                  "missing required key 'sweep'"},
        BadConfig{"MissingNestedKeyReportedAtParentKeyLine",
                  "dataset: {train_samples: 10}\nsweep:\n  strategy: ddp\n  batch_per_gpu: [32]\n",
                  3, "sweep.gpus", "missing required key 'gpus'"},
        BadConfig{"ZeroGpus", "sweep:\n  strategy: ddp\n  gpus: [0]\n  batch_per_gpu: [32]\n", 4,
                  "sweep.gpus[0]", "must be >= 1, got 0"},
        BadConfig{"NegativeBatch",
                  "sweep:\n  strategy: ddp\n  gpus: [1]\n  batch_per_gpu: [32, -8]\n", 5,
                  "sweep.batch_per_gpu[1]", "must be >= 1, got -8"},
        BadConfig{"ZeroTrainSamples", "dataset:\n  train_samples: 0\n", 3,
                  "dataset.train_samples", "must be >= 1, got 0"},
        BadConfig{"NegativeWorkers", "loader: {workers: -1}\n", 2, "loader.workers",
                  "must be >= 0, got -1"},
        BadConfig{"UnknownStrategy",
                  "sweep:\n  strategy: [ddp, fsdp]\n  gpus: [1]\n  batch_per_gpu: [32]\n", 3,
                  "sweep.strategy[1]", "unknown strategy 'fsdp' (expected dp or ddp)"},
        BadConfig{"DuplicateStrategy",
                  "sweep:\n  strategy: [ddp, dp, ddp]\n  gpus: [1]\n  batch_per_gpu: [32]\n", 3,
                  "sweep.strategy[2]", "duplicate value 'ddp'"},
        BadConfig{"DuplicateGpus",
                  "sweep:\n  strategy: ddp\n  gpus: [1, 2, 2]\n  batch_per_gpu: [32]\n", 4,
                  "sweep.gpus[2]", "duplicate value '2'"},
        BadConfig{"EmptyList", "sweep:\n  strategy: ddp\n  gpus: [1]\n  batch_per_gpu: []\n", 5,
                  "sweep.batch_per_gpu", "must list at least one value"},
        BadConfig{"EmptyValue", "sweep:\n  strategy:\n  gpus: [1]\n  batch_per_gpu: [32]\n", 3,
                  "sweep.strategy", "expected a list, got nothing (null)"},
        BadConfig{"ListGivenMap",
                  "sweep:\n  strategy: ddp\n  gpus: {a: 1}\n  batch_per_gpu: [32]\n", 4,
                  "sweep.gpus", "expected a list, got a map"},
        BadConfig{"SectionGivenScalar", "loader: 4\n", 2, "loader", "expected a map, got '4'"},
        BadConfig{"DuplicateKey", "model: resnet18-cifar\nmodel: resnet18-imagenet\n", 3,
                  "model", "duplicate key 'model'"},
        // Any model the profile holds (issue 14); one trainsim does not know needs its epoch, and
        // a fit needs a model whose layers it knows.
        BadConfig{"UnknownModelWithoutItsDataSet", "model: resnet50\n", 2, "model",
                  "model 'resnet50' is not one trainsim knows the data set of: give its epoch as "
                  "dataset: {train_samples: N}"},
        BadConfig{"UnknownModelInAFit",
                  "model: resnet50\ndataset: {train_samples: 1000}\n"
                  "observations:\n  - {strategy: ddp, gpus: 1, batch_per_gpu: 32, epoch_s: 5}\n",
                  2, "model", "unknown model 'resnet50': a fit (observations:) needs a model whose layers"},
        BadConfig{"EmptyModelName", "model: ''\n", 2, "model", "must name a model"},
        BadConfig{"UnknownLargeBatchModel",
                  "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\nlarge_batch: {model: resnet50}\n", 3,
                  "large_batch.model",
                  "unknown model 'resnet50' (expected resnet18-cifar, resnet18-imagenet, fashion-cnn or fashion-cnn-gap)"},
        // The interconnect cases put a valid sweep (lines 2-5) first; the block starts on line 6.
        BadConfig{"InterconnectNeedsBandwidth",
                  "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n\n\n\n"
                  "interconnect:\n  latency_us: 5\n",
                  6, "interconnect.bus_bandwidth_gbs", "missing required key 'bus_bandwidth_gbs'"},
        BadConfig{"InterconnectZeroBandwidth",
                  "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n\n\n\n"
                  "interconnect: {bus_bandwidth_gbs: 0, latency_us: 5}\n",
                  6, "interconnect.bus_bandwidth_gbs", "must be between 0.001 and 1e6 GB/s, got '0'"},
        // A latency of 10^13 us once overflowed the simulator's clock (an internal error; found by
        // scripts/mutate-inputs.py), as a bandwidth of 1e-300 GB/s would.
        BadConfig{"InterconnectLatencyBeyondASecond",
                  "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "interconnect: {bus_bandwidth_gbs: 100, latency_us: 10000000000001}\n",
                  3, "interconnect.latency_us", "must be at most 1e6 us (1 s)"},
        BadConfig{"InterconnectBandwidthOfADenormal",
                  "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "interconnect: {bus_bandwidth_gbs: 1e-300, latency_us: 5}\n",
                  3, "interconnect.bus_bandwidth_gbs", "must be between 0.001 and 1e6 GB/s"},
        BadConfig{"BoolGivenWord",
                  "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n\n\n\n"
                  "interconnect: {bus_bandwidth_gbs: 1, latency_us: 5, override_measured: maybe}\n",
                  6, "interconnect.override_measured", "expected true or false, got 'maybe'"},
        // The large-batch cases put a valid one-line sweep on line 2; their YAML starts on line 3.
        BadConfig{"UnknownLrRule", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "lr_rule: cosine\n", 3, "lr_rule",
                  "unknown lr_rule 'cosine' (expected constant, linear, linear-warmup or sqrt)"},
        BadConfig{"LrRuleGivenList", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "lr_rule: [linear, sqrt]\n", 3, "lr_rule", "expected a string, got a list"},
        BadConfig{"LargeBatchUnknownKey", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch:\n  epoch: 5\n", 4, "large_batch.epoch",
                  "unknown key 'epoch' (did you mean 'epochs'?)"},
        BadConfig{"LargeBatchZeroEpochs", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch: {epochs: 0}\n", 3, "large_batch.epochs",
                  "must be >= 1, got 0"},
        BadConfig{"LargeBatchFractionalEpochs", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch: {epochs: 2.5}\n", 3, "large_batch.epochs",
                  "expected an integer"},
        BadConfig{"LargeBatchZeroTarget", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch:\n  epochs: 5\n  target_loss: 0\n", 5,
                  "large_batch.target_loss", "must be > 0"},
        BadConfig{"LargeBatchTargetGivenText", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch: {target_loss: low}\n", 3,
                  "large_batch.target_loss", "expected a number, got 'low'"},
        BadConfig{"LargeBatchTargetAccuracyInPercent", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch:\n  target_accuracy: 85\n", 4,
                  "large_batch.target_accuracy", "a fraction in (0, 1] (85% is 0.85), got '85'"},
        BadConfig{"LargeBatchTargetAccuracyZero", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch: {target_accuracy: 0}\n", 3,
                  "large_batch.target_accuracy", "a fraction in (0, 1]"},
        BadConfig{"LargeBatchUnknownPastBound", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch: {past_bound: edge}\n", 3,
                  "large_batch.past_bound", "unknown past_bound 'edge' (expected from-start, no-progress or edge-of-stability)"},
        BadConfig{"LargeBatchPaceProbeGivenWord", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch: {pace_probe: yes}\n", 3, "large_batch.pace_probe", "expected true or false, got 'yes'"},
        BadConfig{"LargeBatchGivenScalar", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "large_batch: 5\n", 3, "large_batch", "expected a map, got '5'"},
        BadConfig{"SyncBatchnormGivenWord", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "sync_batchnorm: yes\n", 3, "sync_batchnorm",
                  "expected true or false, got 'yes'"},
        BadConfig{"UnknownTrainer", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "trainer: tensorflow\n", 3, "trainer",
                  "unknown trainer 'tensorflow' (expected pytorch or trainsim)"},
        BadConfig{"UnknownPrecision", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "precision: fp16\n", 3, "precision",
                  "unknown precision 'fp16' (expected fp32, bf16-amp)"},
        BadConfig{"Bf16WithTheRoofline", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "gpu: h100-sxm\nprecision: bf16-amp\n", 4, "precision",
                  "bf16-amp is predicted from a profile measured in it (measure --precision), not with gpu: or "
                  "observations: (the roofline prices fp32 only)"},
        BadConfig{"UnknownMemoryFormat", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "memory_format: nhwc\n", 3, "memory_format",
                  "unknown memory format 'nhwc' (expected nchw, channels_last)"},
        BadConfig{"ChannelsLastWithTheRoofline", "sweep: {strategy: ddp, gpus: 2, batch_per_gpu: 32}\n"
                  "gpu: h100-sxm\nmemory_format: channels_last\n", 4, "memory_format",
                  "channels_last is predicted from a profile measured in it (measure --memory-format), not "
                  "with gpu: or observations: (the roofline knows no memory format)"},
        BadConfig{"PersistentWorkersGivenWord", "loader: {workers: 2, persistent_workers: always}\n", 2,
                  "loader.persistent_workers", "expected true or false, got 'always'"},
        BadConfig{"WarmupNegative", "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\nlarge_batch: {warmup_epochs: -1}\n",
                  3, "large_batch.warmup_epochs", ""},
        BadConfig{"WarmupTooLong", "sweep: {strategy: ddp, gpus: 1, batch_per_gpu: 32}\nlarge_batch: {warmup_epochs: 1e9}\n",
                  3, "large_batch.warmup_epochs", "at most 1000 epochs"},
        BadConfig{"TestPassZeroBatch", "test_pass: {samples: 100, batch: 0}\n", 2, "test_pass.batch",
                  "must be >= 1, got 0"},
        BadConfig{"TestPassUnknownKey", "test_pass: {images: 100}\n", 2, "test_pass.images",
                  "unknown key 'images'"},
        BadConfig{"TestPassGivenWord", "test_pass: sometimes\n", 2, "test_pass",
                  "expected true or false, got 'sometimes'"}),
    [](const ::testing::TestParamInfo<BadConfig>& info) { return std::string(info.param.name); });

// Cases that need their own first line (the shared `profile:` line would not show them).
TEST_F(ConfigTest, TopLevelNotAMap) {
  const std::string config = write("sweep.yaml", "- profile.yaml\n- 4\n");
  const InputError e = load_error(config);
  EXPECT_EQ(e.line(), 1);
  EXPECT_EQ(e.key(), "");
  EXPECT_NE(e.message().find("must be a map"), std::string::npos) << e.what();
}

TEST_F(ConfigTest, EmptyFileIsNotAMap) {
  const std::string config = write("sweep.yaml", "");
  const InputError e = load_error(config);
  EXPECT_EQ(e.line(), 1);
  EXPECT_NE(e.message().find("got nothing (null)"), std::string::npos) << e.what();
}

TEST_F(ConfigTest, ProfileThatDoesNotExistIsReportedAtProfileLine) {
  const std::string config = write("configs/sweep.yaml",
                                   std::string("model: resnet18-cifar\n"
                                               "profile: ../reports/none/profile.yaml\n") +
                                       kGoodSweep);
  const InputError e = load_error(config);
  EXPECT_EQ(e.file(), config);
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.key(), "profile");
  // The message names the resolved path: configs/../reports/none -> reports/none.
  const std::string resolved = (dir_ / "reports/none/profile.yaml").string();
  EXPECT_NE(e.message().find(resolved + " does not exist"), std::string::npos) << e.what();
}

TEST_F(ConfigTest, MissingProfileKey) {
  const std::string config = write("sweep.yaml", std::string("\n") + kGoodSweep);
  const InputError e = load_error(config);
  EXPECT_EQ(e.line(), 2);  // the top map starts at `sweep:` on line 2
  EXPECT_EQ(e.key(), "profile");
  EXPECT_EQ(e.message(), "missing required key 'profile'");
}

}  // namespace
}  // namespace trainsim
