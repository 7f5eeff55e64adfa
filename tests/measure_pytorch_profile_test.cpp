// The profile's pytorch section on measure's side (measure/profiler/pytorch_profile.h): the
// command profile_torch.py is run with, its JSON read into PytorchProfile (and every bad key named with
// the file), and the --pytorch choice of interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "format/errors.h"
#include "profiler/pytorch_profile.h"
#include "usage_error.h"

namespace trainsim::measure::profiler {
namespace {

// What profile_torch.py writes (docs/PYTORCH.md), with first_batch_s and the device fields measure
// does not keep.
const char* const kGood = R"({"framework": "pytorch", "torch": "1.13.0a0", "torchvision": "0.14.1a0",
  "python": "3.11.2", "device": "cpu", "device_name": "AMD EPYC", "threads": 1, "data": "synthetic",
  "probe_s": 0.91,
  "loader": {"batch": 128, "points": [
     {"workers": 0, "samples_per_s": 1500.5, "first_batch_s": 0.08, "startup_s": 0.0},
     {"workers": 2, "samples_per_s": 2900.0, "first_batch_s": 0.4, "startup_s": 0.31}]},
  "models": {"resnet18-cifar": {"batches": [32, 128], "iteration_s": [0.6, 2.2],
     "ddp_iteration_s": [0.65, 2.3], "minor_faults": [1200, 555000], "oom_batch": null,
     "fork": {"workers": 1, "points": [
       {"ranks": 1, "iter_s": [0.016, 0.02], "first_batch_s": [0.05, 0.07], "cow_s": [0.15, 0.0]},
       {"ranks": 2, "iter_s": [0.018, 0.021], "first_batch_s": [0.06, 0.09], "cow_s": [0.42, 0.6]}]},
     "forward_calls": 88, "replicate_s": 0.00038}},
  "gil": {"threads": [1, 2, 4], "depth": 64, "probes": [
     {"name": "linear16", "width": 16, "batch": 8, "calls": 128, "forward_s": [0.0005, 0.0031, 0.011]},
     {"name": "linear64", "width": 64, "batch": 32, "calls": 128, "forward_s": [0.004, 0.006, 0.012]}]}})";

std::string error_of(const std::string& text) {
  try {
    parse_pytorch_profile(text, "out.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// kGood with `from` replaced by `to` (once).
std::string edited(const std::string& from, const std::string& to) {
  std::string text = kGood;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(PytorchProfile, ReadsEveryField) {
  const PytorchProfile p = parse_pytorch_profile(kGood, "out.json");
  EXPECT_EQ(p.torch, "1.13.0a0");
  EXPECT_EQ(p.torchvision, "0.14.1a0");
  EXPECT_EQ(p.python, "3.11.2");
  EXPECT_EQ(p.threads, 1);
  EXPECT_DOUBLE_EQ(p.probe_s, 0.91);
  EXPECT_EQ(p.loader.data, "synthetic");
  EXPECT_EQ(p.loader.batch, 128);
  ASSERT_EQ(p.loader.points.size(), 2u);
  EXPECT_EQ(p.loader.points[1].workers, 2);
  EXPECT_DOUBLE_EQ(p.loader.points[1].samples_per_s, 2900.0);
  EXPECT_EQ(p.loader.points[1].startup_s, std::optional<double>(0.31));
  ASSERT_EQ(p.models.count("resnet18-cifar"), 1u);
  const PytorchLoop& loop = p.models.at("resnet18-cifar");
  EXPECT_EQ(loop.batches, (std::vector<int64_t>{32, 128}));
  EXPECT_EQ(loop.iteration_s, (std::vector<double>{0.6, 2.2}));
  EXPECT_EQ(loop.ddp_iteration_s, (std::vector<double>{0.65, 2.3}));
  EXPECT_EQ(loop.minor_faults, (std::vector<double>{1200, 555000}));
  EXPECT_FALSE(loop.oom_batch.has_value());
  ASSERT_TRUE(loop.fork.has_value());
  EXPECT_EQ(loop.fork->workers, 1);
  ASSERT_EQ(loop.fork->points.size(), 2u);
  EXPECT_EQ(loop.fork->points[1].ranks, 2);
  EXPECT_EQ(loop.fork->points[1].iter_s, (std::vector<double>{0.018, 0.021}));
  EXPECT_EQ(loop.fork->points[0].first_batch_s, (std::vector<double>{0.05, 0.07}));
  EXPECT_EQ(loop.fork->points[0].cow_s, (std::vector<double>{0.15, 0.0}));  // 0 is a valid excess
  EXPECT_EQ(loop.forward_calls, std::optional<int64_t>(88));
  EXPECT_EQ(loop.replicate_s, std::optional<double>(0.00038));
  ASSERT_TRUE(p.gil.has_value());
  EXPECT_EQ(p.gil->threads, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(p.gil->depth, 64);
  ASSERT_EQ(p.gil->probes.size(), 2u);
  EXPECT_EQ(p.gil->probes[1].name, "linear64");
  EXPECT_EQ(p.gil->probes[1].width, 64);
  EXPECT_EQ(p.gil->probes[1].batch, 32);
  EXPECT_EQ(p.gil->probes[1].calls, 128);
  EXPECT_EQ(p.gil->probes[0].forward_s, (std::vector<double>{0.0005, 0.0031, 0.011}));
  EXPECT_EQ(parse_pytorch_profile(edited("\"oom_batch\": null", "\"oom_batch\": 512"), "f").models.at(
                "resnet18-cifar").oom_batch,
            std::optional<int64_t>(512));
}

TEST(PytorchProfile, BadContentNamesTheFileAndTheKey) {
  EXPECT_EQ(error_of(edited("\"samples_per_s\": 2900.0", "\"samples_per_s\": \"fast\"")),
            "out.json: loader.points[1].samples_per_s: expected a number > 0, found \"fast\"");
  EXPECT_EQ(error_of(edited("\"probe_s\": 0.91,", "")), "out.json: probe_s: missing");
  EXPECT_EQ(error_of(edited("\"threads\": 1", "\"threads\": 0")),
            "out.json: threads: expected an integer >= 1, found 0");
  EXPECT_EQ(error_of(edited("\"ddp_iteration_s\": [0.65, 2.3]", "\"ddp_iteration_s\": [0.65]")),
            "out.json: models.resnet18-cifar.ddp_iteration_s: 1 values for 2 batches");
  EXPECT_EQ(error_of(edited("\"batches\": [32, 128]", "\"batches\": [128, 32]")),
            "out.json: models.resnet18-cifar.batches[1]: batches must be strictly ascending");
  EXPECT_EQ(error_of(edited("\"workers\": 2", "\"workers\": 0")),
            "out.json: loader.points[1].workers: worker counts must be strictly ascending");
  EXPECT_EQ(error_of(edited("\"data\": \"synthetic\"", "\"data\": \"imagenet\"")),
            "out.json: data: expected \"synthetic\" or \"cifar10\", found \"imagenet\"");
  EXPECT_EQ(error_of(edited("\"framework\": \"pytorch\"", "\"framework\": \"jax\"")),
            "out.json: framework: expected \"pytorch\", found \"jax\"");
  EXPECT_EQ(error_of(edited("\"startup_s\": 0.31", "\"startup_s\": -1")),
            "out.json: loader.points[1].startup_s: expected a number >= 0, found -1");
  EXPECT_EQ(error_of(edited("{\"ranks\": 1, \"iter_s\"", "{\"ranks\": 3, \"iter_s\"")),
            "out.json: models.resnet18-cifar.fork.points[0].ranks: ranks must rise strictly from 1");
  EXPECT_EQ(error_of(edited("\"cow_s\": [0.42, 0.6]", "\"cow_s\": [0.42]")),
            "out.json: models.resnet18-cifar.fork.points[1].cow_s: 1 values for 2 batches");
  EXPECT_EQ(error_of(edited("\"cow_s\": [0.42, 0.6]", "\"cow_s\": [0.42, -0.1]")),
            "out.json: models.resnet18-cifar.fork.points[1].cow_s[1]: expected a number >= 0, found -0.1");
  EXPECT_EQ(error_of(edited("\"threads\": [1, 2, 4]", "\"threads\": [1, 4]")),
            "out.json: gil.threads: expected 1, 2 and any more, found [1,4]");
  EXPECT_EQ(error_of(edited("\"forward_s\": [0.004, 0.006, 0.012]", "\"forward_s\": [0.004, 0.006]")),
            "out.json: gil.probes[1].forward_s: 2 values for 3 thread counts (gil.threads)");
  EXPECT_EQ(error_of(edited("\"forward_s\": [0.004, 0.006, 0.012]", "\"forward_s\": [0.004, 0, 0.012]")),
            "out.json: gil.probes[1].forward_s[1]: expected a number > 0, found 0");
  EXPECT_EQ(error_of(edited("\"calls\": 128, \"forward_s\": [0.004", "\"calls\": 0, \"forward_s\": [0.004")),
            "out.json: gil.probes[1].calls: expected an integer >= 1, found 0");
  EXPECT_EQ(error_of(edited("\"forward_calls\": 88", "\"forward_calls\": 100000000")),
            "out.json: models.resnet18-cifar.forward_calls: more than 10^7 calls in one forward is not a model's, "
            "found 100000000");
  EXPECT_EQ(error_of(edited("\"minor_faults\": [1200, 555000]", "\"minor_faults\": [1200]")),
            "out.json: models.resnet18-cifar.minor_faults: 1 values for 2 batches");
  EXPECT_EQ(error_of(edited("\"minor_faults\": [1200, 555000]", "\"minor_faults\": [1200, -5]")),
            "out.json: models.resnet18-cifar.minor_faults[1]: expected a number >= 0, found -5");
  EXPECT_EQ(error_of(edited("\"replicate_s\": 0.00038", "\"replicate_s\": -1")),
            "out.json: models.resnet18-cifar.replicate_s: expected a number >= 0, found -1");
  EXPECT_EQ(error_of("[1, 2]"), "out.json: expected a JSON object, found [1,2]");
  // Not JSON at all: one line naming the file.
  const std::string garbage = error_of("{\"torch\": ");
  EXPECT_EQ(garbage.rfind("out.json: not JSON: ", 0), 0u) << garbage;
  EXPECT_EQ(garbage.find('\n'), std::string::npos) << garbage;
}

// The DataLoader at other batches (profile_torch.py --loader-batch B,B2,...): loader.at_batches.
TEST(PytorchProfile, ReadsTheLoaderAtOtherBatches) {
  const std::string at = R"(, "at_batches": [
     {"batch": 512, "points": [{"workers": 0, "samples_per_s": 1400.0, "first_batch_s": 0.3, "startup_s": 0.0},
                               {"workers": 2, "samples_per_s": 3500.0, "first_batch_s": 0.6, "startup_s": 0.2}]},
     {"batch": 2048, "points": [{"workers": 2, "samples_per_s": 3600.0, "first_batch_s": 2.1, "startup_s": 0.2}]}]},)";
  const std::string text = edited("\"startup_s\": 0.31}]},", "\"startup_s\": 0.31}]" + at);
  const PytorchProfile p = parse_pytorch_profile(text, "out.json");
  ASSERT_EQ(p.loader.at_batches.size(), 2u);
  EXPECT_EQ(p.loader.at_batches[0].batch, 512);
  ASSERT_EQ(p.loader.at_batches[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(p.loader.at_batches[0].points[1].samples_per_s, 3500.0);
  EXPECT_FALSE(p.loader.at_batches[0].points[1].startup_s.has_value());  // the main batch's is used
  EXPECT_EQ(p.loader.at_batches[1].batch, 2048);
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  EXPECT_EQ(error_of(with("\"batch\": 2048", "\"batch\": 256")),
            "out.json: loader.at_batches[1].batch: batches must be strictly ascending and not loader.batch");
  EXPECT_EQ(error_of(with("\"batch\": 512", "\"batch\": 128")),
            "out.json: loader.at_batches[0].batch: batches must be strictly ascending and not loader.batch");
}

TEST(PytorchProfile, MissingFileIsAnInputError) {
  EXPECT_THROW(read_pytorch_profile("/nonexistent/trainsim/pytorch.json"), InputError);
}

TEST(PytorchProfile, CommandCarriesTheProfilesSettings) {
  PytorchRequest q;
  q.python = "/usr/bin/python3";
  q.script = "/src/measure/pytorch/profile_torch.py";
  q.data_dir = "/tmp/data";
  q.device = "cpu";
  q.threads = 2;
  q.batches = {32, 64};
  q.models = {"resnet18-cifar"};
  q.warmup = 1;
  q.repeats = 3;
  q.loader_batch = 128;
  q.loader_workers = {0, 1, 2};
  q.fork_ranks = {1, 2};
  q.out = "/tmp/out.json";
  EXPECT_EQ(pytorch_profile_command(q),
            (std::vector<std::string>{"/usr/bin/python3", "/src/measure/pytorch/profile_torch.py", "--data", "/tmp/data",
                                      "--device", "cpu", "--threads", "2", "--batches", "32,64", "--models",
                                      "resnet18-cifar", "--warmup", "1", "--repeats", "3", "--loader-batch", "128",
                                      "--loader-workers", "0,1,2", "--fork-ranks", "1,2", "--out",
                                      "/tmp/out.json"}));
  // The loader at other batches too (the main batch first, not twice); the loader alone.
  q.loader_at_batches = {32, 128, 512};
  q.loader_only = true;
  const std::vector<std::string> command = pytorch_profile_command(q);
  EXPECT_EQ(command[16], "--loader-batch");
  EXPECT_EQ(command[17], "128,32,512");
  EXPECT_NE(std::find(command.begin(), command.end(), "--loader-only"), command.end());
  EXPECT_EQ(std::find(command.begin(), command.end(), "--no-gil"), command.end());
  // Neither fork nor GIL measurement (measure --quick): --no-fork instead of --fork-ranks, --no-gil.
  q.fork_ranks.clear();
  q.gil = false;
  const std::vector<std::string> quick = pytorch_profile_command(q);
  EXPECT_NE(std::find(quick.begin(), quick.end(), "--no-fork"), quick.end());
  EXPECT_EQ(std::find(quick.begin(), quick.end(), "--fork-ranks"), quick.end());
  EXPECT_NE(std::find(quick.begin(), quick.end(), "--no-gil"), quick.end());
}

bool none_has_torch(const std::string&) { return false; }
bool only_path_python3_has_torch(const std::string& python) { return python == "python3"; }
bool all_have_torch(const std::string&) { return true; }

TEST(PytorchProfile, ChoosesTheInterpreter) {
  std::string note;
  EXPECT_FALSE(choose_pytorch_python("off", note, all_have_torch).has_value());
  EXPECT_TRUE(note.empty());
  // auto: /usr/bin/python3 first, then python3 on PATH.
  EXPECT_EQ(choose_pytorch_python("auto", note, all_have_torch), std::optional<std::string>("/usr/bin/python3"));
  EXPECT_EQ(choose_pytorch_python("auto", note, only_path_python3_has_torch), std::optional<std::string>("python3"));
  // auto without one: a note, no section, no error.
  EXPECT_FALSE(choose_pytorch_python("auto", note, none_has_torch).has_value());
  EXPECT_NE(note.find("no Python with torch and torchvision"), std::string::npos) << note;
  // An explicit interpreter that cannot import torch is an error.
  EXPECT_EQ(choose_pytorch_python("/opt/py/bin/python", note, all_have_torch),
            std::optional<std::string>("/opt/py/bin/python"));
  try {
    choose_pytorch_python("/opt/py/bin/python", note, none_has_torch);
    ADD_FAILURE() << "accepted an interpreter without torch";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--pytorch /opt/py/bin/python: cannot run it or it cannot import torch and torchvision");
  }
}

TEST(PytorchProfile, PythonWithoutTorchIsDetected) {
  EXPECT_FALSE(python_has_torch("/nonexistent/trainsim/python3"));  // cannot start: 127
  EXPECT_FALSE(python_has_torch("false"));                          // runs, fails
}

}  // namespace
}  // namespace trainsim::measure::profiler
