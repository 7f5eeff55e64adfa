// libFuzzer target: the PyTorch profiler trace importer (import_trace_text, `measure import-trace`).
// Each input is imported twice:
// - as the trace alone (the batch and the parameter tensors from its shapes);
// - with --batch, --step-seconds and --params as a traced script would pass them: the parameter
//   list as long as the first import found (with its bytes), or, when that failed (a trace
//   without shapes, such as the legacy profiler's), one tensor per AccumulateGrad the text
//   names; and --step, the step the first import chose.
// An import that succeeds must give a profile that writes to YAML that reads back to the same
// YAML (`measure import-trace --out` writes it), also after the second import is merged into the
// first as one more batch (merge_traced_batch), and its summary must format. A clean rejection is
// an InputError; anything else (another exception, a crash, a hang, a sanitizer report) is a
// finding.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "format/errors.h"
#include "format/profile_io.h"
#include "memory_file.h"
#include "trace/trace_import.h"

namespace trainsim::fuzz {
namespace {

std::optional<TraceImport> import(const std::string& text, const TraceImportOptions& options) {
  try {
    return import_trace_text(text, "fuzz-trace.json", options);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// The model written as a profile must read back to the same YAML.
void check_written(const ModelProfile& model) {
  Profile profile;
  profile.models[model.name] = model;
  const std::string written = profile_to_yaml(profile);
  std::string again;
  try {
    again = profile_to_yaml(
        load_profile(as_file(reinterpret_cast<const uint8_t*>(written.data()), written.size())));
  } catch (const InputError& e) {
    std::fprintf(stderr, "an imported trace's profile does not read back: %s\n%s\n", e.what(), written.c_str());
    std::abort();
  }
  if (again != written) {
    std::fprintf(stderr, "an imported trace's profile, written, read and written again differs:\n%s\n---\n%s\n",
                 written.c_str(), again.c_str());
    std::abort();
  }
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

}  // namespace
}  // namespace trainsim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace trainsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  TraceImportOptions plain;
  plain.name = "fuzz";
  const std::optional<TraceImport> first = fuzz::import(text, plain);
  if (first) {
    (void)format_trace_import(*first, "fuzz-trace.json");
    fuzz::check_written(first->model);
  }

  TraceImportOptions given = plain;
  given.batch = 32;
  given.step_seconds = 0.25;
  given.params_file = "fuzz-params.txt";
  if (first) {
    for (const LayerProfile& layer : first->model.layers) {
      for (const ParamTensor& p : layer.params) given.params.push_back({"given." + p.name, p.bytes});
    }
    const std::string prefix = "ProfilerStep#";
    if (first->step.rfind(prefix, 0) == 0) given.step = std::stoll(first->step.substr(prefix.size()));
  } else {
    std::size_t n = fuzz::occurrences(text, "evaluate_function: torch::autograd::AccumulateGrad");
    if (n == 0) n = fuzz::occurrences(text, "torch::autograd::AccumulateGrad");
    for (std::size_t i = 0; i < n; ++i) given.params.push_back({"p" + std::to_string(i), static_cast<int64_t>(4 * (1 + i % 100))});
  }
  if (given.params.empty()) given.params.push_back({"p", 4});
  const std::optional<TraceImport> second = fuzz::import(text, given);
  if (second) {
    (void)format_trace_import(*second, "fuzz-trace.json");
    fuzz::check_written(second->model);
    if (first) {
      ModelProfile merged = first->model;
      if (merge_traced_batch(merged, second->model)) fuzz::check_written(merged);
    }
  }
  return 0;
}
