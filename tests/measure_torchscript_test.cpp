// measure torchscript: a tiny TorchScript module written by Debian's PyTorch during the test,
// profiled through the library and through the measure binary, then simulated.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "format/errors.h"
#include "format/profile_io.h"
#include "temp_dir.h"
#include "torchscript/script_profile.h"
#include "usage_error.h"

namespace trainsim::measure::torchscript {
namespace {

namespace fs = std::filesystem;

// A sequential network: its gradients become ready in the reverse of its groups' order.
constexpr const char* kWriter = R"(import sys, torch, torch.nn as nn
torch.manual_seed(0)
class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                    nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Linear(8 * 4 * 4, 5)
    def forward(self, x):
        return self.head(torch.flatten(self.blocks(x), 1))
class NoParameters(nn.Module):
    def forward(self, x):
        return x.flatten(1)
def twice(x):
    return x * 2
out = sys.argv[1]
torch.jit.save(torch.jit.script(Tiny()), out + "/tiny.pt")
torch.jit.save(torch.jit.script(NoParameters()), out + "/no_parameters.pt")
torch.jit.script(twice).save(out + "/function.pt")
)";

int run(const std::string& command) { return std::system(command.c_str()); }

class TorchScriptTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("trainsim-torchscript");
    const std::string python = TRAINSIM_TORCH_PYTHON;
    if (python.empty()) return;
    std::ofstream(dir_->path() / "write.py") << kWriter;
    ok_ = run(python + " " + (dir_->path() / "write.py").string() + " " + dir_->path().string()) == 0;
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (!ok_) GTEST_SKIP() << "no Python with torch to write the TorchScript files (" << TRAINSIM_TORCH_PYTHON << ")";
  }
  static ScriptModelOptions tiny() {
    ScriptModelOptions o;
    o.path = (dir_->path() / "tiny.pt").string();
    o.input_shape = {3, 8, 8};
    o.num_classes = 5;
    return o;
  }
  static testing::TempDir* dir_;
  static bool ok_;
};
testing::TempDir* TorchScriptTest::dir_ = nullptr;
bool TorchScriptTest::ok_ = false;

TEST(TorchScriptGroups, KeyIsTheModulePathUpToTheFirstContainerIndex) {
  EXPECT_EQ(group_key("layer1.0.conv1.weight"), "layer1.0");
  EXPECT_EQ(group_key("features.3.conv.0.0.weight"), "features.3");
  EXPECT_EQ(group_key("encoder.layers.2.self_attn.in_proj_weight"), "encoder.layers.2");
  EXPECT_EQ(group_key("conv1.weight"), "conv1");
  EXPECT_EQ(group_key("patch_embed.proj.weight"), "patch_embed");
  EXPECT_EQ(group_key("cls_token"), "cls_token");
}

TEST(TorchScriptGroups, InputShape) {
  EXPECT_EQ(parse_input_shape("3x32x32"), (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(parse_input_shape("64x128"), (std::vector<int64_t>{64, 128}));
  for (const char* bad : {"", "3x", "x3", "3xx2", "3x0x2", "3x-1", "a", "3x32x32x1x1x1x1x1x1"}) {
    EXPECT_THROW(parse_input_shape(bad), UsageError) << bad;
  }
}

TEST_F(TorchScriptTest, GroupsAndReadyOrderFollowTheNetwork) {
  ScriptModel model(tiny(), Device{});
  EXPECT_EQ(model.group_keys(), (std::vector<std::string>{"blocks.0", "blocks.1", "blocks.3", "head"}));
  const GroupSplit split = split_by_group(model, torch::randn({4, 3, 8, 8}), Device{});
  EXPECT_EQ(split.forward_order, (std::vector<size_t>{0, 1, 2, 3}));
  // Every parameter's gradient became ready once, the groups' in reverse forward order.
  ASSERT_EQ(split.ready_order.size(), model.parameters().size());
  std::vector<size_t> groups;
  for (size_t p : split.ready_order) {
    const size_t g = model.group_of_parameter()[p];
    if (groups.empty() || groups.back() != g) groups.push_back(g);
  }
  EXPECT_EQ(groups, (std::vector<size_t>{3, 2, 1, 0}));
  EXPECT_EQ(std::set<size_t>(split.ready_order.begin(), split.ready_order.end()).size(), model.parameters().size());
  for (size_t g = 0; g < 4; ++g) {
    EXPECT_GT(split.forward_s[g], 0) << g;
    EXPECT_GT(split.backward_s[g], 0) << g;
  }
  EXPECT_EQ(split.output_shape[0], (std::vector<int64_t>{4, 8, 8}));
  EXPECT_EQ(split.output_shape[3], (std::vector<int64_t>{5}));

  const ModelProfile d = model.describe("tiny", split.forward_order);
  EXPECT_EQ(d.parameters, 3 * 4 * 9 + 4 + 4 + 4 + 4 * 8 * 9 + 8 + 128 * 5 + 5);
  EXPECT_EQ(d.param_bytes(), 4 * d.parameters);
  EXPECT_EQ(d.input_bytes_per_sample, 3 * 8 * 8 * 4);
  ASSERT_EQ(d.layers.size(), 4u);
  EXPECT_EQ(d.layers[1].buffer_bytes, 4 * 4 + 4 * 4 + 8);  // running mean, var, num_batches_tracked
  EXPECT_EQ(d.layers[3].params[0].name, "head.weight");
}

TEST_F(TorchScriptTest, BatchTimingsAddUp) {
  ScriptModel model(tiny(), Device{});
  const ScriptBatchTimings t = measure_script_batch(model, {0, 1, 2, 3}, 4, Device{}, Repetition{1, 3}, 0);
  ASSERT_EQ(t.forward_s.size(), 4u);
  ASSERT_EQ(t.backward_s.size(), 4u);
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_GT(t.forward_s[l], 0);
    EXPECT_GT(t.backward_s[l], 0);
  }
  EXPECT_GT(t.loss_s, 0);
  EXPECT_GT(t.optimizer_s, 0);
  EXPECT_GT(t.iteration_s, 0);
  EXPECT_GT(t.peak_memory_bytes, 0);
  EXPECT_EQ(t.ready_order.size(), model.parameters().size());
}

TEST_F(TorchScriptTest, BadModulesAreOneLineErrors) {
  ScriptModelOptions o = tiny();
  o.path = (dir_->path() / "not_torchscript.pt").string();
  std::ofstream(o.path) << "not a zip archive";
  try {
    ScriptModel model(o, Device{});
    FAIL() << "loaded a text file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a TorchScript module"), std::string::npos) << e.what();
  }
  o.path = (dir_->path() / "function.pt").string();
  EXPECT_THROW(ScriptModel(o, Device{}), InputError);
  o.path = (dir_->path() / "no_parameters.pt").string();
  try {
    ScriptModel model(o, Device{});
    FAIL() << "a module without parameters";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no trainable parameters"), std::string::npos) << e.what();
  }
  // The wrong input shape and the wrong class count: one line each, naming the file.
  o = tiny();
  ScriptModel model(o, Device{});
  try {
    model.forward(torch::randn({2, 3, 8}));
    FAIL() << "forward accepted a 3-d input";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("forward on an input of shape 2x3x8 failed"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  o.num_classes = 7;
  ScriptModel seven(o, Device{});
  EXPECT_THROW(seven.check_output(seven.forward(torch::randn({2, 3, 8, 8})), 2), InputError);
}

// The binary: the model added to a copy of the bundled profile, then simulated by name.
TEST_F(TorchScriptTest, MeasureAddsTheModelAndSimulatePredictsIt) {
  const fs::path profile = dir_->path() / "profile.yaml";
  fs::copy_file(fs::path(TRAINSIM_SOURCE_DIR) / "reports/cpu-epyc-2c/profile.yaml", profile,
                fs::copy_options::overwrite_existing);
  const std::string measure = std::string(TRAINSIM_BIN_DIR) + "/measure torchscript --model " +
                              (dir_->path() / "tiny.pt").string() + " --input-shape 3x8x8 --classes 5 --batches 4,8 " +
                              "--threads 1 --warmup 2 --repeats 5 --out " + profile.string();
  ASSERT_EQ(run(measure + " 2>/dev/null >/dev/null"), 0) << measure;
  const Profile loaded = load_profile(profile.string());
  ASSERT_EQ(loaded.models.count("tiny"), 1u);
  ASSERT_EQ(loaded.models.count("resnet18-cifar"), 1u);  // the rest of the profile is kept
  const ModelProfile& m = loaded.models.at("tiny");
  EXPECT_EQ(m.batches, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(m.layers.size(), 4u);
  EXPECT_EQ(m.source, "torchscript:" + (dir_->path() / "tiny.pt").string());

  const fs::path config = dir_->path() / "tiny.yaml";
  std::ofstream(config) << "profile: profile.yaml\nmodel: tiny\ntrainer: trainsim\ndataset: {train_samples: 512}\n"
                           "loader: {workers: 0}\nsweep:\n  strategy: [ddp]\n  gpus: [1, 2]\n  batch_per_gpu: [4, 8, 16]\n";
  const fs::path out = dir_->path() / "out";
  const std::string simulate = std::string(TRAINSIM_BIN_DIR) + "/simulate " + config.string() + " -q --out " + out.string();
  ASSERT_EQ(run(simulate + " >/dev/null"), 0) << simulate;
  std::ifstream csv(out / "predictions.csv");
  std::string header;
  std::getline(csv, header);
  int rows = 0;
  for (std::string line; std::getline(csv, line);) rows += line.empty() ? 0 : 1;
  EXPECT_EQ(rows, 6);
}

}  // namespace
}  // namespace trainsim::measure::torchscript
