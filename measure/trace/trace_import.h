#pragma once
// `measure import-trace`: one training step of a PyTorch profiler trace (Chrome trace JSON, as
// torch.profiler's export_chrome_trace writes it: Kineto's {"traceEvents": [...]} or the legacy
// profiler's plain event list) turned into one profile model entry (docs/TRACE.md). Torch-free.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/profile.h"

namespace trainsim {

struct TraceImportOptions {
  std::string name;                    // the model's name in the profile (required)
  std::optional<int64_t> batch;        // --batch; otherwise from the trace's shapes
  std::optional<int64_t> step;         // --step N: ProfilerStep#N; otherwise the last with a backward
  std::vector<ParamTensor> params;     // --params (registration order); empty: from the shapes
  std::string params_file;             // where `params` came from, for messages
  // --step-seconds: the step's time measured without the profiler (the script's own timing). A
  // profiler slows every op it records; the step's parts keep their shares of the trace and are
  // scaled to add up to this.
  std::optional<double> step_seconds;
};

// One collective as the trace shows it (grouped by event name).
struct TraceCollective {
  std::string name;            // e.g. "c10d::allreduce_", "gloo:all_reduce", "ncclKernel_AllReduce..."
  bool all_reduce = false;     // a gradient all-reduce (by its name)
  bool device = false;         // a kernel on a device stream
  bool on_backward_thread = false;  // a CPU event on the thread that ran the backward
  int count = 0;
  double time_s = 0;           // sum of the events' durations
  double subtracted_s = 0;     // of it, taken out of the backward layers' time
  int64_t bytes = -1;          // sum of the messages' bytes when the trace says them; -1: unknown
};

struct TraceImport {
  ModelProfile model;
  std::string step;            // "ProfilerStep#3", or "the whole trace"
  std::vector<int64_t> steps;  // the ProfilerStep numbers in the trace
  bool device_times = false;   // times from device kernels (a GPU trace), not CPU op spans
  std::string batch_from;      // "--batch" or the op whose input gave it
  std::string params_from;     // "the trace's shapes" or the --params file
  double forward_s = 0;
  double backward_s = 0;       // the layers' backward, collectives taken out
  double other_s = 0;          // iteration_s minus every part above (Python, DDP's reducer, gaps)
  int64_t peak_memory_device = -1;  // the [memory] events' "Device Type" used; -1: none
  std::vector<TraceCollective> collectives;
  std::vector<std::string> notes;  // what the import had to assume
};

// A profiler trace of one training step is tens of MB on a GPU, far more than the project's other
// inputs (kMaxInputBytes); a larger file, /dev/zero included, is refused instead of read forever.
inline constexpr std::size_t kMaxTraceBytes = std::size_t{2} << 30;

// Reads `path` (InputError naming the file, and the line for JSON syntax errors, on bad input; a
// directory, an unreadable file or one over kMaxTraceBytes is one line naming it).
TraceImport import_trace(const std::string& path, const TraceImportOptions& options);
// The same from the file's text; `path` names it in messages and in the model's source.
TraceImport import_trace_text(const std::string& text, const std::string& path, const TraceImportOptions& options);

// Adds `traced` (a model of one batch size, from import_trace) to `existing`, an earlier import of
// the same network: true when both have the same layers (names and parameter bytes); then
// `existing` holds every batch (`traced`'s replacing an earlier trace of the same batch), each
// array aligned with the ascending batches, peak memory kept only when every import measured it,
// the input's bytes per sample and the classes (the network's) when either import measured them.
// False (nothing changed) for another network.
bool merge_traced_batch(ModelProfile& existing, const ModelProfile& traced);

// `--params FILE`: one "NAME BYTES" per line in registration order; blank lines and lines starting
// with '#' are skipped. InputError(FILE, LINE, "", ...) on a bad line or an empty file; (FILE, 0)
// for a directory, an unreadable file or one over kMaxInputBytes.
std::vector<ParamTensor> read_params_file(const std::string& path);

// The human summary `measure import-trace` prints (several lines, each ending in '\n').
std::string format_trace_import(const TraceImport& import, const std::string& path);

}  // namespace trainsim
