#include "torchscript/torchscript_cli.h"

#include <boost/program_options.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli_util.h"
#include "comm/communicator.h"
#include "data/cifar.h"
#include "device.h"
#include "format/errors.h"
#include "format/profile_io.h"
#include "launch.h"
#include "machine.h"
#include "profiler/host_contention.h"
#include "profiler/pytorch_profile.h"
#include "torchscript/script_profile.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

po::options_description torchscript_flags() {
  po::options_description d("measure torchscript: profile a TorchScript module (docs/ANY_MODEL.md)");
  d.add_options()
      ("help,h", "print this help and exit")
      ("model", po::value<std::string>()->value_name("FILE.pt"), "the module, saved by torch.jit.save; required")
      ("input-shape", po::value<std::string>()->value_name("CxHxW"),
       "one sample of the float32 input, e.g. 3x32x32 (any number of dimensions); required")
      ("classes", po::value<int64_t>()->value_name("N"), "forward returns [batch, N] logits; required")
      ("name", po::value<std::string>()->value_name("NAME"),
       "the model's name in the profile, what a sweep config's `model:` names (default: the file's stem)")
      ("batches", po::value<std::string>()->value_name("B,B,...")->default_value("32,64,128"),
       "batch sizes, ascending; the first that runs out of memory ends the list (recorded as oom_batch)")
      ("device", po::value<std::string>()->value_name("cpu|cuda")->default_value(""),
       "default: cuda when a GPU is visible, else cpu")
      ("threads", po::value<int64_t>()->value_name("N"), "LibTorch intra-op threads (default: all cores)")
      ("ranks", po::value<int64_t>()->value_name("N"),
       "cpu: host contention for 1..N processes each running the fused iteration at every batch "
       "(default 2; 1 = not measured); on cuda not measured (each rank has its own device)")
      ("contention-rounds", po::value<int64_t>()->value_name("R")->default_value(3),
       "host contention measured in R interleaved rounds (1, 2, .., N processes, then again), each "
       "count's median kept, so a slow spell of a shared machine does not bias one count")
      ("pytorch", po::value<std::string>()->value_name("auto|off|PYTHON")->default_value("auto"),
       "also time the PyTorch reference trainer's loop on the module (measure/pytorch/profile_torch.py "
       "--script: plain and under DDP on 1 rank, and what forking loader workers costs) into the "
       "profile's pytorch section, which simulate's trainer: pytorch uses; only for 3x32x32 inputs "
       "and 10 classes (CIFAR batches) and a profile that has a pytorch section; auto: /usr/bin/python3 "
       "or python3 when it has torch")
      ("warmup", po::value<int64_t>()->value_name("N")->default_value(2), "untimed runs before each timing")
      ("repeats", po::value<int64_t>()->value_name("N")->default_value(5),
       "timed runs per timing (the median is kept), and instrumented passes for the layer split")
      ("seed", po::value<int64_t>()->value_name("S")->default_value(0), "random inputs and labels")
      ("machine", po::value<std::string>()->value_name("NAME"), "the machine's name (default: as measure names it)")
      ("out", po::value<std::string>()->value_name("PROFILE.yaml"),
       "the profile to add the model to (created if missing; the model is replaced if there); "
       "default reports/<machine>/profile.yaml");
  return d;
}

std::string required(const po::variables_map& vm, const char* flag) {
  if (!vm.count(flag) || vm[flag].as<std::string>().empty()) {
    throw UsageError(std::string("torchscript: --") + flag + " is required");
  }
  return vm[flag].as<std::string>();
}

// Synthetic CIFAR-format images written for profile_torch.py (its loader and fork figures).
constexpr int64_t kPytorchTrainImages = 4096;
// A contention rank gets this long for its rendezvous or a barrier; its launcher somewhat more.
constexpr double kContentionRankTimeoutSeconds = 600;
constexpr double kLaunchTimeoutSeconds = 3600;

void say(const std::string& line) { std::cerr << "measure torchscript: " << line << std::endl; }

std::string ms(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f ms", seconds * 1e3);
  return buffer;
}

// Host contention (CPU): rank 0's median fused iteration while k = 1..ranks processes run it, in
// `rounds` interleaved rounds.
void measure_contention(ModelProfile& model, const torchscript::ScriptModelOptions& options, int64_t batch,
                        const Repetition& rep, uint64_t seed, int ranks, int rounds) {
  profiler::ContentionJob job;
  job.model = model.name;
  job.script = fs::absolute(options.path).string();
  for (int64_t d : options.input_shape) job.input_shape += (job.input_shape.empty() ? "" : "x") + std::to_string(d);
  job.classes = options.num_classes;
  job.batch = batch;
  job.warmup = rep.warmup;
  job.repeats = rep.repeats;
  job.threads = torch::get_num_threads();
  job.seed = seed + static_cast<uint64_t>(batch);
  job.timeout_s = kContentionRankTimeoutSeconds;
  const std::vector<double> medians = profiler::run_contention_rounds(
      self_executable(), job, ranks, rounds, kLaunchTimeoutSeconds, [](int k, double seconds) {
        say("  host contention, " + std::to_string(k) + " process" + (k > 1 ? "es" : "") + ": " + ms(seconds) +
            " per fused iteration of rank 0");
      });
  for (int k = 1; k <= ranks; ++k) {
    const double seconds = medians[static_cast<size_t>(k - 1)];
    model.host_contention.push_back(ContentionPoint{k, batch, seconds});
    char line[160];
    std::snprintf(line, sizeof line, "  host contention, %d process%s: median of %d rounds %s (%.2fx)", k,
                  k > 1 ? "es" : "", rounds, ms(seconds).c_str(), seconds / medians.front());
    say(line);
  }
}

// The reference trainer's loop on the module at the measured batches, into profile.pytorch.
void measure_pytorch_loop(Profile& profile, const std::string& name, const std::string& python,
                          const torchscript::ScriptModelOptions& options, const Device& device, const Repetition& rep,
                          uint64_t seed, int ranks) {
  const ModelProfile& m = profile.models.at(name);
  if (device.is_cuda()) release_cached_memory(device);  // the Python process needs the memory
  TempDir folder("trainsim-pytorch-");
  profiler::PytorchRequest q;
  q.python = python;
  q.script = profiler::default_pytorch_script();
  q.data_dir = folder.path() + "/data";
  data::write_synthetic_cifar10_dir(q.data_dir, kPytorchTrainImages, 1, seed);
  q.device = device.kind_name();
  q.threads = torch::get_num_threads();
  q.batches = m.batches;
  q.models = {name};
  q.scripts = {{name, fs::absolute(options.path).string()}};
  q.warmup = rep.warmup;
  q.repeats = rep.repeats;
  q.loader_batch = m.batches.front();
  q.loader_workers = {0, 1};  // the fork figures are taken with the first worker count >= 1
  q.fork_ranks.clear();
  for (int k = 1; k <= (device.is_cuda() ? 1 : ranks); ++k) q.fork_ranks.push_back(k);
  q.out = folder.path() + "/pytorch.json";
  const std::vector<std::string> command = profiler::pytorch_profile_command(q);
  std::vector<const char*> words;
  for (const auto& word : command) words.push_back(word.c_str());
  say("PyTorch loop: " + join_command_line(static_cast<int>(words.size()), words.data()));
  const int status = run_program(command, kLaunchTimeoutSeconds);
  if (status != 0) {
    throw std::runtime_error(q.script + " exited with status " + std::to_string(status) +
                             " (its error is above); the profile keeps the C++ timings");
  }
  const PytorchProfile measured = profiler::read_pytorch_profile(q.out);
  const auto it = measured.models.find(name);
  if (it == measured.models.end()) throw std::runtime_error(q.out + ": no model " + name);
  profile.pytorch->models[name] = it->second;
  for (size_t i = 0; i < it->second.batches.size(); ++i) {
    say("PyTorch loop, batch " + std::to_string(it->second.batches[i]) + ": plain " + ms(it->second.iteration_s[i]) +
        ", DDP (1 rank) " + ms(it->second.ddp_iteration_s[i]));
  }
}

// The command's settings, its flags checked.
struct TorchscriptRun {
  torchscript::ScriptModelOptions options;
  std::string name;  // the model's name in the profile
  std::vector<int64_t> batches;
  Repetition rep;
  uint64_t seed = 0;
  int contention_ranks = 2;
  int contention_rounds = 1;
};

TorchscriptRun read_run(const po::variables_map& vm) {
  TorchscriptRun run;
  torchscript::ScriptModelOptions& options = run.options;
  options.path = required(vm, "model");
  options.input_shape = torchscript::parse_input_shape(required(vm, "input-shape"));
  if (!vm.count("classes")) throw UsageError("torchscript: --classes is required");
  options.num_classes = at_least("classes", vm["classes"].as<int64_t>(), 1);
  run.name = vm.count("name") ? vm["name"].as<std::string>() : fs::path(options.path).stem().string();
  if (run.name.empty()) throw UsageError("torchscript: --name is empty");
  run.batches = parse_int_list(vm["batches"].as<std::string>(), "--batches", 1, true);
  if (!std::is_sorted(run.batches.begin(), run.batches.end())) {
    throw UsageError("--batches: give them in ascending order");
  }
  run.rep = Repetition{bounded_int("warmup", vm["warmup"].as<int64_t>(), 0),
                       bounded_int("repeats", vm["repeats"].as<int64_t>(), 1)};
  run.seed = static_cast<uint64_t>(at_least("seed", vm["seed"].as<int64_t>(), 0));
  if (!fs::is_regular_file(options.path)) throw InputError(options.path, 0, "", "no such file");
  run.contention_ranks = vm.count("ranks") ? bounded_int("ranks", vm["ranks"].as<int64_t>(), 1) : 2;
  run.contention_rounds = bounded_int("contention-rounds", vm["contention-rounds"].as<int64_t>(), 1);
  return run;
}

// The profile the module is added to: --out as it is, checked against this machine and mode, or a
// new one of this machine.
Profile open_profile(const std::string& out, const MachineInfo& machine, const TorchscriptRun& run,
                     const Device& device, int argc, char** argv) {
  Profile profile;
  if (fs::exists(out)) {
    profile = load_profile(out);
    if (!profile.machine.device_kind.empty() && profile.machine.device_kind != machine.device_kind) {
      throw UsageError("--out " + out + " was measured on " + profile.machine.device_kind + ", this run is on " +
                       machine.device_kind);
    }
    if (profile.measurement.precision != Precision::kFp32) {
      throw UsageError("--out " + out + " was measured in " + precision_name(profile.measurement.precision) +
                       "; measure torchscript times fp32 only (give another --out)");
    }
    if (profile.measurement.memory_format != MemoryFormat::kNchw) {
      throw UsageError("--out " + out + " was measured in " + memory_format_name(profile.measurement.memory_format) +
                       "; measure torchscript times nchw only (give another --out)");
    }
    if (profile.models.count(run.name)) say("replacing model " + run.name + " in " + out);
  } else {
    profile.machine = machine;
    profile.measurement.command = join_command_line(argc, argv);
    profile.measurement.data = "synthetic";
    profile.measurement.warmup = run.rep.warmup;
    profile.measurement.repeats = run.rep.repeats;
    if (!device.is_cuda()) profile.h2d = CopyProfile{};
  }
  return profile;
}

// The module's description, its layers in the order in which one forward first uses each group's
// parameters (returned: forward_order).
ModelProfile describe_module(torchscript::ScriptModel& model, const TorchscriptRun& run, const Device& device,
                             std::vector<size_t>& forward_order) {
  torchscript::GroupSplit first;
  {
    torch::manual_seed(run.seed);
    std::vector<int64_t> shape{run.batches.front()};
    shape.insert(shape.end(), run.options.input_shape.begin(), run.options.input_shape.end());
    first = torchscript::split_by_group(model, torch::randn(shape, torch::TensorOptions().device(device.torch_device())),
                                        device);
  }
  ModelProfile description = model.describe(run.name, first.forward_order);
  description.memory_method = memory_method(device);
  description.source = "torchscript:" + run.options.path;
  for (size_t l = 0; l < first.forward_order.size(); ++l) {
    const auto& shape = first.output_shape[first.forward_order[l]];
    description.layers[l].output_shape = shape.empty() ? std::vector<int64_t>{1} : shape;
  }
  forward_order = first.forward_order;
  return description;
}

// Every batch up to the out-of-memory boundary, the profile written after each.
void profile_batches(torchscript::ScriptModel& model, const std::vector<size_t>& forward_order,
                     const TorchscriptRun& run, const Device& device, Profile& profile, const std::string& out) {
  for (int64_t batch : run.batches) {
    say("batch " + std::to_string(batch) + " ...");
    torchscript::ScriptBatchTimings t;
    try {
      t = torchscript::measure_script_batch(model, forward_order, batch, device, run.rep, run.seed);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      release_cached_memory(device);
      ModelProfile& m = profile.models[run.name];
      m.oom_batch = batch;
      m.max_batch_tried = batch;
      write_profile_atomic(profile, out);
      say("batch " + std::to_string(batch) + ": out of memory; larger batches are not tried");
      break;
    }
    ModelProfile& m = profile.models[run.name];
    m.batches.push_back(batch);
    for (size_t l = 0; l < m.layers.size(); ++l) {
      m.layers[l].forward_s.push_back(t.forward_s[l]);
      m.layers[l].backward_s.push_back(t.backward_s[l]);
    }
    m.loss_s.push_back(t.loss_s);
    m.zero_grad_s.push_back(t.zero_grad_s);
    m.optimizer_s.push_back(t.optimizer_s);
    m.iteration_s.push_back(t.iteration_s);
    m.peak_memory_bytes.push_back(t.peak_memory_bytes);
    m.max_batch_tried = batch;
    write_profile_atomic(profile, out);
    if (!device.is_cuda() && run.contention_ranks > 1) {
      if (!backend_available("gloo")) {
        say("host contention: not measured (this build of measure has no gloo backend)");
      } else {
        measure_contention(profile.models[run.name], run.options, batch, run.rep, run.seed, run.contention_ranks,
                           run.contention_rounds);
        write_profile_atomic(profile, out);
      }
    }
    double forward = 0;
    double backward = 0;
    for (double s : t.forward_s) forward += s;
    for (double s : t.backward_s) backward += s;
    say("batch " + std::to_string(batch) + ": forward " + ms(forward) + ", backward " + ms(backward) + ", loss " +
        ms(t.loss_s) + ", zero_grad " + ms(t.zero_grad_s) + ", step " + ms(t.optimizer_s) + "; sum " +
        ms(forward + backward + t.loss_s + t.zero_grad_s + t.optimizer_s) + ", fused iteration " +
        ms(t.iteration_s) + "; peak memory " + std::to_string(static_cast<long long>(t.peak_memory_bytes / 1048576)) +
        " MiB");
  }
}

}  // namespace

int torchscript_main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  const po::options_description flags = torchscript_flags();
  const po::variables_map vm = parse_flags(args, flags, "torchscript: ");
  if (vm.count("help")) {
    std::cout << "usage: measure torchscript --model FILE.pt --input-shape 3x32x32 --classes 10 [flags]\n\n"
                 "Profiles the module as measure profiles ResNet-18 and adds it to a profile under its name:\n"
                 "per batch the forward and backward of each parameter group, the loss, zero_grad, the SGD\n"
                 "step, the fused iteration and its peak memory, up to the out-of-memory boundary. simulate\n"
                 "then predicts it with `model: NAME` in a sweep config.\n\n"
              << flags;
    return 0;
  }
  const TorchscriptRun run = read_run(vm);

  const Device device = resolve_device(vm["device"].as<std::string>());
  MachineInfo machine = detect_host();
  torch::set_num_threads(vm.count("threads") ? bounded_int("threads", vm["threads"].as<int64_t>(), 1)
                                             : std::max(1, machine.cpu_cores));
  fill_device_info(machine, device, device.is_cuda() ? cuda_device_count() : 1);
  machine.name = vm.count("machine") ? vm["machine"].as<std::string>() : default_machine_name(machine);
  machine.threads = torch::get_num_threads();
  const std::string out = vm.count("out") ? vm["out"].as<std::string>() : "reports/" + machine.name + "/profile.yaml";
  if (fs::is_directory(out)) throw UsageError("--out " + out + ": is a folder (give the profile's file name)");
  Profile profile = open_profile(out, machine, run, device, argc, argv);

  torchscript::ScriptModel model(run.options, device);
  say("loaded " + run.options.path + ": " + std::to_string(model.parameters().size()) + " parameter tensors in " +
      std::to_string(model.group_keys().size()) + " groups; device " + device.kind_name() + ", " +
      std::to_string(machine.threads) + " threads, LibTorch " + machine.libtorch);
  std::vector<size_t> forward_order;
  profile.models[run.name] = describe_module(model, run, device, forward_order);
  profile_batches(model, forward_order, run, device, profile, out);

  std::string note;
  const std::optional<std::string> python =
      profiler::choose_pytorch_python(vm["pytorch"].as<std::string>(), note);
  const bool cifar_shaped = run.options.input_shape == std::vector<int64_t>{3, 32, 32} && run.options.num_classes == 10;
  if (!python) {
    say("PyTorch loop: not measured (" + (note.empty() ? std::string("--pytorch off") : note) + ")");
  } else if (!cifar_shaped) {
    say("PyTorch loop: not measured (profile_torch.py feeds CIFAR batches: 3x32x32 inputs, 10 classes)");
  } else if (!profile.pytorch) {
    say("PyTorch loop: not measured (" + out + " has no pytorch section; `measure --pytorch auto` makes it)");
  } else if (profile.models[run.name].batches.empty()) {
    say("PyTorch loop: not measured (no batch ran)");
  } else {
    measure_pytorch_loop(profile, run.name, *python, run.options, device, run.rep, run.seed, run.contention_ranks);
    write_profile_atomic(profile, out);
  }

  const ModelProfile& m = profile.models[run.name];
  std::cout << "torchscript: " << run.name << " (" << m.parameters << " parameters, " << m.layers.size()
            << " layers) at batches " << join_ints(m.batches)
            << (m.oom_batch ? ", out of memory at " + std::to_string(*m.oom_batch) : std::string())
            << " -> " << out << "\n";
  return 0;
}

}  // namespace trainsim::measure
