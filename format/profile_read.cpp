// Reading and validating the profile (layout: docs/PROFILE.md).

#include <algorithm>
#include <iterator>
#include <set>
#include <sstream>
#include <utility>

#include "format/bounds.h"
#include "format/errors.h"
#include "format/lr_rule.h"
#include "format/profile_io.h"
#include "format/yaml_reader.h"

namespace trainsim {
namespace {

using yaml_io::Map;
using yaml_io::Value;

constexpr double kNonNegative = 0.0;
constexpr double kMinSamplesPerSecond = 1e-3;
constexpr double kMaxSamplesPerSecond = 1e12;

// What a number of the profile measures, and the range that can be one.
enum class Quantity { kSeconds, kBytes };

double checked(const Value& value, double x, Quantity q) {
  if (q == Quantity::kBytes && x > static_cast<double>(kMaxBytes)) {
    value.fail("more than 2^50 bytes (1 PiB) is not a model's or a machine's, got " + value.describe());
  }
  // A time of 0 is none (a part the profile did not time).
  if (q == Quantity::kSeconds && x != 0 && x < kMinMeasuredSeconds) {
    value.fail("a measured time below 1 ns is not one (0 means none), got " + value.describe());
  }
  if (q == Quantity::kSeconds && x > kMaxMeasuredSeconds) {
    value.fail("a measured time beyond 10^6 s (11.6 days) is not one step's, copy's or collective's, got " +
               value.describe());
  }
  return x;
}

int64_t parse_bytes(const Value& value, int64_t min) {
  const int64_t bytes = value.as_int64(min);
  checked(value, static_cast<double>(bytes), Quantity::kBytes);
  return bytes;
}

std::vector<double> parse_doubles(const Value& value, Quantity q) {
  std::vector<double> out;
  for (const Value& item : value.as_list()) out.push_back(checked(item, item.as_double(kNonNegative), q));
  return out;
}

// Arrays aligned with ModelProfile::batches must have one value per batch.
std::vector<double> parse_per_batch(const Map& map, const char* key, size_t batch_count,
                                    Quantity q = Quantity::kSeconds) {
  const Value value = map.required(key);
  std::vector<double> out = parse_doubles(value, q);
  if (out.size() != batch_count) {
    value.fail("has " + std::to_string(out.size()) + " values but batches has " +
               std::to_string(batch_count));
  }
  return out;
}

// Each element must exceed the previous one.
template <typename T>
void require_strictly_ascending(const std::vector<T>& values, const std::vector<Value>& nodes,
                                const char* what) {
  for (size_t i = 1; i < values.size(); ++i) {
    if (!(values[i] > values[i - 1])) {
      nodes[i].fail(std::string(what) + " must be strictly ascending: " + nodes[i].describe() +
                    " follows " + nodes[i - 1].describe());
    }
  }
}

std::optional<int64_t> parse_optional_batch(const Map& map, const char* key) {
  const std::optional<Value> value = map.optional(key);
  if (!value || value->is_null()) return std::nullopt;
  return value->as_int64(/*min=*/1);
}

MachineInfo parse_machine(const Value& value) {
  const Map map(value, {"name", "host", "cpu", "cpu_cores", "host_memory_bytes", "device_kind",
                        "device_name", "device_count", "device_memory_bytes", "driver", "cuda",
                        "nccl", "libtorch", "date", "threads", "page_fault_s"});
  MachineInfo m;
  m.name = map.required("name").as_string();
  m.host = map.required("host").as_string();
  m.cpu = map.required("cpu").as_string();
  m.cpu_cores = map.required("cpu_cores").as_int(/*min=*/0);
  const Value host_memory = map.required("host_memory_bytes");
  m.host_memory_bytes = checked(host_memory, host_memory.as_double(kNonNegative), Quantity::kBytes);
  const Value kind = map.required("device_kind");
  m.device_kind = kind.as_string();
  if (m.device_kind != "cpu" && m.device_kind != "cuda") {
    kind.fail("unknown device_kind '" + m.device_kind + "' (expected cpu or cuda)");
  }
  m.device_name = map.required("device_name").as_string();
  m.device_count = map.required("device_count").as_int(/*min=*/0);
  const Value device_memory = map.required("device_memory_bytes");
  m.device_memory_bytes = checked(device_memory, device_memory.as_double(kNonNegative), Quantity::kBytes);
  m.driver = map.required("driver").as_string();
  m.cuda = map.required("cuda").as_string();
  m.nccl = map.required("nccl").as_string();
  m.libtorch = map.required("libtorch").as_string();
  m.date = map.required("date").as_string();
  m.threads = map.required("threads").as_int(/*min=*/0);
  if (auto v = map.optional("page_fault_s")) m.page_fault_s = checked(*v, v->as_double(kNonNegative), Quantity::kSeconds);
  return m;
}

MeasurementInfo parse_measurement(const Value& value) {
  const Map map(value, {"command", "data", "warmup", "repeats", "quick", "cudnn_benchmark",
                        "tf32_convolutions", "tf32_matmul", "precision", "memory_format", "resumed"});
  MeasurementInfo m;
  m.command = map.required("command").as_string();
  m.data = map.required("data").as_string();
  m.warmup = map.required("warmup").as_int(/*min=*/0);
  m.repeats = map.required("repeats").as_int(/*min=*/0);
  m.quick = map.required("quick").as_bool();
  for (auto [key, field] : {std::pair{"cudnn_benchmark", &m.cudnn_benchmark},
                            std::pair{"tf32_convolutions", &m.tf32_convolutions},
                            std::pair{"tf32_matmul", &m.tf32_matmul}}) {
    if (auto v = map.optional(key)) *field = v->as_bool();
  }
  if (auto v = map.optional("precision")) {
    const auto p = parse_precision(v->as_string());
    if (!p) v->fail("unknown precision " + v->describe() + " (expected " + std::string(kPrecisionNames) + ")");
    m.precision = *p;
  }
  if (auto v = map.optional("memory_format")) {
    const auto f = parse_memory_format(v->as_string());
    if (!f) v->fail("unknown memory format " + v->describe() + " (expected " + std::string(kMemoryFormatNames) + ")");
    m.memory_format = *f;
  }
  if (auto resumed = map.optional("resumed")) {
    for (const Value& item : resumed->as_list()) {
      const Map run(item, {"command", "date", "probe_s"});
      ResumedRun r;
      r.command = run.required("command").as_string();
      r.date = run.required("date").as_string();
      const Value probe = run.required("probe_s");
      r.probe_s = checked(probe, probe.as_double(kNonNegative), Quantity::kSeconds);
      if (r.probe_s <= 0) probe.fail("must be > 0, got " + probe.describe());
      m.resumed.push_back(std::move(r));
    }
  }
  return m;
}

LayerProfile parse_layer(const Value& value, size_t batch_count) {
  const Map map(value, {"name", "kind", "params", "buffer_bytes", "output_shape", "forward_flops",
                        "forward_s", "backward_s", "host_forward_s", "host_backward_s"});
  LayerProfile layer;
  layer.name = map.required("name").as_string();
  layer.kind = map.required("kind").as_string();
  for (const Value& item : map.required("params").as_list()) {
    const Map param(item, {"name", "bytes"});
    layer.params.push_back({param.required("name").as_string(), parse_bytes(param.required("bytes"), 0)});
  }
  layer.buffer_bytes = parse_bytes(map.required("buffer_bytes"), 0);
  // One sample's output, fp32: within the bytes any tensor can hold.
  double elements = 1;
  for (const Value& dim : map.required("output_shape").as_list()) {
    layer.output_shape.push_back(dim.as_int64(/*min=*/1));
    elements *= static_cast<double>(layer.output_shape.back());
    if (elements * 4 > static_cast<double>(kMaxBytes)) {
      dim.fail("an output of more than 2^50 bytes (1 PiB) per sample is not a model's, got " + dim.describe());
    }
  }
  layer.forward_flops = map.required("forward_flops").as_double(kNonNegative);
  layer.forward_s = parse_per_batch(map, "forward_s", batch_count);
  layer.backward_s = parse_per_batch(map, "backward_s", batch_count);
  if (map.optional("host_forward_s")) layer.host_forward_s = parse_per_batch(map, "host_forward_s", batch_count);
  if (map.optional("host_backward_s")) layer.host_backward_s = parse_per_batch(map, "host_backward_s", batch_count);
  return layer;
}

// [{ranks, batch, iteration_s}, ...]: grouped by batch, batches ascending; within a batch ranks
// strictly ascending from 1 (the slowdown is a ratio of times at the same batch); times > 0.
std::vector<ContentionPoint> parse_host_contention(const Value& value) {
  std::vector<ContentionPoint> points;
  for (const Value& item : value.as_list()) {
    const Map map(item, {"ranks", "batch", "iteration_s"});
    ContentionPoint p;
    const Value ranks = map.required("ranks");
    p.ranks = ranks.as_int(/*min=*/1);
    const Value batch = map.required("batch");
    p.batch = batch.as_int64(/*min=*/1);
    const Value time = map.required("iteration_s");
    p.iteration_s = checked(time, time.as_double(kNonNegative), Quantity::kSeconds);
    if (p.iteration_s <= 0) time.fail("must be > 0, got " + time.describe());
    const bool new_batch = points.empty() || p.batch != points.back().batch;
    if (!points.empty() && p.batch < points.back().batch) {
      batch.fail("points must be grouped by batch in ascending order: " + std::to_string(p.batch) +
                 " follows " + std::to_string(points.back().batch));
    }
    if (new_batch && p.ranks != 1) {
      ranks.fail("the first point of a batch must be the ranks: 1 reference, got " + ranks.describe());
    }
    if (!new_batch && p.ranks <= points.back().ranks) {
      ranks.fail("points must be strictly ascending in ranks: " + std::to_string(p.ranks) +
                 " follows " + std::to_string(points.back().ranks));
    }
    points.push_back(p);
  }
  return points;
}

// [{bytes, params: [i, ...]}, ...] in launch order: every parameter tensor of the model in
// exactly one bucket, each bucket's bytes the sum of its tensors' bytes.
std::vector<DdpBucket> parse_ddp_buckets(const Value& value, const ModelProfile& model) {
  std::vector<int64_t> tensor_bytes;
  for (const LayerProfile& layer : model.layers) {
    for (const ParamTensor& p : layer.params) tensor_bytes.push_back(p.bytes);
  }
  std::vector<bool> seen(tensor_bytes.size(), false);
  std::vector<DdpBucket> buckets;
  for (const Value& item : value.as_list()) {
    const Map map(item, {"bytes", "params"});
    DdpBucket bucket;
    const Value bytes = map.required("bytes");
    bucket.bytes = parse_bytes(bytes, 1);
    int64_t sum = 0;
    for (const Value& index : map.required("params").as_list()) {
      const int i = index.as_int(/*min=*/0);
      if (static_cast<size_t>(i) >= tensor_bytes.size()) {
        index.fail("parameter index " + std::to_string(i) + " out of range: the model has " +
                   std::to_string(tensor_bytes.size()) + " parameter tensors");
      }
      if (seen[static_cast<size_t>(i)]) index.fail("parameter " + std::to_string(i) + " in two buckets");
      seen[static_cast<size_t>(i)] = true;
      bucket.params.push_back(i);
      sum += tensor_bytes[static_cast<size_t>(i)];
    }
    if (bucket.params.empty()) item.fail("a bucket without parameters");
    if (sum != bucket.bytes) {
      bytes.fail("is " + std::to_string(bucket.bytes) + " but its parameters hold " +
                 std::to_string(sum) + " bytes");
    }
    buckets.push_back(std::move(bucket));
  }
  const auto missing = std::find(seen.begin(), seen.end(), false);
  if (!buckets.empty() && missing != seen.end()) {
    value.fail("parameter " + std::to_string(missing - seen.begin()) + " is in no bucket");
  }
  return buckets;
}

// `missing: [...]`: each entry one of kKnownMissing, none twice.
std::vector<std::string> parse_missing(const Value& value) {
  std::vector<std::string> missing;
  for (const Value& item : value.as_list()) {
    std::string entry = item.as_string();
    if (std::find(std::begin(kKnownMissing), std::end(kKnownMissing), entry) == std::end(kKnownMissing)) {
      std::string known;
      for (const char* k : kKnownMissing) known += (known.empty() ? "" : ", ") + std::string(k);
      item.fail("unknown missing entry '" + entry + "' (expected one of: " + known + ")");
    }
    if (std::find(missing.begin(), missing.end(), entry) != missing.end()) {
      item.fail("'" + entry + "' is named twice");
    }
    missing.push_back(std::move(entry));
  }
  return missing;
}

// A per-batch array, or for a key named in `missing`, an empty one.
std::vector<double> parse_per_batch_or_missing(const Map& map, const char* key, size_t batch_count,
                                               const ModelProfile& model, Quantity q = Quantity::kSeconds) {
  if (!model.is_missing(key)) return parse_per_batch(map, key, batch_count, q);
  const Value value = map.required(key);
  std::vector<double> out = parse_doubles(value, q);
  if (!out.empty()) {
    value.fail("is named in missing but has " + std::to_string(out.size()) + " values (expected [])");
  }
  return out;
}

// A count >= 1 (an int when `as_int`; else within the bytes bound), or for a key named in `missing`, 0.
int64_t parse_count_or_missing(const Map& map, const char* key, const ModelProfile& model, bool as_int = false) {
  const Value value = map.required(key);
  const int64_t min = model.is_missing(key) ? 0 : 1;
  const int64_t count = as_int ? value.as_int(static_cast<int>(min)) : parse_bytes(value, min);
  if (min == 0 && count != 0) value.fail("is named in missing but is " + std::to_string(count) + " (expected 0)");
  return count;
}

// The host's issue times (host_loss_s, host_zero_grad_s, host_optimizer_s and every layer's
// host_forward_s and host_backward_s): all of them or none, since the simulator overlaps the
// host with the device only where it knows both for every part of the step.
void parse_host_issue(const Map& map, const Value& value, ModelProfile& model) {
  const size_t n = model.batches.size();
  const char* model_keys[] = {"host_loss_s", "host_zero_grad_s", "host_optimizer_s"};
  std::vector<double>* model_arrays[] = {&model.host_loss_s, &model.host_zero_grad_s, &model.host_optimizer_s};
  bool any = false;
  for (int i = 0; i < 3; ++i) {
    if (map.optional(model_keys[i])) {
      *model_arrays[i] = parse_per_batch(map, model_keys[i], n);
      any = true;
    }
  }
  for (const LayerProfile& l : model.layers) any = any || !l.host_forward_s.empty() || !l.host_backward_s.empty();
  if (!any) return;
  for (int i = 0; i < 3; ++i) {
    if (model_arrays[i]->empty()) {
      value.fail(std::string("host issue times are given for part of the step: ") + model_keys[i] +
                 " is missing (give host_loss_s, host_zero_grad_s, host_optimizer_s and every layer's "
                 "host_forward_s and host_backward_s, or none)");
    }
  }
  for (const LayerProfile& l : model.layers) {
    if (l.host_forward_s.empty() || l.host_backward_s.empty()) {
      value.fail("host issue times are given for part of the step: layer " + l.name + " has no " +
                 (l.host_forward_s.empty() ? "host_forward_s" : "host_backward_s") +
                 " (give every layer's or none)");
    }
  }
}

ModelProfile parse_model(const std::string& name, const Value& value) {
  const Map map(value, {"source", "missing", "parameters", "input_bytes_per_sample", "num_classes", "batches",
                        "loss_s", "zero_grad_s", "optimizer_s", "iteration_s", "ddp_iteration_s",
                        "peak_memory_bytes", "memory_method", "oom_batch", "max_batch_tried",
                        "host_contention", "ddp_buckets", "layers", "host_loss_s", "host_zero_grad_s",
                        "host_optimizer_s", "steady_peak_memory_bytes", "minor_faults"});
  ModelProfile model;
  model.name = name;
  if (auto v = map.optional("source")) model.source = v->as_string();
  if (auto v = map.optional("missing")) model.missing = parse_missing(*v);
  model.parameters = parse_bytes(map.required("parameters"), 0);  // a count, within the same bound
  model.input_bytes_per_sample = parse_count_or_missing(map, "input_bytes_per_sample", model);
  model.num_classes = static_cast<int>(parse_count_or_missing(map, "num_classes", model, /*as_int=*/true));

  const std::vector<Value> batch_nodes = map.required("batches").as_list();
  for (const Value& batch : batch_nodes) model.batches.push_back(batch.as_int64(/*min=*/1));
  require_strictly_ascending(model.batches, batch_nodes, "batches");
  const size_t n = model.batches.size();

  model.loss_s = parse_per_batch_or_missing(map, "loss_s", n, model);
  model.zero_grad_s = parse_per_batch_or_missing(map, "zero_grad_s", n, model);
  model.optimizer_s = parse_per_batch_or_missing(map, "optimizer_s", n, model);
  model.iteration_s = parse_per_batch_or_missing(map, "iteration_s", n, model);
  if (map.optional("ddp_iteration_s")) model.ddp_iteration_s = parse_per_batch(map, "ddp_iteration_s", n);
  model.peak_memory_bytes = parse_per_batch_or_missing(map, "peak_memory_bytes", n, model, Quantity::kBytes);
  if (map.optional("steady_peak_memory_bytes")) {
    model.steady_peak_memory_bytes = parse_per_batch(map, "steady_peak_memory_bytes", n, Quantity::kBytes);
  }
  // A count, held to the bytes' bound (no iteration faults in 2^50 pages).
  if (map.optional("minor_faults")) model.minor_faults = parse_per_batch(map, "minor_faults", n, Quantity::kBytes);
  model.memory_method = map.required("memory_method").as_string();
  model.oom_batch = parse_optional_batch(map, "oom_batch");
  model.max_batch_tried = parse_optional_batch(map, "max_batch_tried");
  if (auto v = map.optional("host_contention")) model.host_contention = parse_host_contention(*v);

  for (const Value& layer : map.required("layers").as_list()) {
    model.layers.push_back(parse_layer(layer, n));
  }
  if (auto v = map.optional("ddp_buckets")) model.ddp_buckets = parse_ddp_buckets(*v, model);
  parse_host_issue(map, value, model);
  return model;
}

// bytes ascending, time_s the same length, both non-negative: {bytes: [...], time_s: [...]}.
std::vector<CurvePoint> parse_points(const Map& map) {
  const Value bytes_value = map.required("bytes");
  const Value time_value = map.required("time_s");
  const std::vector<Value> byte_nodes = bytes_value.as_list();
  std::vector<double> bytes;
  for (const Value& b : byte_nodes) bytes.push_back(checked(b, b.as_double(kNonNegative), Quantity::kBytes));
  require_strictly_ascending(bytes, byte_nodes, "bytes");
  const std::vector<double> times = parse_doubles(time_value, Quantity::kSeconds);
  if (times.size() != bytes.size()) {
    time_value.fail("has " + std::to_string(times.size()) + " values but bytes has " +
                    std::to_string(bytes.size()));
  }
  std::vector<CurvePoint> points;
  for (size_t i = 0; i < bytes.size(); ++i) points.push_back({bytes[i], times[i]});
  // A measured copy or collective takes time: a curve of zeros prices nothing (it once ended in
  // "error: internal" when a rank count had to be fitted from it).
  if (!points.empty() && std::none_of(points.begin(), points.end(),
                                      [](const CurvePoint& p) { return p.bytes > 0 && p.time_s > 0; })) {
    time_value.fail("no point has bytes > 0 and a time > 0: a measured curve takes time");
  }
  return points;
}

CopyProfile parse_h2d(const Value& value) {
  const Map map(value, {"applicable", "pinned", "pageable"});
  CopyProfile copy;
  copy.applicable = map.required("applicable").as_bool();
  copy.pinned = parse_points(Map(map.required("pinned"), {"bytes", "time_s"}));
  copy.pageable = parse_points(Map(map.required("pageable"), {"bytes", "time_s"}));
  return copy;
}

CollectivesProfile parse_collectives(const Value& value) {
  const Map map(value, {"backend", "source", "curves"});
  CollectivesProfile collectives;
  collectives.backend = map.required("backend").as_string();
  collectives.source = map.required("source").as_string();
  std::set<std::pair<std::string, int>> seen;
  for (const Value& item : map.required("curves").as_list()) {
    const Map curve_map(item, {"op", "ranks", "bytes", "time_s"});
    CollectiveCurve curve;
    const Value op = curve_map.required("op");
    curve.op = op.as_string();
    if (curve.op != "all_reduce" && curve.op != "broadcast" && curve.op != "reduce") {
      op.fail("unknown collective op '" + curve.op + "' (expected all_reduce, broadcast or reduce)");
    }
    curve.ranks = curve_map.required("ranks").as_int(/*min=*/1);
    if (!seen.insert({curve.op, curve.ranks}).second) {
      item.fail("second " + curve.op + " curve for " + std::to_string(curve.ranks) + " ranks");
    }
    curve.points = parse_points(curve_map);
    collectives.curves.push_back(std::move(curve));
  }
  return collectives;
}

// A loader's points: strictly ascending in workers, rates > 0.
std::vector<LoaderPoint> parse_loader_points(const Value& value) {
  std::vector<LoaderPoint> points;
  for (const Value& item : value.as_list()) {
    const Map point(item, {"workers", "samples_per_s", "startup_s"});
    LoaderPoint p;
    p.workers = point.required("workers").as_int(/*min=*/0);
    const Value rate = point.required("samples_per_s");
    p.samples_per_s = rate.as_double(kNonNegative);
    if (p.samples_per_s <= 0) rate.fail("must be > 0, got " + rate.describe());
    if (p.samples_per_s < kMinSamplesPerSecond || p.samples_per_s > kMaxSamplesPerSecond) {
      rate.fail("a loader's rate is between 10^-3 samples/s (one per 17 minutes) and 10^12, got " + rate.describe());
    }
    if (auto startup = point.optional("startup_s")) {
      p.startup_s = checked(*startup, startup->as_double(kNonNegative), Quantity::kSeconds);
    }
    if (!points.empty() && p.workers <= points.back().workers) {
      item.fail("points must be strictly ascending in workers: " + std::to_string(p.workers) +
                " follows " + std::to_string(points.back().workers));
    }
    points.push_back(p);
  }
  return points;
}

LoaderProfile parse_loader(const Value& value) {
  const Map map(value, {"data", "batch", "points", "at_batches"});
  LoaderProfile loader;
  loader.data = map.required("data").as_string();
  const Value batch = map.required("batch");
  loader.batch = batch.as_int64(/*min=*/0);
  loader.points = parse_loader_points(map.required("points"));
  if (!loader.points.empty() && loader.batch < 1) {
    batch.fail("must be >= 1 when points were measured, got " + batch.describe());
  }
  if (auto at_batches = map.optional("at_batches")) {
    if (loader.points.empty()) at_batches->fail("needs the loader's points at its batch first");
    for (const Value& item : at_batches->as_list()) {
      const Map entry(item, {"batch", "points"});
      const Value at_batch = entry.required("batch");
      LoaderAtBatch at;
      at.batch = at_batch.as_int64(/*min=*/1);
      if (at.batch == loader.batch) at_batch.fail("is the loader's own batch: its points are loader.points");
      if (!loader.at_batches.empty() && at.batch <= loader.at_batches.back().batch) {
        at_batch.fail("at_batches must be strictly ascending in batch: " + std::to_string(at.batch) + " follows " +
                      std::to_string(loader.at_batches.back().batch));
      }
      const Value points = entry.required("points");
      at.points = parse_loader_points(points);
      if (at.points.empty()) points.fail("must hold at least one point");
      loader.at_batches.push_back(std::move(at));
    }
  }
  return loader;
}

// A fraction in [0, 1] (accuracy).
double parse_fraction(const Value& value) {
  const double x = value.as_double(kNonNegative);
  if (x > 1) value.fail("must be a fraction in [0, 1], got " + value.describe());
  return x;
}

// Training examples processed so far, > 0.
double parse_examples(const Value& value) {
  const double x = value.as_double(kNonNegative);
  if (x <= 0) value.fail("must be > 0, got " + value.describe());
  return x;
}

// A test accuracy: a fraction, or -1 for "no test set evaluated".
double parse_test_accuracy(const Value& value) {
  const double x = value.as_double();
  if (x != -1 && (x < 0 || x > 1)) {
    value.fail("must be a fraction in [0, 1] or -1 (not evaluated), got " + value.describe());
  }
  return x;
}

// A point's BatchNorm probe: one non-negative loss per the curve's probe_batches (`batches`, empty:
// the curve has no probe, and a point may not carry one).
std::vector<double> parse_probe_loss(const Value& value, const std::vector<int64_t>& batches) {
  if (batches.empty()) value.fail("the curve has no probe_batches for a probe_loss to go with");
  std::vector<double> losses;
  for (const Value& item : value.as_list()) losses.push_back(item.as_double(kNonNegative));
  if (losses.size() != batches.size()) {
    value.fail("must hold one loss per probe_batches entry (" + std::to_string(batches.size()) + "), got " +
               std::to_string(losses.size()));
  }
  return losses;
}

// The scale-invariant parameters' readings of an epoch or a sample: all three or none, each >= 0
// and |w|^2 > 0 (a block of weights with no norm is no block).
void parse_scale_invariant(const Map& map, double& weight_sq, double& update_sq, double& trace_sigma) {
  const auto weight = map.optional("si_weight_sq");
  const auto update = map.optional("si_update_sq");
  const auto trace = map.optional("si_trace_sigma");
  if (!weight && !update && !trace) return;
  if (!weight || !update || !trace) {
    const Value& given = weight ? *weight : update ? *update : *trace;
    given.fail("si_weight_sq, si_update_sq and si_trace_sigma come together: one or two of them were given");
  }
  weight_sq = weight->as_double(kNonNegative);
  if (!(weight_sq > 0)) weight->fail("must be > 0, got " + weight->describe());
  update_sq = update->as_double(kNonNegative);
  trace_sigma = trace->as_double(kNonNegative);
}

// A point's test accuracy with BatchNorm's statistics recomputed, where the curve says on how many
// images (`recomputed`).
double parse_recomputed_accuracy(const Value& value, bool recomputed) {
  if (!recomputed) value.fail("the curve has no recompute_bn_images for a recomputed test accuracy to go with");
  return parse_fraction(value);
}

EpochPoint parse_epoch_point(const Value& value, const std::vector<int64_t>& probe_batches, bool recomputed) {
  const Map map(value, {"epoch", "examples", "train_loss", "train_accuracy", "test_accuracy", "test_accuracy_recomputed",
                        "grad_sq_norm", "trace_sigma", "noise_scale", "max_lr", "curvature_noise_scale",
                        "curvature_noise_scale_se", "probe_loss", "si_weight_sq", "si_update_sq", "si_trace_sigma"});
  EpochPoint p;
  p.epoch = map.required("epoch").as_int(/*min=*/1);
  p.examples = parse_examples(map.required("examples"));
  p.train_loss = map.required("train_loss").as_double(kNonNegative);
  p.train_accuracy = parse_fraction(map.required("train_accuracy"));
  p.test_accuracy = parse_test_accuracy(map.required("test_accuracy"));
  if (auto v = map.optional("test_accuracy_recomputed")) p.test_accuracy_recomputed = parse_recomputed_accuracy(*v, recomputed);
  p.grad_sq_norm = map.required("grad_sq_norm").as_double(kNonNegative);
  p.trace_sigma = map.required("trace_sigma").as_double(kNonNegative);
  p.noise_scale = map.required("noise_scale").as_double(kNonNegative);
  if (auto v = map.optional("max_lr")) p.max_lr = v->as_double(kNonNegative);
  if (auto v = map.optional("curvature_noise_scale")) p.curvature_noise_scale = v->as_double(kNonNegative);
  if (auto v = map.optional("curvature_noise_scale_se")) p.curvature_noise_scale_se = v->as_double(kNonNegative);
  if (auto v = map.optional("probe_loss")) p.probe_loss = parse_probe_loss(*v, probe_batches);
  parse_scale_invariant(map, p.si_weight_sq, p.si_update_sq, p.si_trace_sigma);
  return p;
}

CurveSample parse_curve_sample(const Value& value, const std::vector<int64_t>& probe_batches, bool recomputed) {
  const Map map(value, {"examples", "window_examples", "train_loss", "train_accuracy", "test_accuracy",
                        "test_accuracy_recomputed", "noise_scale",
                        "max_lr", "curvature_noise_scale", "curvature_noise_scale_se", "probe_loss", "si_weight_sq",
                        "si_update_sq", "si_trace_sigma"});
  CurveSample s;
  s.examples = parse_examples(map.required("examples"));
  const Value window = map.required("window_examples");
  s.window_examples = window.as_double(kNonNegative);
  if (s.window_examples <= 0 || s.window_examples > s.examples) {
    window.fail("must be in (0, examples], got " + window.describe());
  }
  s.train_loss = map.required("train_loss").as_double(kNonNegative);
  s.train_accuracy = parse_fraction(map.required("train_accuracy"));
  s.test_accuracy = parse_test_accuracy(map.required("test_accuracy"));
  if (auto v = map.optional("test_accuracy_recomputed")) s.test_accuracy_recomputed = parse_recomputed_accuracy(*v, recomputed);
  s.noise_scale = map.required("noise_scale").as_double(kNonNegative);
  if (auto v = map.optional("max_lr")) s.max_lr = v->as_double(kNonNegative);
  if (auto v = map.optional("curvature_noise_scale")) s.curvature_noise_scale = v->as_double(kNonNegative);
  if (auto v = map.optional("curvature_noise_scale_se")) s.curvature_noise_scale_se = v->as_double(kNonNegative);
  if (auto v = map.optional("probe_loss")) s.probe_loss = parse_probe_loss(*v, probe_batches);
  parse_scale_invariant(map, s.si_weight_sq, s.si_update_sq, s.si_trace_sigma);
  return s;
}

StartCurvature parse_start_curvature(const Value& value) {
  const Map map(value, {"lr_over_eps_max", "rest_lr_over_eps_max", "scale_invariant", "parameters"});
  StartCurvature s;
  s.lr_over_eps_max = map.required("lr_over_eps_max").as_double();
  if (auto rest = map.optional("rest_lr_over_eps_max")) s.rest_lr_over_eps_max = rest->as_double();
  s.parameters = map.required("parameters").as_int64(/*min=*/1);
  const Value invariant = map.required("scale_invariant");
  s.scale_invariant = invariant.as_int64(/*min=*/0);
  if (s.scale_invariant > s.parameters) {
    invariant.fail("must be at most parameters (" + std::to_string(s.parameters) + "), got " + invariant.describe());
  }
  return s;
}

PaceProbeReading parse_pace_probe_reading(const Value& value) {
  const Map map(value, {"examples", "ratio", "lr_ratio", "steps", "cool_steps", "cool", "draws", "gains"});
  PaceProbeReading r;
  const Value examples = map.required("examples");
  r.examples = examples.as_double(kNonNegative);
  if (r.examples <= 0) examples.fail("must be > 0 (a probe of the trained state), got " + examples.describe());
  r.ratio = map.required("ratio").as_int64(/*min=*/2);
  const Value lr_ratio = map.required("lr_ratio");
  r.lr_ratio = lr_ratio.as_double(kNonNegative);
  if (r.lr_ratio <= 0) lr_ratio.fail("must be > 0, got " + lr_ratio.describe());
  r.steps = map.required("steps").as_int64(/*min=*/1);
  r.cool_steps = map.required("cool_steps").as_int64(/*min=*/1);
  const Value cool = map.required("cool");
  r.cool = cool.as_double(kNonNegative);
  if (!(r.cool > 0 && r.cool < 1)) cool.fail("must be in (0, 1), got " + cool.describe());
  r.draws = map.required("draws").as_int64(/*min=*/1);
  const Value gains = map.required("gains");
  for (const Value& item : gains.as_list()) {
    const double g = item.as_double(kNonNegative);
    if (g <= 0) item.fail("a gain must be > 0, got " + item.describe());
    r.gains.push_back(g);
  }
  if (static_cast<int64_t>(r.gains.size()) > r.draws) {
    gains.fail("holds " + std::to_string(r.gains.size()) + " gains, more than its " + std::to_string(r.draws) +
               " draws");
  }
  return r;
}

// The optimizer and its learning-rate rule: optimizer, lars_eta, lr_rule, warmup_epochs.
void parse_curve_optimizer(const Map& map, TrainingCurve& curve) {
  if (auto optimizer = map.optional("optimizer")) {
    curve.optimizer = optimizer->as_string();
    if (curve.optimizer != "sgd" && curve.optimizer != "lars") {
      optimizer->fail("unknown optimizer '" + curve.optimizer + "' (expected sgd or lars)");
    }
  }
  if (auto eta = map.optional("lars_eta")) {
    if (curve.optimizer != "lars") eta->fail("only a lars curve has a trust coefficient");
    curve.lars_eta = eta->as_double(kNonNegative);
    if (curve.lars_eta <= 0) eta->fail("must be > 0, got " + eta->describe());
  } else if (curve.optimizer == "lars") {
    map.required("lars_eta");  // fails: a lars curve names its trust coefficient
  }
  const Value rule = map.required("lr_rule");
  curve.lr_rule = rule.as_string();
  if (!parse_lr_rule(curve.lr_rule)) {
    rule.fail("unknown lr_rule '" + curve.lr_rule + "' (expected constant, linear, linear-warmup or sqrt)");
  }
  if (auto warmup = map.optional("warmup_epochs")) {
    if (curve.lr_rule != "linear-warmup") warmup->fail("only a linear-warmup curve has a warm-up");
    curve.warmup_epochs = warmup->as_double(kNonNegative);
    if (curve.warmup_epochs <= 0) warmup->fail("must be > 0 epochs, got " + warmup->describe());
  }
}

// The probes of the trained state: probe_batches, recompute_bn_images, start_curvature, pace_probe.
void parse_curve_probes(const Map& map, TrainingCurve& curve) {
  if (auto batches = map.optional("probe_batches")) {
    for (const Value& item : batches->as_list()) {
      const int64_t b = item.as_int64(/*min=*/1);
      if (!curve.probe_batches.empty() && b <= curve.probe_batches.back()) {
        item.fail("probe_batches must be strictly ascending: " + std::to_string(b) + " follows " +
                  std::to_string(curve.probe_batches.back()));
      }
      curve.probe_batches.push_back(b);
    }
    if (curve.probe_batches.size() < 2) batches->fail("must hold at least two BatchNorm batches to compare");
  }
  if (auto images = map.optional("recompute_bn_images")) curve.recompute_bn_images = images->as_int64(/*min=*/1);
  if (auto start = map.optional("start_curvature")) curve.start_curvature = parse_start_curvature(*start);
  if (auto probe = map.optional("pace_probe")) {
    for (const Value& item : probe->as_list()) {
      PaceProbeReading r = parse_pace_probe_reading(item);
      if (!curve.pace_probe.empty() && r.examples < curve.pace_probe.back().examples) {
        std::ostringstream message;
        message << "pace_probe must be ascending in examples: " << r.examples << " follows "
                << curve.pace_probe.back().examples;
        item.fail(message.str());
      }
      curve.pace_probe.push_back(std::move(r));
    }
  }
}

// The epochs, strictly ascending in epoch and in examples.
void parse_curve_epochs(const Map& map, TrainingCurve& curve) {
  const std::vector<Value> nodes = map.required("epochs").as_list();
  for (size_t i = 0; i < nodes.size(); ++i) {
    EpochPoint point = parse_epoch_point(nodes[i], curve.probe_batches, curve.recompute_bn_images > 0);
    if (!curve.epochs.empty()) {
      const EpochPoint& previous = curve.epochs.back();
      if (point.epoch <= previous.epoch) {
        nodes[i].fail("epochs must be strictly ascending in epoch: " + std::to_string(point.epoch) +
                      " follows " + std::to_string(previous.epoch));
      }
      if (point.examples <= previous.examples) {
        std::ostringstream message;
        message << "examples must be strictly ascending: " << point.examples << " (epoch " << point.epoch
                << ") follows " << previous.examples << " (epoch " << previous.epoch << ")";
        nodes[i].fail(message.str());
      }
    }
    curve.epochs.push_back(point);
  }
}

// The samples inside the epochs: windows that do not overlap, none beyond the last epoch.
void parse_curve_samples(const Map& map, TrainingCurve& curve) {
  if (auto samples = map.optional("samples")) {
    for (const Value& node : samples->as_list()) {
      CurveSample sample = parse_curve_sample(node, curve.probe_batches, curve.recompute_bn_images > 0);
      // Windows follow one another: each starts at or after the previous one's end.
      const double previous_end = curve.samples.empty() ? 0.0 : curve.samples.back().examples;
      if (sample.examples - sample.window_examples < previous_end - 1e-9 * previous_end) {
        std::ostringstream message;
        message << "samples must be ascending with windows that do not overlap: the window (" << sample.window_examples
                << " examples) ending at " << sample.examples << " starts before the previous sample's end "
                << previous_end;
        node.fail(message.str());
      }
      if (!curve.epochs.empty() && sample.examples > curve.epochs.back().examples * (1 + 1e-9)) {
        std::ostringstream message;
        message << "sample at " << sample.examples << " examples lies beyond the last epoch ("
                << curve.epochs.back().examples << " examples)";
        node.fail(message.str());
      }
      curve.samples.push_back(sample);
    }
  }
}

TrainingCurve parse_training_curve(const Value& value) {
  const Map map(value, {"model", "data", "batch", "small_batch", "train_samples", "lr", "momentum",
                        "weight_decay", "lr_rule", "warmup_epochs", "optimizer", "lars_eta", "probe_batches",
                        "recompute_bn_images", "start_curvature", "pace_probe", "epochs", "samples"});
  TrainingCurve curve;
  curve.model = map.required("model").as_string();
  curve.data = map.required("data").as_string();
  curve.batch = map.required("batch").as_int64(/*min=*/1);
  const Value small = map.required("small_batch");
  curve.small_batch = small.as_int64(/*min=*/1);
  // The two-batch estimator divides by B_big - B_small and 1/B_small - 1/B_big.
  if (curve.small_batch >= curve.batch) {
    small.fail("must be smaller than batch (" + std::to_string(curve.batch) + "), got " +
               small.describe());
  }
  curve.train_samples = map.required("train_samples").as_int64(/*min=*/1);
  curve.lr = map.required("lr").as_double(kNonNegative);
  curve.momentum = map.required("momentum").as_double(kNonNegative);
  curve.weight_decay = map.required("weight_decay").as_double(kNonNegative);
  parse_curve_optimizer(map, curve);
  parse_curve_probes(map, curve);
  parse_curve_epochs(map, curve);
  parse_curve_samples(map, curve);
  return curve;
}

std::vector<TrainingCurve> parse_training(const Value& value) {
  std::vector<TrainingCurve> curves;
  for (const Value& item : value.as_list()) {
    TrainingCurve curve = parse_training_curve(item);
    for (const TrainingCurve& other : curves) {
      if (other.model == curve.model) item.fail("second training curve for model '" + curve.model + "'");
    }
    curves.push_back(std::move(curve));
  }
  return curves;
}

Calibration parse_calibration(const Value& value) {
  const Map map(value, {"model", "batch", "threads", "start_s", "end_s"});
  Calibration c;
  c.model = map.required("model").as_string();
  c.batch = map.required("batch").as_int64(/*min=*/1);
  c.threads = map.required("threads").as_int(/*min=*/1);
  for (auto [key, field] : {std::pair{"start_s", &c.start_s}, std::pair{"end_s", &c.end_s}}) {
    const Value v = map.required(key);
    *field = checked(v, v.as_double(kNonNegative), Quantity::kSeconds);
    if (*field <= 0) v.fail("must be > 0, got " + v.describe());
  }
  return c;
}

ForkCost parse_fork(const Value& value, size_t batch_count) {
  const Map map(value, {"workers", "points"});
  ForkCost fork;
  fork.workers = map.required("workers").as_int(/*min=*/1);
  for (const Value& item : map.required("points").as_list()) {
    const Map point(item, {"ranks", "iter_s", "first_batch_s", "cow_s"});
    ForkPoint p;
    const Value ranks = point.required("ranks");
    p.ranks = ranks.as_int(/*min=*/1);
    if (fork.points.empty() && p.ranks != 1) {
      ranks.fail("the first point must be the ranks: 1 reference, got " + ranks.describe());
    }
    if (!fork.points.empty() && p.ranks <= fork.points.back().ranks) {
      ranks.fail("points must be strictly ascending in ranks: " + std::to_string(p.ranks) + " follows " +
                 std::to_string(fork.points.back().ranks));
    }
    p.iter_s = parse_per_batch(point, "iter_s", batch_count);
    p.first_batch_s = parse_per_batch(point, "first_batch_s", batch_count);
    p.cow_s = parse_per_batch(point, "cow_s", batch_count);
    fork.points.push_back(std::move(p));
  }
  if (fork.points.empty()) map.required("points").fail("must hold the ranks: 1 point at least");
  return fork;
}

// Calls from Python into ATen in one forward: >= 1, at most kMaxForwardCalls.
int64_t parse_calls(const Value& value) {
  const int64_t calls = value.as_int64(/*min=*/1);
  if (calls > kMaxForwardCalls) value.fail("more than 10^7 calls in one forward is not a model's, got " + value.describe());
  return calls;
}

// Per-batch arrays of the Python loop: aligned with its own batches, times > 0.
PytorchLoop parse_pytorch_loop(const Value& value) {
  const Map map(value, {"batches", "iteration_s", "ddp_iteration_s", "minor_faults", "oom_batch", "fork",
                        "forward_calls", "replicate_s"});
  PytorchLoop loop;
  const std::vector<Value> batch_nodes = map.required("batches").as_list();
  for (const Value& batch : batch_nodes) loop.batches.push_back(batch.as_int64(/*min=*/1));
  require_strictly_ascending(loop.batches, batch_nodes, "batches");
  loop.iteration_s = parse_per_batch(map, "iteration_s", loop.batches.size());
  loop.ddp_iteration_s = parse_per_batch(map, "ddp_iteration_s", loop.batches.size());
  if (map.optional("minor_faults")) {
    loop.minor_faults = parse_per_batch(map, "minor_faults", loop.batches.size(), Quantity::kBytes);  // a count
  }
  loop.oom_batch = parse_optional_batch(map, "oom_batch");
  if (auto v = map.optional("fork")) loop.fork = parse_fork(*v, loop.batches.size());
  if (auto v = map.optional("forward_calls")) loop.forward_calls = parse_calls(*v);
  if (auto v = map.optional("replicate_s")) loop.replicate_s = checked(*v, v->as_double(kNonNegative), Quantity::kSeconds);
  return loop;
}

// The GIL block (GilProfile): threads ascending from 1, 2; every probe's forward_s aligned with them.
GilProfile parse_gil(const Value& value) {
  const Map map(value, {"threads", "depth", "probes"});
  GilProfile g;
  const Value threads = map.required("threads");
  const std::vector<Value> thread_nodes = threads.as_list();
  for (const Value& t : thread_nodes) {
    g.threads.push_back(t.as_int(/*min=*/1));
    if (g.threads.back() > kMaxGilThreads) t.fail("at most " + std::to_string(kMaxGilThreads) + " threads, got " + t.describe());
  }
  require_strictly_ascending(g.threads, thread_nodes, "threads");
  if (g.threads.size() < 2 || g.threads[0] != 1 || g.threads[1] != 2) {
    threads.fail("must start 1, 2 (one thread, then two: the GIL handed over), got " + threads.describe());
  }
  g.depth = map.required("depth").as_int(/*min=*/1);
  const Value probes = map.required("probes");
  for (const Value& item : probes.as_list()) {
    const Map probe(item, {"name", "width", "batch", "calls", "forward_s"});
    GilProbe p;
    p.name = probe.required("name").as_string();
    p.width = probe.required("width").as_int64(/*min=*/1);
    p.batch = probe.required("batch").as_int64(/*min=*/1);
    p.calls = parse_calls(probe.required("calls"));
    const Value forward = probe.required("forward_s");
    p.forward_s = parse_doubles(forward, Quantity::kSeconds);
    if (p.forward_s.size() != g.threads.size()) {
      forward.fail("has " + std::to_string(p.forward_s.size()) + " values but threads has " +
                   std::to_string(g.threads.size()));
    }
    for (double t : p.forward_s) {
      if (t <= 0) forward.fail("every time must be > 0, got " + forward.describe());
    }
    g.probes.push_back(std::move(p));
  }
  if (g.probes.empty()) probes.fail("must hold one probe at least");
  return g;
}

PytorchProfile parse_pytorch(const Value& value) {
  const Map map(value, {"torch", "torchvision", "python", "threads", "probe_s", "loader", "models", "gil"});
  PytorchProfile p;
  p.torch = map.required("torch").as_string();
  p.torchvision = map.required("torchvision").as_string();
  p.python = map.required("python").as_string();
  p.threads = map.required("threads").as_int(/*min=*/1);
  const Value probe = map.required("probe_s");
  p.probe_s = checked(probe, probe.as_double(kNonNegative), Quantity::kSeconds);
  if (p.probe_s <= 0) probe.fail("must be > 0, got " + probe.describe());
  p.loader = parse_loader(map.required("loader"));
  for (const auto& [name, loop] : Map(map.required("models")).entries()) {
    p.models.emplace(name, parse_pytorch_loop(loop));
  }
  if (auto v = map.optional("gil")) p.gil = parse_gil(*v);
  return p;
}

}  // namespace

Profile load_profile(const std::string& path) {
  const Value root = Value::load_file(&path);
  Profile profile;
  {
    // The version first: a newer file's unknown keys should read as "newer schema".
    const Map any_keys(root);
    const Value version = any_keys.required("schema_version");
    profile.schema_version = version.as_int();
    if (profile.schema_version != kProfileSchemaVersion) {
      version.fail("unsupported schema_version " + std::to_string(profile.schema_version) +
                   " (this trainsim reads schema_version " +
                   std::to_string(kProfileSchemaVersion) + ")");
    }
  }
  // Every section may be missing: `measure --resume` works from a partial profile.
  const Map top(root, {"schema_version", "machine", "measurement", "models", "h2d", "collectives",
                       "loader", "training", "calibration", "pytorch"});
  if (auto v = top.optional("machine")) profile.machine = parse_machine(*v);
  if (auto v = top.optional("measurement")) profile.measurement = parse_measurement(*v);
  if (auto v = top.optional("models")) {
    for (const auto& [name, model] : Map(*v).entries()) {
      profile.models.emplace(name, parse_model(name, model));
    }
  }
  if (auto v = top.optional("h2d")) profile.h2d = parse_h2d(*v);
  if (auto v = top.optional("collectives")) profile.collectives = parse_collectives(*v);
  if (auto v = top.optional("loader")) profile.loader = parse_loader(*v);
  if (auto v = top.optional("training")) profile.training = parse_training(*v);
  if (auto v = top.optional("calibration")) profile.calibration = parse_calibration(*v);
  if (auto v = top.optional("pytorch")) profile.pytorch = parse_pytorch(*v);
  return profile;
}

}  // namespace trainsim
