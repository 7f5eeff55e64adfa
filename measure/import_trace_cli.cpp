#include "import_trace_cli.h"

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "format/profile_io.h"
#include "trace/trace_import.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace {

namespace po = boost::program_options;

po::options_description import_trace_flags() {
  po::options_description d("measure import-trace TRACE.json: a PyTorch profiler trace as a profile model");
  d.add_options()
      ("help,h", "print this help and exit")
      ("name", po::value<std::string>()->value_name("NAME"), "the model's name in the profile; required")
      ("batch", po::value<int64_t>()->value_name("B"),
       "the step's batch size (default: the first forward op's input, when the trace recorded shapes)")
      ("params", po::value<std::string>()->value_name("FILE"),
       "parameter tensors, one 'NAME BYTES' per line in registration order (needed when the trace has no shapes)")
      ("step-seconds", po::value<double>()->value_name("S"),
       "the step's time without the profiler (your script's own timing): the parts keep their shares "
       "of the trace and are scaled to add up to S, taking the profiler's own cost out")
      ("step", po::value<int64_t>()->value_name("N"),
       "import ProfilerStep#N (default: the last step with a backward; the whole trace when it has no steps)")
      ("out", po::value<std::string>()->value_name("PROFILE.yaml")->default_value("profile.yaml"),
       "the profile to write; an existing one keeps everything else and gets NAME added or replaced");
  return d;
}

}  // namespace

int import_trace_main(int argc, char** argv) {
  // TRACE.json is the one argument that is not a flag or a flag's value (every flag but --help takes one).
  std::vector<std::string> args{argv[0]};
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("-", 0) == 0) {
      args.push_back(a);
      if (a != "--help" && a != "-h" && a.find('=') == std::string::npos && i + 1 < argc) args.push_back(argv[++i]);
    } else {
      positional.push_back(a);
    }
  }
  const po::options_description flags = import_trace_flags();
  const po::variables_map vm = parse_flags(args, flags, "import-trace: ");
  if (vm.count("help")) {
    std::cout << "usage: measure import-trace TRACE.json --name NAME [--batch B] [--params FILE] [--step N] "
                 "[--step-seconds S] [--out PROFILE.yaml]\n\n"
                 "Reads one training step (zero_grad, forward, loss, backward, optimizer step) of a trace written by\n"
                 "torch.profiler's export_chrome_trace and writes it as models.NAME of the profile: the forward as one\n"
                 "layer, the backward split into the groups of parameters whose gradients become ready together,\n"
                 "the loss, zero_grad and optimizer step, the peak memory when profile_memory was on, and what the\n"
                 "trace could not measure in the model's `missing` list (docs/TRACE.md). A trace of another batch\n"
                 "size of a network already imported under NAME is added to it as one more batch.\n\n"
              << flags;
    return 0;
  }
  if (positional.size() != 1) {
    throw UsageError(positional.empty() ? "import-trace: the trace file (TRACE.json) is required"
                                        : "import-trace: one trace file, got " + std::to_string(positional.size()) +
                                              " (" + positional[0] + ", " + positional[1] + ", ...)");
  }
  if (!vm.count("name") || vm["name"].as<std::string>().empty()) throw UsageError("import-trace: --name NAME is required");
  const std::string trace = positional[0];
  TraceImportOptions options;
  options.name = vm["name"].as<std::string>();
  if (vm.count("batch")) options.batch = at_least("batch", vm["batch"].as<int64_t>(), 1);
  if (vm.count("step")) options.step = at_least("step", vm["step"].as<int64_t>(), 0);
  if (vm.count("params")) {
    options.params_file = vm["params"].as<std::string>();
    options.params = read_params_file(options.params_file);
  }
  if (vm.count("step-seconds")) {
    const double s = vm["step-seconds"].as<double>();
    if (!(s > 0) || !std::isfinite(s)) throw UsageError("import-trace: --step-seconds: expected a time > 0 s");
    options.step_seconds = s;
  }
  const std::string out = vm["out"].as<std::string>();
  if (out.empty()) throw UsageError("import-trace: --out: an empty path");

  const TraceImport imported = import_trace(trace, options);
  Profile profile;
  const bool existed = std::filesystem::exists(out);
  if (existed) profile = load_profile(out);
  if (profile.measurement.precision != Precision::kFp32) {
    throw UsageError("--out " + out + " was measured in " + precision_name(profile.measurement.precision) +
                     "; a trace's timings are not marked with a precision (give another --out)");
  }
  if (profile.measurement.memory_format != MemoryFormat::kNchw) {
    throw UsageError("--out " + out + " was measured in " + memory_format_name(profile.measurement.memory_format) +
                     "; a trace's timings are not marked with a memory format (give another --out)");
  }
  // Another batch size of a network already imported joins it; anything else replaces the entry.
  const auto it = profile.models.find(options.name);
  std::string what = "added";
  if (it != profile.models.end() && it->second.source.rfind("trace:", 0) == 0 &&
      merge_traced_batch(it->second, imported.model)) {
    it->second.source = imported.model.source;
    what = "merged batch " + std::to_string(imported.model.batches[0]) + " into (batches now " +
           join_ints(it->second.batches) + ")";
  } else {
    if (it != profile.models.end()) what = "replaced";
    profile.models[options.name] = imported.model;
  }
  write_profile_atomic(profile, out);
  std::cout << format_trace_import(imported, trace) << "import-trace: " << what << " models." << options.name
            << " in " << out << (existed ? "" : " (a new profile)") << "\n";
  return 0;
}

}  // namespace trainsim::measure
