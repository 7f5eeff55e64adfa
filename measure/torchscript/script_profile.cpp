#include "torchscript/script_profile.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <numeric>
#include <unordered_map>

#include "cli_util.h"
#include "format/errors.h"
#include "stats.h"
#include "usage_error.h"

namespace trainsim::measure::torchscript {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::vector<std::string> split_dots(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', start)) {
    parts.push_back(name.substr(start, dot - start));
    start = dot + 1;
  }
  parts.push_back(name.substr(start));
  return parts;
}

int64_t tensor_bytes(const torch::Tensor& t) {
  return static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
}

// The shape of one sample of an output: the batch dimension dropped where it is the first (or,
// sequence-first, the second); otherwise the elements per sample, flat.
std::vector<int64_t> per_sample_shape(const torch::Tensor& t, int64_t batch) {
  const auto sizes = t.sizes().vec();
  std::vector<int64_t> shape;
  if (!sizes.empty() && sizes[0] == batch) {
    shape.assign(sizes.begin() + 1, sizes.end());
  } else if (sizes.size() >= 2 && sizes[1] == batch) {
    shape.push_back(sizes[0]);
    shape.insert(shape.end(), sizes.begin() + 2, sizes.end());
  } else {
    shape.push_back(std::max<int64_t>(1, t.numel() / std::max<int64_t>(1, batch)));
  }
  if (shape.empty()) shape.push_back(1);  // [batch] -> one value per sample
  for (int64_t& d : shape) d = std::max<int64_t>(d, 1);
  return shape;
}

// ---- the forward observer ----

// Which group's parameters the operators running now take, and since when.
struct ForwardTracer {
  const std::unordered_map<const c10::TensorImpl*, size_t>* group_of_impl = nullptr;
  const Device* device = nullptr;
  int64_t batch = 0;
  std::optional<size_t> current;
  Clock::time_point since;
  std::vector<double> seconds;  // per group
  std::vector<bool> seen;
  std::vector<size_t> first_use;
  std::vector<std::vector<int64_t>> output_shape;  // per group

  void see(const at::Tensor& t) {
    if (!t.defined()) return;
    const auto it = group_of_impl->find(t.unsafeGetTensorImpl());
    if (it == group_of_impl->end() || (current && *current == it->second)) return;
    synchronize(*device);
    const auto now = Clock::now();
    // Before the first group: the operators ahead of any parameter count with the first group.
    seconds[current.value_or(it->second)] += seconds_between(since, now);
    since = now;
    current = it->second;
    if (!seen[it->second]) {
      seen[it->second] = true;
      first_use.push_back(it->second);
    }
  }
};

thread_local ForwardTracer* t_tracer = nullptr;

std::unique_ptr<at::ObserverContext> on_operator_start(const at::RecordFunction& fn) {
  ForwardTracer* tracer = t_tracer;
  if (tracer == nullptr) return nullptr;
  for (const c10::IValue& value : fn.inputs()) {
    if (value.isTensor()) {
      tracer->see(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorVector()) tracer->see(t);
    }
  }
  return nullptr;
}

void on_operator_end(const at::RecordFunction& fn, at::ObserverContext*) {
  ForwardTracer* tracer = t_tracer;
  if (tracer == nullptr || !tracer->current) return;
  const auto& outputs = fn.outputs();
  if (!outputs.empty() && outputs[0].isTensor()) {
    const at::Tensor& t = outputs[0].toTensor();
    if (t.defined() && t.dim() > 0) tracer->output_shape[*tracer->current] = per_sample_shape(t, tracer->batch);
  }
}

// Installs the observer on this thread for its lifetime.
class ObserverScope {
 public:
  explicit ObserverScope(ForwardTracer& tracer) {
    t_tracer = &tracer;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&on_operator_start, &on_operator_end).needsInputs(true).needsOutputs(true));
  }
  ~ObserverScope() {
    at::removeCallback(handle_);
    t_tracer = nullptr;
  }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;

 private:
  at::CallbackHandle handle_;
};

// ---- the backward hooks ----

struct ReadyEvent {
  double at_s = 0;
  size_t parameter = 0;
};

// The TorchScript interpreter's message is the failing line of the model's code and, last, the
// exception it raised ("RuntimeError: Expected 4D input ..."): that last line.
std::string interpreter_error(const std::string& what) {
  std::string last;
  size_t start = 0;
  while (start < what.size()) {
    size_t end = what.find('\n', start);
    if (end == std::string::npos) end = what.size();
    const std::string line = what.substr(start, end - start);
    if (line.find_first_not_of(" \t") != std::string::npos) last = line;
    start = end + 1;
  }
  const size_t first = last.find_first_not_of(" \t");
  return first == std::string::npos ? what : last.substr(first);
}

}  // namespace

std::string group_key(const std::string& parameter_name) {
  const std::vector<std::string> parts = split_dots(parameter_name);
  if (parts.size() == 1) return parts[0];
  // The module path (all but the parameter's own name) up to the first container index.
  std::string key = parts[0];
  for (size_t i = 1; i + 1 < parts.size(); ++i) {
    key += "." + parts[i];
    if (all_digits(parts[i])) return key;
  }
  return parts[0];
}

std::vector<int64_t> parse_input_shape(const std::string& text) {
  std::vector<int64_t> shape;
  size_t start = 0;
  while (true) {
    const size_t x = text.find('x', start);
    const std::string item = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (!all_digits(item) || item.size() > 9 || std::stoll(item) < 1) {
      throw UsageError("--input-shape: '" + text + "' is not a shape like 3x32x32 (each dimension an integer >= 1)");
    }
    shape.push_back(std::stoll(item));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  if (shape.size() > 8) throw UsageError("--input-shape: '" + text + "' has more than 8 dimensions");
  return shape;
}

ScriptModel::ScriptModel(const ScriptModelOptions& options, const Device& device) : options_(options) {
  try {
    module_ = torch::jit::load(options.path, device.torch_device());
  } catch (const c10::Error& e) {
    throw InputError(options.path, 0, "", "not a TorchScript module (torch::jit::load: " + first_line(e.what_without_backtrace()) + ")");
  }
  if (!module_.find_method("forward")) throw InputError(options.path, 0, "", "the module has no forward method");
  module_.train(true);
  std::map<std::string, size_t> group_index;
  const auto group_of = [&](const std::string& name) {
    const std::string key = group_key(name);
    const auto [it, added] = group_index.emplace(key, keys_.size());
    if (added) {
      keys_.push_back(key);
      buffer_bytes_.push_back(0);
    }
    return it->second;
  };
  for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
    if (!p.value.requires_grad()) continue;  // frozen: no gradient, nothing for DDP to reduce
    names_.push_back(p.name);
    parameters_.push_back(p.value);
    group_of_.push_back(group_of(p.name));
  }
  if (parameters_.empty()) throw InputError(options.path, 0, "", "the module has no trainable parameters");
  for (const auto& b : module_.named_buffers(/*recurse=*/true)) {
    const auto it = group_index.find(group_key(b.name));
    // A buffer of a module without parameters of its own (e.g. BatchNorm without affine) joins
    // the first group: its bytes are broadcast all the same.
    buffer_bytes_[it == group_index.end() ? 0 : it->second] += tensor_bytes(b.value);
  }
}

torch::Tensor ScriptModel::forward(const torch::Tensor& input) {
  c10::IValue out;
  try {
    out = module_.forward({input});
  } catch (const std::exception& e) {  // the interpreter rethrows what failed as a runtime_error
    if (is_out_of_memory(e)) throw;
    std::string shape;
    for (int64_t d : input.sizes()) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    throw InputError(options_.path, 0, "", "forward on an input of shape " + shape + " failed: " +
                                               interpreter_error(e.what()));
  }
  if (!out.isTensor()) {
    throw InputError(options_.path, 0, "", std::string("forward returned a ") + out.tagKind() + ", not a tensor of logits");
  }
  return out.toTensor();
}

void ScriptModel::check_output(const torch::Tensor& logits, int64_t batch) const {
  if (logits.dim() != 2 || logits.size(0) != batch || logits.size(1) != options_.num_classes) {
    std::string shape;
    for (int64_t d : logits.sizes()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw InputError(options_.path, 0, "",
                     "forward on a batch of " + std::to_string(batch) + " returned [" + shape + "], not [" +
                         std::to_string(batch) + ", " + std::to_string(options_.num_classes) +
                         "] (--classes " + std::to_string(options_.num_classes) + ")");
  }
}

ModelProfile ScriptModel::describe(const std::string& name, const std::vector<size_t>& order) const {
  ModelProfile m;
  m.name = name;
  int64_t elements = 1;
  for (int64_t d : options_.input_shape) elements *= d;
  m.input_bytes_per_sample = elements * static_cast<int64_t>(sizeof(float));
  m.num_classes = options_.num_classes;
  int64_t count = 0;
  for (const auto& p : parameters_) count += p.numel();
  m.parameters = count;
  for (size_t g : order) {
    LayerProfile layer;
    layer.name = keys_[g];
    layer.kind = "parameter-group";
    for (size_t i = 0; i < parameters_.size(); ++i) {
      if (group_of_[i] == g) layer.params.push_back({names_[i], tensor_bytes(parameters_[i])});
    }
    layer.buffer_bytes = buffer_bytes_[g];
    m.layers.push_back(std::move(layer));
  }
  return m;
}

GroupSplit split_by_group(ScriptModel& model, const torch::Tensor& images, const Device& device) {
  const size_t groups = model.group_keys().size();
  std::unordered_map<const c10::TensorImpl*, size_t> group_of_impl;
  for (size_t i = 0; i < model.parameters().size(); ++i) {
    group_of_impl.emplace(model.parameters()[i].unsafeGetTensorImpl(), model.group_of_parameter()[i]);
  }
  GroupSplit split;
  ForwardTracer tracer;
  tracer.group_of_impl = &group_of_impl;
  tracer.device = &device;
  tracer.batch = images.size(0);
  tracer.seconds.assign(groups, 0.0);
  tracer.seen.assign(groups, false);
  tracer.output_shape.assign(groups, {});

  torch::Tensor out;
  synchronize(device);
  {
    ObserverScope scope(tracer);
    tracer.since = Clock::now();
    out = model.forward(images);
    synchronize(device);
    const auto end = Clock::now();
    if (tracer.current) tracer.seconds[*tracer.current] += seconds_between(tracer.since, end);
  }
  split.forward_s = tracer.seconds;
  split.forward_order = tracer.first_use;
  for (size_t g = 0; g < groups; ++g) {
    if (!tracer.seen[g]) split.forward_order.push_back(g);  // never used in forward: last
  }
  split.output_shape = tracer.output_shape;

  // Backward: one hook per parameter marks when its gradient is ready.
  std::mutex mutex;
  std::vector<ReadyEvent> events;
  Clock::time_point start;
  std::vector<torch::Tensor> parameters = model.parameters();
  std::vector<unsigned> handles;
  for (size_t i = 0; i < parameters.size(); ++i) {
    handles.push_back(parameters[i].register_hook([&, i](const torch::Tensor&) {
      synchronize(device);  // the autograd engine's thread for this device on CUDA
      const auto now = Clock::now();
      std::lock_guard<std::mutex> lock(mutex);
      events.push_back({seconds_between(start, now), i});
    }));
  }
  const torch::Tensor grad = torch::randn_like(out);
  synchronize(device);
  start = Clock::now();
  try {
    out.backward(grad);
  } catch (...) {
    for (size_t i = 0; i < parameters.size(); ++i) parameters[i].remove_hook(handles[i]);
    throw;
  }
  synchronize(device);
  const double end_s = seconds_between(start, Clock::now());
  for (size_t i = 0; i < parameters.size(); ++i) parameters[i].remove_hook(handles[i]);

  split.backward_s.assign(groups, 0.0);
  double previous = 0;
  for (const ReadyEvent& e : events) {
    const size_t g = model.group_of_parameter()[e.parameter];
    split.backward_s[g] += e.at_s - previous;
    previous = e.at_s;
    split.ready_order.push_back(e.parameter);
  }
  if (!events.empty()) split.backward_s[model.group_of_parameter()[events.back().parameter]] += end_s - previous;
  return split;
}

ScriptIteration::ScriptIteration(ScriptModel& model, int64_t batch, const Device& device, uint64_t seed)
    : model_(model),
      optimizer_(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(5e-4)) {
  torch::manual_seed(seed);
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), model.options().input_shape.begin(), model.options().input_shape.end());
  const auto on = torch::TensorOptions().device(device.torch_device());
  images_ = torch::randn(shape, on);
  labels_ = torch::randint(0, model.options().num_classes, {batch}, on.dtype(torch::kLong));
  model.module().train(true);
}

void ScriptIteration::run() {
  optimizer_.zero_grad();
  torch::nn::functional::cross_entropy(model_.forward(images_), labels_).backward();
  optimizer_.step();
}

void ScriptIteration::run_checked() {
  optimizer_.zero_grad();
  const torch::Tensor logits = model_.forward(images_);
  model_.check_output(logits, images_.size(0));
  torch::nn::functional::cross_entropy(logits, labels_).backward();
  optimizer_.step();
}

ScriptBatchTimings measure_script_batch(ScriptModel& model, const std::vector<size_t>& layer_order,
                                        int64_t batch, const Device& device, const Repetition& rep,
                                        uint64_t seed) {
  ScriptIteration step(model, batch, device, seed);
  torch::optim::SGD& optimizer = step.optimizer();
  const torch::Tensor& images = step.images();
  const torch::Tensor& labels = step.labels();

  ScriptBatchTimings t;
  t.batch = batch;
  // Peak memory first, while nothing else is alive; the first forward also checks the output.
  release_cached_memory(device);
  reset_peak_memory(device);
  step.run_checked();
  synchronize(device);
  t.peak_memory_bytes = peak_memory_bytes(device);
  t.iteration_s = median_seconds(device, rep, nullptr, [&] { step.run(); });

  const double forward_s = median_seconds(device, rep, nullptr, [&] { model.forward(images); });
  torch::Tensor out;
  torch::Tensor logits_value;
  {
    torch::NoGradGuard no_grad;
    logits_value = model.forward(images);
  }
  const torch::Tensor grad = torch::randn_like(logits_value);
  const double backward_s = median_seconds(
      device, rep, [&] { optimizer.zero_grad(); out = model.forward(images); }, [&] { out.backward(grad); });
  out = torch::Tensor();

  // The shares of each group, median over rep.repeats instrumented passes.
  const size_t groups = model.group_keys().size();
  std::vector<std::vector<double>> forward_parts(groups);
  std::vector<std::vector<double>> backward_parts(groups);
  for (int s = 0; s < std::max(1, rep.repeats); ++s) {
    optimizer.zero_grad();
    const GroupSplit split = split_by_group(model, images, device);
    for (size_t g = 0; g < groups; ++g) {
      forward_parts[g].push_back(split.forward_s[g]);
      backward_parts[g].push_back(split.backward_s[g]);
    }
    t.ready_order = split.ready_order;
  }
  std::vector<double> forward_median(groups);
  std::vector<double> backward_median(groups);
  for (size_t g = 0; g < groups; ++g) {
    forward_median[g] = median(forward_parts[g]);
    backward_median[g] = median(backward_parts[g]);
  }
  const double forward_sum = std::accumulate(forward_median.begin(), forward_median.end(), 0.0);
  const double backward_sum = std::accumulate(backward_median.begin(), backward_median.end(), 0.0);
  for (size_t g : layer_order) {
    t.forward_s.push_back(forward_sum > 0 ? forward_s * forward_median[g] / forward_sum : 0.0);
    t.backward_s.push_back(backward_sum > 0 ? backward_s * backward_median[g] / backward_sum : 0.0);
  }

  torch::Tensor logits = logits_value.detach().requires_grad_(true);
  t.loss_s = median_seconds(
      device, rep, [&] { logits.mutable_grad() = torch::Tensor(); },
      [&] { torch::nn::functional::cross_entropy(logits, labels).backward(); });
  t.zero_grad_s = median_seconds(device, rep, [&] { ensure_gradients(model.parameters()); },
                                 [&] { optimizer.zero_grad(); });
  t.optimizer_s = median_seconds(device, rep, [&] { ensure_gradients(model.parameters()); },
                                 [&] { optimizer.step(); });
  return t;
}

}  // namespace trainsim::measure::torchscript
