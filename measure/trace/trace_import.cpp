// A PyTorch profiler trace's training step as a profile model entry (docs/TRACE.md).

#include "trace/trace_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "format/bounds.h"
#include "format/errors.h"
#include "format/input_text.h"

namespace trainsim {
namespace {

using nlohmann::json;

constexpr const char* kEvaluate = "autograd::engine::evaluate_function: ";
constexpr const char* kAccumulateGrad = "torch::autograd::AccumulateGrad";
// No machine's memory, model or parameter tensor reaches kMaxBytes (format/bounds.h; the profile's
// reader refuses a larger tensor): more is a damaged trace or --params file.

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string id_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number()) return std::to_string(value.get<double>());
  return value.dump();
}

// A non-negative integer argument (ids, counts, device types); -1 when absent or not one.
int64_t int_arg(const json* args, const char* key) {
  if (args == nullptr || !args->is_object()) return -1;
  const auto it = args->find(key);
  if (it == args->end()) return -1;
  if (it->is_number_unsigned()) {
    const auto v = it->get<uint64_t>();
    return v <= (uint64_t{1} << 62) ? static_cast<int64_t>(v) : -1;
  }
  if (it->is_number_integer()) return std::max<int64_t>(-1, it->get<int64_t>());
  if (it->is_number_float()) {
    const double v = it->get<double>();
    return v >= 0 && v <= 4.6e18 ? static_cast<int64_t>(v) : -1;
  }
  return -1;
}

// One complete ("X") event, times in microseconds as in the file.
struct Span {
  std::string name;
  std::string cat;     // lower case; "" in the legacy profiler's traces
  std::string thread;  // "pid/tid"
  double ts = 0;
  double dur = 0;
  const json* args = nullptr;
  int64_t external_id = -1;
  int64_t correlation = -1;
  bool top = false;    // not inside another CPU span of its thread (within the step)
  double end() const { return ts + dur; }
};

struct MemoryPoint {
  double ts = 0;
  int64_t device_type = 0;  // 0 CPU, 1 CUDA (Kineto's "Device Type"); 0 when absent
  double total_allocated = -1;
};

bool is_device_cat(const std::string& cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "memcpy" || cat == "memset";
}

bool is_cpu_cat(const std::string& cat) {
  return cat.empty() || cat == "cpu_op" || cat == "operator" || cat == "user_annotation" || cat == "cuda_runtime" ||
         cat == "cuda_driver" || cat == "runtime";
}

bool is_step(const std::string& name, int64_t* number) {
  static const std::string prefix = "ProfilerStep#";
  if (!starts_with(name, prefix) || name.size() == prefix.size()) return false;
  int64_t n = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i])) || n > (int64_t{1} << 50)) return false;
    n = n * 10 + (name[i] - '0');
  }
  *number = n;
  return true;
}

bool is_evaluate(const Span& s) { return starts_with(s.name, kEvaluate); }
std::string node_of(const Span& s) { return s.name.substr(std::string(kEvaluate).size()); }

// View-like backward nodes do no compute: they do not separate two gradient groups (a Linear's
// bias and weight gradients are accumulated on either side of TBackward0).
bool is_view_node(const std::string& node) {
  static const char* views[] = {"TBackward", "TransposeBackward", "ViewBackward", "UnsafeViewBackward",
                                "ReshapeAliasBackward", "ExpandBackward", "PermuteBackward", "SqueezeBackward",
                                "UnsqueezeBackward", "AliasBackward", "AsStridedBackward"};
  for (const char* v : views) {
    if (starts_with(node, v)) return true;
  }
  return false;
}

bool is_loss_node(const std::string& node) {
  return contains(node, "Loss") || contains(node, "CrossEntropy") || starts_with(node, "LogSoftmaxBackward");
}

bool is_loss_op(const std::string& name) {
  static const std::set<std::string> ops = {
      "aten::cross_entropy_loss", "aten::nll_loss", "aten::nll_loss_nd", "aten::nll_loss2d", "aten::log_softmax",
      "aten::mse_loss", "aten::l1_loss", "aten::smooth_l1_loss", "aten::huber_loss", "aten::binary_cross_entropy",
      "aten::binary_cross_entropy_with_logits", "aten::kl_div", "aten::soft_margin_loss", "aten::multi_margin_loss",
      "aten::multilabel_margin_loss", "aten::hinge_embedding_loss", "aten::cosine_embedding_loss",
      "aten::margin_ranking_loss", "aten::poisson_nll_loss", "aten::ctc_loss"};
  return ops.count(name) > 0;
}

bool is_collective(const Span& s) {
  if (is_device_cat(s.cat)) return contains(lower(s.name), "nccl");
  return starts_with(s.name, "c10d::") || starts_with(s.name, "gloo:") || starts_with(s.name, "nccl:") ||
         s.name == "record_param_comms" || starts_with(s.name, "ProcessGroup");
}

bool is_all_reduce(const Span& s) {
  const std::string n = lower(s.name);
  if (contains(n, "allreduce") || contains(n, "all_reduce")) return true;
  if (s.name == "record_param_comms" && s.args != nullptr && s.args->is_object()) {
    const auto it = s.args->find("Collective name");
    return it != s.args->end() && it->is_string() && contains(lower(it->get<std::string>()), "allreduce");
  }
  return false;
}

// The lists of non-negative integers inside a (possibly nested) Input Dims entry.
void collect_shapes(const json& value, std::vector<std::vector<int64_t>>& out) {
  if (!value.is_array()) return;
  if (!value.empty() && std::all_of(value.begin(), value.end(), [](const json& v) {
        return v.is_number_integer() && v.get<int64_t>() >= 0;
      })) {
    std::vector<int64_t> shape;
    for (const json& v : value) shape.push_back(v.get<int64_t>());
    out.push_back(std::move(shape));
    return;
  }
  for (const json& v : value) collect_shapes(v, out);
}

// The shape of the first input when it is one tensor with at least one dimension.
std::optional<std::vector<int64_t>> first_input_shape(const Span& s) {
  if (s.args == nullptr || !s.args->is_object()) return std::nullopt;
  const auto it = s.args->find("Input Dims");
  if (it == s.args->end() || !it->is_array() || it->empty()) return std::nullopt;
  const json& first = (*it)[0];
  if (!first.is_array() || first.empty()) return std::nullopt;
  for (const json& d : first) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) return std::nullopt;
  }
  std::vector<int64_t> shape;
  for (const json& d : first) shape.push_back(d.get<int64_t>());
  return shape;
}

int64_t elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d > 0 && n > (int64_t{1} << 50) / d) return int64_t{1} << 50;
    n *= d;
  }
  return n;
}

int64_t dtype_bytes(const std::string& type) {
  const std::string t = lower(type);
  if (contains(t, "double") || contains(t, "long") || t == "int64") return 8;
  if (contains(t, "half") || contains(t, "bfloat16") || contains(t, "short")) return 2;
  if (contains(t, "byte") || contains(t, "char") || contains(t, "bool")) return 1;
  return 4;
}

// a + b, two byte counts >= 0 (b at most 2^62), held at 2^62 instead of overflowing: a damaged
// trace's sizes can add up to anything.
int64_t add_bytes(int64_t a, int64_t b) {
  constexpr int64_t kMax = int64_t{1} << 62;
  return a >= kMax - b ? kMax : a + b;
}

// Bytes of a collective's message when the trace says them: record_param_comms' "In msg nelems"
// and "dtype", or the tensors of its first input.
int64_t message_bytes(const Span& s) {
  if (s.args == nullptr || !s.args->is_object()) return -1;
  const int64_t nelems = std::min(int_arg(s.args, "In msg nelems"), int64_t{1} << 50);
  if (nelems >= 0) {
    const auto dtype = s.args->find("dtype");
    return nelems * (dtype != s.args->end() && dtype->is_string() ? dtype_bytes(dtype->get<std::string>()) : 4);
  }
  const auto dims = s.args->find("Input Dims");
  if (dims == s.args->end() || !dims->is_array() || dims->empty()) return -1;
  std::vector<std::vector<int64_t>> shapes;
  collect_shapes((*dims)[0], shapes);
  if (shapes.empty()) return -1;
  int64_t total = 0;
  for (const auto& shape : shapes) total = add_bytes(total, elements(shape) * 4);
  return total;
}

// Total length of the union of [a, b) intervals.
double union_length(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0;
  double start = 0;
  double end = -1e300;
  for (const auto& [a, b] : intervals) {
    if (a > end) {
      if (end > start) total += end - start;
      start = a;
      end = b;
    } else {
      end = std::max(end, b);
    }
  }
  if (end > start) total += end - start;
  return total;
}

// Overlap of [a, b) with [c, d).
double overlap(double a, double b, double c, double d) { return std::max(0.0, std::min(b, d) - std::max(a, c)); }

std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string with_thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

// Line and column (1-based) of byte `offset` in `text`.
std::pair<int, int> line_column(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, static_cast<int>(offset - line_start) + 1};
}

// Calls visit(i) for each index i of `text` outside a JSON string (the quotes themselves and
// what they enclose are skipped) until it returns true; that index, or npos.
template <typename Visit>
size_t scan_outside_strings(const std::string& text, Visit&& visit) {
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (visit(i)) {
      return i;
    }
  }
  return std::string::npos;
}

// Where `token` first stands in `text` outside a JSON string; npos when nowhere.
size_t find_outside_strings(const std::string& text, const std::string& token) {
  if (token.empty()) return std::string::npos;
  return scan_outside_strings(text, [&](size_t i) { return text.compare(i, token.size(), token) == 0; });
}

class Importer {
 public:
  Importer(const std::string& path, const TraceImportOptions& options) : path_(path), options_(options) {}

  TraceImport run(const std::string& text) {
    parse(text);
    device_ = !device_spans_.empty();
    choose_step();
    top_level();
    phases();
    parameters();
    if (device_) device_times();
    else cpu_times();
    batch_and_shapes();
    memory();
    build();
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& message, int line = 0) const {
    throw InputError(path_, line, key, message);
  }

  void parse(const std::string& text) {
    if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b) {
      fail("", "a gzip file, not JSON: gunzip it first (tensorboard_trace_handler writes .pt.trace.json.gz)");
    }
    try {
      root_ = json::parse(text);
    } catch (const json::parse_error& e) {
      const auto [line, column] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
      std::string what = e.what();
      const size_t colon = what.find(": ", what.find("parse error"));
      if (colon != std::string::npos) what = what.substr(colon + 2);
      fail("", "not JSON (column " + std::to_string(column) + "): " + what, line);
    } catch (const json::out_of_range& e) {  // a number beyond a double's range, such as 1e400
      // The message names the number but not where it is: its first place outside a string.
      std::string what = e.what();
      const size_t bracket = what.find("] ");
      if (bracket != std::string::npos) what = what.substr(bracket + 2);
      const size_t quote = what.find('\'');
      const size_t end = quote == std::string::npos ? quote : what.find('\'', quote + 1);
      int line = 0;
      std::string where;
      if (end != std::string::npos) {
        const size_t at = find_outside_strings(text, what.substr(quote + 1, end - quote - 1));
        if (at != std::string::npos) {
          const auto [l, column] = line_column(text, at);
          line = l;
          where = " (column " + std::to_string(column) + ")";
        }
      }
      fail("", "not JSON" + where + ": " + what + ": beyond the range of a double", line);
    }
    check_depth(text);
    const json* events = nullptr;
    if (root_.is_array()) {
      events = &root_;  // the legacy profiler writes the event list alone
      legacy_ = true;
    } else if (root_.is_object()) {
      const auto it = root_.find("traceEvents");
      if (it == root_.end() || !it->is_array()) {
        fail("traceEvents", "no traceEvents list: not a PyTorch profiler trace (export_chrome_trace writes "
                            "{\"traceEvents\": [...]})");
      }
      events = &*it;
    } else {
      fail("traceEvents", "not a PyTorch profiler trace: the JSON is a " + std::string(root_.type_name()) +
                              ", not {\"traceEvents\": [...]}");
    }
    for (const json& e : *events) {
      if (!e.is_object()) continue;
      const auto name = e.find("name");
      const auto ph = e.find("ph");
      const auto ts = e.find("ts");
      if (name == e.end() || !name->is_string() || ph == e.end() || !ph->is_string() || ts == e.end() ||
          !ts->is_number()) {
        continue;
      }
      const std::string phase = ph->get<std::string>();
      const auto args = e.find("args");
      const json* args_ptr = args != e.end() && args->is_object() ? &*args : nullptr;
      const std::string thread = (e.contains("pid") ? id_text(e["pid"]) : "") + "/" +
                                 (e.contains("tid") ? id_text(e["tid"]) : "");
      if ((phase == "i" || phase == "I") && name->get<std::string>() == "[memory]") {
        MemoryPoint m;
        m.ts = ts->get<double>();
        if (!std::isfinite(m.ts)) continue;
        m.device_type = std::max<int64_t>(0, int_arg(args_ptr, "Device Type"));
        if (args_ptr != nullptr) {
          const auto total = args_ptr->find("Total Allocated");
          if (total != args_ptr->end() && total->is_number()) m.total_allocated = total->get<double>();
        }
        // The peak becomes the profile's peak_memory_bytes and an integer in the summary.
        if (m.total_allocated > static_cast<double>(kMaxBytes)) {
          fail("traceEvents", "a [memory] event (ts " + fmt("%.16g", m.ts) + ") has Total Allocated " +
                                  fmt("%.6g", m.total_allocated) + " bytes, more than 2^50 (1 PiB): not a machine's memory");
        }
        if (m.total_allocated >= 0) memory_.push_back(m);
        continue;
      }
      if (phase != "X") continue;
      const auto dur = e.find("dur");
      if (dur == e.end() || !dur->is_number() || !(dur->get<double>() >= 0) ||
          !std::isfinite(ts->get<double>() + dur->get<double>()) || std::abs(ts->get<double>()) > 1e15) {
        continue;
      }
      Span s;
      s.name = name->get<std::string>();
      const auto cat = e.find("cat");
      s.cat = cat != e.end() && cat->is_string() ? lower(cat->get<std::string>()) : "";
      s.thread = thread;
      s.ts = ts->get<double>();
      s.dur = dur->get<double>();
      s.args = args_ptr;
      s.external_id = int_arg(args_ptr, "External id");
      s.correlation = int_arg(args_ptr, "correlation");
      if (is_device_cat(s.cat)) {
        device_spans_.push_back(std::move(s));
      } else if (is_cpu_cat(s.cat)) {
        cpu_.push_back(std::move(s));
      }
    }
    if (cpu_.empty()) fail("traceEvents", "no CPU op events: not a PyTorch profiler trace of a training step");
    std::stable_sort(cpu_.begin(), cpu_.end(), [](const Span& a, const Span& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
    });
  }

  // A trace is 5 levels deep ({"traceEvents": [{"args": {"Input Dims": [[...]]}}]}). Deeper JSON
  // is refused: reading an id or a shape recurses once per level, and 100,000 levels overflow the
  // stack. `text` is valid JSON (parsed already).
  void check_depth(const std::string& text) const {
    constexpr int kMaxDepth = 64;
    int depth = 0;
    const size_t too_deep = scan_outside_strings(text, [&](size_t i) {
      if (text[i] == '[' || text[i] == '{') return ++depth > kMaxDepth;
      if (text[i] == ']' || text[i] == '}') --depth;
      return false;
    });
    if (too_deep != std::string::npos) {
      const auto [line, column] = line_column(text, too_deep);
      fail("", "lists and objects nested deeper than " + std::to_string(kMaxDepth) + " levels (column " +
                   std::to_string(column) + "): not a PyTorch profiler trace", line);
    }
  }

  void choose_step() {
    std::vector<const Span*> steps;
    for (const Span& s : cpu_) {
      int64_t n = 0;
      if (is_step(s.name, &n)) {
        steps.push_back(&s);
        out_.steps.push_back(n);
      }
    }
    const auto has_backward = [&](double a, double b) {
      return std::any_of(cpu_.begin(), cpu_.end(), [&](const Span& s) {
        return s.ts >= a && s.ts < b && (s.name == kAccumulateGrad || s.name == std::string(kEvaluate) + kAccumulateGrad);
      });
    };
    const Span* step = nullptr;
    if (options_.step) {
      for (const Span* s : steps) {
        int64_t n = 0;
        is_step(s->name, &n);
        if (n == *options_.step) step = s;
      }
      if (step == nullptr) {
        std::string have;
        for (int64_t n : out_.steps) have += (have.empty() ? "" : ", ") + std::to_string(n);
        fail("", "step " + std::to_string(*options_.step) + " is not in the trace (" +
                     (have.empty() ? "it has no ProfilerStep#N spans: leave --step out to import the whole trace"
                                   : "it has steps " + have) + ")");
      }
    } else {
      for (auto it = steps.rbegin(); it != steps.rend() && step == nullptr; ++it) {
        if (has_backward((*it)->ts, (*it)->end())) step = *it;
      }
      if (step == nullptr && !steps.empty()) {
        fail("", "has no backward in any ProfilerStep (no " + std::string(kEvaluate) + kAccumulateGrad +
                     " event): profile the whole training step, loss.backward() included");
      }
    }
    if (step != nullptr) {
      w0_ = step->ts;
      w1_ = step->end();
      main_ = step->thread;
      out_.step = step->name;
    } else {
      w0_ = cpu_.front().ts;
      w1_ = w0_;
      for (const Span& s : cpu_) w1_ = std::max(w1_, s.end());
      out_.step = "the whole trace";
    }
    // The step's events: those starting inside it (the step spans themselves left out).
    std::vector<Span> in;
    for (Span& s : cpu_) {
      int64_t n = 0;
      if (s.ts >= w0_ && s.ts < w1_ && !is_step(s.name, &n)) in.push_back(std::move(s));
    }
    cpu_ = std::move(in);
    if (!has_backward(w0_, w1_)) {
      fail("", "has no backward in " + out_.step + " (no " + std::string(kEvaluate) + kAccumulateGrad +
                   " event): profile the whole training step, loss.backward() included");
    }
  }

  // Marks each CPU span that does not start inside another span of its thread. (A child whose
  // rounded end overhangs its parent's still starts inside it.)
  void top_level() {
    std::unordered_map<std::string, double> open_until;  // per thread: the end of the open top span
    for (Span& s : cpu_) {
      auto [it, added] = open_until.emplace(s.thread, -1e300);
      if (s.ts >= it->second) {
        s.top = true;
        it->second = s.end();
      }
    }
  }

  void phases() {
    // Backward nodes: every evaluate_function span, top-level on its thread.
    for (const Span& s : cpu_) {
      if (s.top && is_evaluate(s)) backward_.push_back(&s);
    }
    if (backward_.empty()) {
      for (const Span& s : cpu_) {  // a trace without the engine's wrappers: the nodes alone
        if (s.top && s.name == kAccumulateGrad) backward_.push_back(&s);
      }
    }
    if (backward_.empty()) {
      fail("", "has no backward in " + out_.step + " (its AccumulateGrad events are inside other ops, not the "
                   "autograd engine's " + kEvaluate + "spans)");
    }
    b0_ = backward_.front()->ts;
    b_end_ = b0_;
    for (const Span* s : backward_) b_end_ = std::max(b_end_, s->end());
    // The loss's own backward nodes lead the backward.
    size_t first_model = 0;
    b_loss_end_ = b0_;
    while (first_model < backward_.size() && is_evaluate(*backward_[first_model]) &&
           is_loss_node(node_of(*backward_[first_model]))) {
      b_loss_end_ = std::max(b_loss_end_, backward_[first_model]->end());
      ++first_model;
    }
    // Gradient groups in ready order: consecutive AccumulateGrads with no compute node between.
    bool open = false;
    for (size_t i = first_model; i < backward_.size(); ++i) {
      const Span& s = *backward_[i];
      const bool accumulate = s.name == kAccumulateGrad || (is_evaluate(s) && node_of(s) == kAccumulateGrad);
      if (accumulate) {
        if (!open) groups_.emplace_back();
        groups_.back().push_back(&s);
        open = true;
      } else if (!is_view_node(node_of(s))) {
        open = false;
      }
    }
    if (groups_.empty()) {
      fail("", "has no backward in " + out_.step + " (no " + std::string(kEvaluate) + kAccumulateGrad +
                   " event after the loss's backward)");
    }
    backward_thread_ = groups_.front().front()->thread;

    if (main_.empty()) {
      for (const Span& s : cpu_) {
        if (s.top && is_loss_op(s.name)) {
          main_ = s.thread;
          break;
        }
      }
      if (main_.empty()) main_ = backward_.front()->thread;
    }
    // zero_grad and the optimizer step: their annotations.
    for (const Span& s : cpu_) {
      if (starts_with(s.name, "Optimizer.zero_grad")) zero_grad_.push_back(&s);
      if (starts_with(s.name, "Optimizer.step")) optimizer_.push_back(&s);
    }
    // The loss forward: the run of loss ops that ends the forward (top-level on the main thread).
    std::vector<const Span*> before;  // main-thread top-level spans before the backward
    for (const Span& s : cpu_) {
      if (s.top && s.thread == main_ && s.ts < b0_ && !starts_with(s.name, "Optimizer.")) before.push_back(&s);
    }
    int last_loss = -1;
    for (int i = static_cast<int>(before.size()) - 1; i >= 0; --i) {
      if (is_loss_op(before[static_cast<size_t>(i)]->name)) {
        last_loss = i;
        break;
      }
    }
    if (last_loss >= 0) {
      int first = last_loss;
      while (first > 0 && is_loss_op(before[static_cast<size_t>(first - 1)]->name)) --first;
      loss_op_ = before[static_cast<size_t>(first)];
      l0_ = loss_op_->ts;
      for (int i = first; i <= last_loss; ++i) l1_ = std::max(l1_, before[static_cast<size_t>(i)]->end());
    } else {
      l0_ = b0_;
      l1_ = b0_;
      out_.notes.push_back("no loss op recognised before the backward: the loss forward is counted in the forward");
    }
    // The forward starts after the zero_grad or optimizer step that precedes it, if any.
    double after = w0_;
    for (const Span* s : zero_grad_) {
      if (s->end() <= l0_) after = std::max(after, s->end());
    }
    for (const Span* s : optimizer_) {
      if (s->end() <= l0_) after = std::max(after, s->end());
    }
    f0_ = -1;
    for (const Span* s : before) {
      if (s->ts >= after && s->ts < l0_) {
        f0_ = s->ts;
        break;
      }
    }
    if (f0_ < 0) fail("", "no forward ops before the loss in " + out_.step);
  }

  // Parameter tensors in ready order (one per AccumulateGrad), bytes from the shapes when recorded.
  void parameters() {
    std::vector<std::optional<int64_t>> ready_bytes;
    for (const auto& group : groups_) {
      for (const Span* g : group) {
        std::optional<std::vector<int64_t>> shape = first_input_shape(*g);
        if (!shape) {  // the node's own span inside the engine's wrapper holds the inputs
          // cpu_ is sorted by start: only the spans that start within the wrapper are looked at.
          auto inner = std::lower_bound(cpu_.begin(), cpu_.end(), g->ts,
                                        [](const Span& a, double ts) { return a.ts < ts; });
          for (; inner != cpu_.end() && inner->ts <= g->end(); ++inner) {
            if (inner->thread == g->thread && inner->name == kAccumulateGrad && &*inner != g) {
              shape = first_input_shape(*inner);
              break;
            }
          }
        }
        ready_bytes.push_back(shape ? std::optional<int64_t>(elements(*shape) * 4) : std::nullopt);
      }
    }
    const size_t n = ready_bytes.size();
    ready_.resize(n);
    if (!options_.params.empty()) {
      if (options_.params.size() != n) {
        fail("", std::to_string(options_.params.size()) + " parameter tensors in " + options_.params_file +
                     " but the backward of " + out_.step + " accumulated " + std::to_string(n) + " gradients");
      }
      for (size_t k = 0; k < n; ++k) {
        ready_[n - 1 - k] = options_.params[k];
        const auto& seen = ready_bytes[n - 1 - k];
        if (seen && *seen != options_.params[k].bytes) {
          out_.notes.push_back("warning: " + options_.params_file + " gives " + options_.params[k].name + " " +
                               std::to_string(options_.params[k].bytes) + " bytes, the trace's shape " +
                               std::to_string(*seen) + " (the file's bytes are used)");
        }
      }
      out_.params_from = options_.params_file;
      check_parameter_bytes();
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      if (!ready_bytes[i]) {
        fail("", std::string("the trace has no parameter shapes (AccumulateGrad events without Input Dims") +
                     (legacy_ ? "; a legacy-profiler trace, from a torch without Kineto, never has them" : "") +
                     "): take it with record_shapes=True or pass --params FILE (one 'name bytes' per line in "
                     "registration order)");
      }
      ready_[i] = {"param." + std::to_string(n - 1 - i), *ready_bytes[i]};
    }
    out_.params_from = "the trace's shapes";
    check_parameter_bytes();
  }

  // No model has a parameter tensor, or parameters together, of more than kMaxBytes: more is a
  // damaged trace's shape or --params list, and would overflow the sums.
  void check_parameter_bytes() const {
    int64_t total = 0;
    for (const ParamTensor& p : ready_) {
      if (p.bytes > kMaxBytes) {
        fail("", "parameter tensor " + p.name + " (from " + out_.params_from + ") is " + with_thousands(p.bytes) +
                     " bytes, more than 2^50 (1 PiB): not a model's");
      }
      total += p.bytes;
      if (total > kMaxBytes) {
        fail("", "the parameter tensors (from " + out_.params_from + ") add up to more than 2^50 bytes (1 PiB): "
                 "not a model's");
      }
    }
  }

  // Collectives: their outermost CPU spans (nested ones are the same collective) and device kernels.
  std::vector<const Span*> collective_spans() const {
    std::vector<const Span*> found;
    std::unordered_map<std::string, double> open_until;
    for (const Span& s : cpu_) {
      if (!is_collective(s)) continue;
      auto [it, added] = open_until.emplace(s.thread, -1e300);
      if (s.ts < it->second) continue;  // inside a collective already counted
      it->second = s.end();
      found.push_back(&s);
    }
    return found;
  }

  void add_collective(const Span& s, bool device, double subtracted) {
    auto it = std::find_if(out_.collectives.begin(), out_.collectives.end(),
                           [&](const TraceCollective& c) { return c.name == s.name && c.device == device; });
    if (it == out_.collectives.end()) {
      TraceCollective c;
      c.name = s.name;
      c.device = device;
      c.all_reduce = is_all_reduce(s);
      c.on_backward_thread = !device && s.thread == backward_thread_;
      out_.collectives.push_back(c);
      it = out_.collectives.end() - 1;
    }
    ++it->count;
    it->time_s += s.dur * 1e-6;
    it->subtracted_s += subtracted * 1e-6;
    const int64_t bytes = message_bytes(s);
    if (bytes >= 0) it->bytes = add_bytes(std::max<int64_t>(it->bytes, 0), bytes);
  }

  // Ready time of each group (the end of its last AccumulateGrad) and its backward interval.
  std::vector<std::pair<double, double>> group_intervals() const {
    std::vector<std::pair<double, double>> out;
    double previous = b_loss_end_;
    for (size_t g = 0; g < groups_.size(); ++g) {
      const double ready = groups_[g].back()->end();
      const double end = g + 1 == groups_.size() ? std::max(ready, b_end_) : ready;
      out.emplace_back(previous, end);
      previous = end;
    }
    return out;
  }

  static double sum_durations(const std::vector<const Span*>& spans) {
    double total = 0;
    for (const Span* s : spans) total += s->dur;
    return total;
  }

  void cpu_times() {
    const auto intervals = group_intervals();
    group_s_.assign(groups_.size(), 0.0);
    std::vector<double> subtract(groups_.size(), 0.0);
    for (const Span* c : collective_spans()) {
      double taken = 0;
      if (c->thread == backward_thread_) {
        for (size_t g = 0; g < intervals.size(); ++g) {
          const double o = overlap(c->ts, c->end(), intervals[g].first, intervals[g].second);
          subtract[g] += o;
          taken += o;
        }
      }
      add_collective(*c, false, taken);
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      group_s_[g] = std::max(0.0, intervals[g].second - intervals[g].first - subtract[g]) * 1e-6;
    }
    forward_s_ = (l0_ - f0_) * 1e-6;
    loss_s_ = (std::max(b_loss_end_, l1_) - l0_) * 1e-6;
    if (loss_op_ == nullptr) loss_s_ = (b_loss_end_ - b0_) * 1e-6;
    zero_grad_s_ = sum_durations(zero_grad_) * 1e-6;
    optimizer_s_ = sum_durations(optimizer_) * 1e-6;
    iteration_s_ = (w1_ - w0_) * 1e-6;
  }

  // GPU traces: each kernel's time goes to the phase of the CPU op that launched it.
  void device_times() {
    out_.device_times = true;
    std::unordered_map<int64_t, const Span*> by_external;   // innermost op of each External id
    std::unordered_map<int64_t, const Span*> by_correlation;  // the runtime call of each launch
    for (const Span& s : cpu_) {
      if (s.cat == "cuda_runtime" || s.cat == "cuda_driver" || s.cat == "runtime") {
        if (s.correlation >= 0) by_correlation[s.correlation] = &s;
      } else if (s.external_id >= 0) {
        by_external[s.external_id] = &s;  // sorted by start: the last one is the innermost
      }
    }
    const auto intervals = group_intervals();
    std::vector<std::pair<double, double>> forward, loss, zero_grad, optimizer;
    std::vector<std::vector<std::pair<double, double>>> groups(groups_.size());
    double last_end = w1_;
    int unattributed = 0;
    const auto inside = [](const std::vector<const Span*>& spans, double t) {
      return std::any_of(spans.begin(), spans.end(), [&](const Span* s) { return t >= s->ts && t <= s->end(); });
    };
    for (const Span& k : device_spans_) {
      const Span* launch = nullptr;
      if (k.correlation >= 0) {
        const auto it = by_correlation.find(k.correlation);
        if (it != by_correlation.end()) launch = it->second;
      }
      if (launch == nullptr && k.external_id >= 0) {
        const auto it = by_external.find(k.external_id);
        if (it != by_external.end()) launch = it->second;
      }
      if (launch == nullptr) {
        // A kernel of another step, or one the trace does not link: outside this step if it ran outside.
        if (k.ts >= w0_ && k.ts < w1_) ++unattributed;
        continue;
      }
      const double t = launch->ts;
      if (t < w0_ || t >= w1_) continue;  // launched by another step
      last_end = std::max(last_end, k.end());
      if (is_collective(k)) {
        add_collective(k, true, 0);
        continue;
      }
      const std::pair<double, double> run{k.ts, k.end()};
      if (inside(zero_grad_, t)) {
        zero_grad.push_back(run);
      } else if (inside(optimizer_, t)) {
        optimizer.push_back(run);
      } else if (t >= f0_ && t < l0_) {
        forward.push_back(run);
      } else if (t >= l0_ && t <= b_loss_end_) {
        loss.push_back(run);
      } else {
        bool placed = false;
        for (size_t g = 0; g < intervals.size() && !placed; ++g) {
          if (t > intervals[g].first && t <= intervals[g].second) {
            groups[g].push_back(run);
            placed = true;
          }
        }
        if (!placed) other_kernels_s_ += k.dur * 1e-6;
      }
    }
    for (const Span* c : collective_spans()) add_collective(*c, false, 0);
    if (unattributed > 0) {
      out_.notes.push_back(std::to_string(unattributed) + " device kernels in the step are linked to no CPU op "
                           "(no correlation or External id): left out");
    }
    forward_s_ = union_length(forward) * 1e-6;
    loss_s_ = union_length(loss) * 1e-6;
    zero_grad_s_ = union_length(zero_grad) * 1e-6;
    optimizer_s_ = union_length(optimizer) * 1e-6;
    group_s_.clear();
    for (const auto& g : groups) group_s_.push_back(union_length(g) * 1e-6);
    iteration_s_ = (last_end - w0_) * 1e-6;
  }

  void batch_and_shapes() {
    // The first op of the forward that takes a tensor: its first dimension is the batch.
    const Span* input_op = nullptr;
    for (const Span& s : cpu_) {
      if (s.thread == main_ && s.ts >= f0_ && s.ts < l0_ && first_input_shape(s)) {
        input_op = &s;
        break;
      }
    }
    std::optional<std::vector<int64_t>> input = input_op ? first_input_shape(*input_op) : std::nullopt;
    if (options_.batch) {
      batch_ = *options_.batch;
      out_.batch_from = "--batch";
    } else if (input && (*input)[0] >= 1) {
      batch_ = (*input)[0];
      out_.batch_from = "the first forward op's input, " + input_op->name;
    } else {
      fail("", std::string("no batch size: the trace has no input shapes (") +
                   (legacy_ ? "a legacy-profiler trace, from a torch without Kineto, never has them"
                            : "take it with record_shapes=True") +
                   ") and no --batch B was given");
    }
    if (input && (*input)[0] == batch_) {
      const std::vector<int64_t> sample(input->begin() + 1, input->end());
      input_bytes_ = elements(sample) * 4;
    }
    if (loss_op_ != nullptr) {
      const auto logits = first_input_shape(*loss_op_);
      if (logits && logits->size() == 2 && (*logits)[1] >= 1 && (*logits)[1] <= 1'000'000'000) {
        classes_ = static_cast<int>((*logits)[1]);
      }
      if (logits && !logits->empty() && (*logits)[0] != batch_) {
        out_.notes.push_back("the loss's input has " + std::to_string((*logits)[0]) + " rows, the batch is " +
                             std::to_string(batch_));
      }
    }
  }

  void memory() {
    // A GPU trace's peak is the device's; a CPU trace's the CPU allocator's.
    int64_t device = device_ ? 1 : 0;
    if (device_ && std::none_of(memory_.begin(), memory_.end(), [](const MemoryPoint& m) { return m.device_type == 1; })) {
      device = 0;
    }
    for (const MemoryPoint& m : memory_) {
      if (m.ts >= w0_ && m.ts < w1_ && m.device_type == device) {
        peak_ = std::max(peak_, m.total_allocated);
        out_.peak_memory_device = device;
      }
    }
  }

  void build() {
    ModelProfile& m = out_.model;
    m.name = options_.name;
    m.source = "trace:" + path_;
    m.batches = {batch_};
    m.loss_s = {loss_s_};
    m.zero_grad_s = {zero_grad_s_};
    m.optimizer_s = {optimizer_s_};
    m.iteration_s = {iteration_s_};
    m.missing = {"layer forward split", "oom_batch", "buffer_bytes", "output_shape", "forward_flops"};
    if (peak_ >= 0) {
      m.peak_memory_bytes = {peak_};
      m.memory_method = "profiler-total-allocated";
    } else {
      m.missing.insert(m.missing.begin(), "peak_memory_bytes");
    }
    if (input_bytes_ >= 1) {
      m.input_bytes_per_sample = input_bytes_;
    } else {
      m.missing.push_back("input_bytes_per_sample");
    }
    if (classes_ >= 1) {
      m.num_classes = classes_;
    } else {
      m.missing.push_back("num_classes");
    }
    LayerProfile forward;
    forward.name = "forward";
    forward.kind = "unsplit-forward";
    forward.forward_s = {forward_s_};
    forward.backward_s = {0.0};
    m.layers.push_back(forward);
    // Groups in forward order: the last group to become ready is the network's first layer.
    size_t ready_index = ready_.size();
    std::vector<LayerProfile> layers;
    for (size_t g = groups_.size(); g-- > 0;) {
      LayerProfile layer;
      layer.name = "group." + std::to_string(groups_.size() - 1 - g);
      layer.kind = "gradient-group";
      const size_t first = ready_index - groups_[g].size();
      for (size_t i = ready_index; i-- > first;) layer.params.push_back(ready_[i]);
      ready_index = first;
      layer.forward_s = {0.0};
      layer.backward_s = {group_s_[g]};
      out_.backward_s += group_s_[g];
      m.layers.push_back(std::move(layer));
    }
    // ready_ is in ready order; groups_ partition it front to back.
    int64_t bytes = 0;
    for (const ParamTensor& p : ready_) bytes += p.bytes;
    m.parameters = bytes / 4;
    out_.forward_s = forward_s_;
    out_.other_s = iteration_s_ - zero_grad_s_ - forward_s_ - loss_s_ - out_.backward_s - optimizer_s_;
    if (other_kernels_s_ > 0) {
      out_.notes.push_back(fmt("%.3f", other_kernels_s_ * 1e3) +
                           " ms of device kernels launched outside the phases (e.g. after the backward)");
    }
  }

  std::string path_;
  TraceImportOptions options_;
  json root_;
  std::vector<Span> cpu_;
  std::vector<Span> device_spans_;
  std::vector<MemoryPoint> memory_;
  TraceImport out_;

  double w0_ = 0, w1_ = 0;              // the step
  std::string main_;                    // the thread of the step / forward
  std::string backward_thread_;         // the thread of the AccumulateGrads
  std::vector<const Span*> backward_;   // top-level backward nodes in time order
  std::vector<std::vector<const Span*>> groups_;  // AccumulateGrads by group, ready order
  std::vector<ParamTensor> ready_;      // parameter tensors in ready order
  std::vector<const Span*> zero_grad_, optimizer_;
  const Span* loss_op_ = nullptr;
  double b0_ = 0, b_end_ = 0, b_loss_end_ = 0, l0_ = 0, l1_ = 0, f0_ = 0;
  bool device_ = false;
  bool legacy_ = false;  // a plain event list: the legacy profiler (no shapes, no memory events)

  double forward_s_ = 0, loss_s_ = 0, zero_grad_s_ = 0, optimizer_s_ = 0, iteration_s_ = 0, other_kernels_s_ = 0;
  std::vector<double> group_s_;
  int64_t batch_ = 0;
  int64_t input_bytes_ = 0;
  int classes_ = 0;
  double peak_ = -1;

};

}  // namespace

TraceImport import_trace_text(const std::string& text, const std::string& path, const TraceImportOptions& options) {
  if (options.name.empty()) throw std::invalid_argument("import_trace: the model needs a name");
  Importer importer(path, options);
  TraceImport t = importer.run(text);
  if (options.step_seconds) {
    if (!(*options.step_seconds > 0) || !std::isfinite(*options.step_seconds)) {
      throw std::invalid_argument("import_trace: step_seconds must be > 0");
    }
    const double traced = t.model.iteration_s[0];
    if (traced > 0) {
      const double f = *options.step_seconds / traced;
      for (LayerProfile& l : t.model.layers) {
        for (double& v : l.forward_s) v *= f;
        for (double& v : l.backward_s) v *= f;
      }
      for (auto* values : {&t.model.loss_s, &t.model.zero_grad_s, &t.model.optimizer_s, &t.model.iteration_s}) {
        for (double& v : *values) v *= f;
      }
      t.forward_s *= f;
      t.backward_s *= f;
      t.other_s *= f;
      for (TraceCollective& c : t.collectives) {
        c.time_s *= f;
        c.subtracted_s *= f;
      }
      t.notes.push_back(fmt("%.3f", traced * 1e3) + " ms traced, " + fmt("%.3f", *options.step_seconds * 1e3) +
                        " ms without the profiler (--step-seconds): every part scaled by " + fmt("%.3f", f));
    }
  }
  return t;
}

bool merge_traced_batch(ModelProfile& existing, const ModelProfile& traced) {
  if (traced.batches.size() != 1 || existing.layers.size() != traced.layers.size()) return false;
  for (size_t i = 0; i < existing.layers.size(); ++i) {
    const LayerProfile& a = existing.layers[i];
    const LayerProfile& b = traced.layers[i];
    if (a.name != b.name || a.params.size() != b.params.size()) return false;
    for (size_t k = 0; k < a.params.size(); ++k) {
      if (a.params[k].bytes != b.params[k].bytes) return false;
    }
  }
  const int64_t batch = traced.batches[0];
  const auto at = std::lower_bound(existing.batches.begin(), existing.batches.end(), batch);
  const auto index = at - existing.batches.begin();
  if (at != existing.batches.end() && *at == batch) {  // traced again: the new trace replaces it
    const auto erase = [index](std::vector<double>& values) {
      if (!values.empty()) values.erase(values.begin() + index);
    };
    existing.batches.erase(at);
    for (LayerProfile& l : existing.layers) {
      erase(l.forward_s);
      erase(l.backward_s);
    }
    for (auto* values : {&existing.loss_s, &existing.zero_grad_s, &existing.optimizer_s, &existing.iteration_s,
                         &existing.peak_memory_bytes}) {
      erase(*values);
    }
  }
  // Every per-batch array gets the traced value at the batch's place. Peak memory, which a trace
  // without memory events cannot give, is kept only when both imports measured it.
  const auto insert = [index](std::vector<double>& into, const std::vector<double>& from) {
    into.insert(into.begin() + index, from.at(0));
  };
  existing.batches.insert(existing.batches.begin() + index, batch);
  for (size_t i = 0; i < existing.layers.size(); ++i) {
    insert(existing.layers[i].forward_s, traced.layers[i].forward_s);
    insert(existing.layers[i].backward_s, traced.layers[i].backward_s);
  }
  insert(existing.loss_s, traced.loss_s);
  insert(existing.zero_grad_s, traced.zero_grad_s);
  insert(existing.optimizer_s, traced.optimizer_s);
  insert(existing.iteration_s, traced.iteration_s);
  if (!existing.peak_memory_bytes.empty() && !traced.peak_memory_bytes.empty()) {
    insert(existing.peak_memory_bytes, traced.peak_memory_bytes);
  } else {
    existing.peak_memory_bytes.clear();
  }
  // Measured by `measure` only, never by a trace: with a traced batch among them, none.
  existing.steady_peak_memory_bytes.clear();
  existing.minor_faults.clear();
  for (const std::string& m : traced.missing) {
    if (std::find(existing.missing.begin(), existing.missing.end(), m) == existing.missing.end()) {
      existing.missing.push_back(m);
    }
  }
  // The input's bytes per sample and the classes are the network's, not a batch's: measured by
  // either import (a trace with shapes and its own batch), they are not missing. (Named missing
  // beside a value, the profile would not read back.)
  if (existing.input_bytes_per_sample < 1) existing.input_bytes_per_sample = traced.input_bytes_per_sample;
  if (existing.num_classes < 1) existing.num_classes = traced.num_classes;
  existing.missing.erase(std::remove_if(existing.missing.begin(), existing.missing.end(),
                                        [&](const std::string& m) {
                                          return (m == "input_bytes_per_sample" && existing.input_bytes_per_sample >= 1) ||
                                                 (m == "num_classes" && existing.num_classes >= 1);
                                        }),
                         existing.missing.end());
  if (existing.peak_memory_bytes.empty() &&
      std::find(existing.missing.begin(), existing.missing.end(), "peak_memory_bytes") == existing.missing.end()) {
    existing.missing.push_back("peak_memory_bytes");
  }
  return true;
}

TraceImport import_trace(const std::string& path, const TraceImportOptions& options) {
  return import_trace_text(read_input_text(path, "a profiler trace", kMaxTraceBytes), path, options);
}

std::vector<ParamTensor> read_params_file(const std::string& path) {
  std::istringstream in(read_input_text(path, "a --params file"));
  std::vector<ParamTensor> params;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    std::string bytes_text;
    std::string extra;
    fields >> name >> bytes_text;
    const auto bad = [&](const std::string& what) {
      throw InputError(path, number, "", what + " (expected 'NAME BYTES': a parameter tensor's name and its fp32 bytes)");
    };
    if (bytes_text.empty()) bad("no bytes after '" + name + "'");
    if (fields >> extra) bad("more than two fields");
    if (!std::all_of(bytes_text.begin(), bytes_text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
        bytes_text.size() > 16) {
      bad("'" + bytes_text + "' is not a whole number of bytes");
    }
    const int64_t bytes = std::stoll(bytes_text);
    if (bytes < 1 || bytes > kMaxBytes) bad("'" + bytes_text + "' bytes: must be between 1 and 2^50");
    params.push_back({name, bytes});
  }
  if (params.empty()) throw InputError(path, 0, "", "no parameter tensors (one 'NAME BYTES' per line)");
  return params;
}

std::string format_trace_import(const TraceImport& t, const std::string& path) {
  const ModelProfile& m = t.model;
  const auto ms = [](double s) { return fmt("%.3f", s * 1e3); };
  std::string out = "import-trace: " + path + ": " + t.step;
  if (!t.steps.empty()) {
    std::string steps;
    for (int64_t n : t.steps) steps += (steps.empty() ? "" : ", ") + std::to_string(n);
    out += " (steps in the trace: " + steps + ")";
  }
  out += t.device_times ? ", times from the device kernels\n" : ", times from the CPU ops (no device kernels)\n";
  out += "  model " + m.name + ": batch " + std::to_string(m.batches[0]) + " (from " + t.batch_from + "), " +
         std::to_string(m.layers.size() - 1) + " gradient groups, ";
  size_t tensors = 0;
  for (const LayerProfile& l : m.layers) tensors += l.params.size();
  out += std::to_string(tensors) + " parameter tensors, " + with_thousands(m.param_bytes()) + " bytes (from " +
         t.params_from + ")\n";
  out += "  iteration " + ms(m.iteration_s[0]) + " ms = zero_grad " + ms(m.zero_grad_s[0]) + " + forward " +
         ms(t.forward_s) + " + loss " + ms(m.loss_s[0]) + " + backward " + ms(t.backward_s) + " + optimizer " +
         ms(m.optimizer_s[0]) + " + other " + ms(t.other_s) + "\n";
  out += "  backward by gradient group (forward order):";
  // A deep network has a hundred groups: the first and last few, the rest counted.
  constexpr size_t kShown = 6;
  const size_t groups = m.layers.size() - 1;
  for (size_t i = 1; i < m.layers.size(); ++i) {
    if (groups > 2 * kShown && i == kShown + 1) {
      out += ", ... " + std::to_string(groups - 2 * kShown) + " more ...";
      i = groups - kShown;
      continue;
    }
    const LayerProfile& l = m.layers[i];
    out += (i > 1 ? ", " : " ") + l.name + " (" + std::to_string(l.params.size()) + " tensors, " +
           with_thousands(l.param_bytes()) + " B) " + ms(l.backward_s[0]) + " ms";
  }
  out += "\n";
  if (t.collectives.empty()) {
    out += "  collectives: none\n";
  } else {
    for (const TraceCollective& c : t.collectives) {
      out += "  collective " + c.name + (c.all_reduce ? " (all-reduce)" : "") + ": " + std::to_string(c.count) +
             "x, " + ms(c.time_s) + " ms";
      if (c.bytes >= 0) out += ", " + with_thousands(c.bytes) + " bytes";
      if (c.device) {
        out += ", device kernels: not counted as compute";
      } else if (t.device_times) {
        out += ", the CPU side of a device collective";
      } else if (c.on_backward_thread) {
        out += ", on the backward's thread: " + ms(c.subtracted_s) + " ms taken out of the backward layers";
      } else {
        out += ", on another thread: not in the layers";
      }
      out += "\n";
    }
    out += "  (the profile's collectives block is not filled from one trace)\n";
  }
  if (!m.peak_memory_bytes.empty()) {
    out += "  peak memory " + with_thousands(static_cast<int64_t>(m.peak_memory_bytes[0])) +
           " bytes (the [memory] events' Total Allocated, " + (t.peak_memory_device == 1 ? "device" : "cpu") + ")\n";
  }
  std::string missing;
  for (const std::string& s : m.missing) missing += (missing.empty() ? "" : ", ") + s;
  out += "  missing: " + missing + "\n";
  for (const std::string& note : t.notes) out += "  note: " + note + "\n";
  return out;
}

}  // namespace trainsim
