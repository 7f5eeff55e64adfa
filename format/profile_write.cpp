// Writing the profile as YAML (layout: docs/PROFILE.md). Hand-written rather than through a YAML
// emitter so the layout is fixed (numeric arrays in flow style, one curve per line) and
// every double is written with the shortest digits that read back to the same value.

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "format/atomic_write.h"
#include "format/profile_io.h"

namespace trainsim {
namespace {

std::string format_double(double value) {
  // Non-finite values are written in YAML's spelling; load_profile rejects them with a line.
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  char buffer[64];
  // Shortest representation that round-trips exactly (std::to_chars without a precision).
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, result.ptr);
  // YAML 1.1 readers (e.g. PyYAML) need a '.' before an exponent to see a float: 1e-05 -> 1.0e-05.
  const size_t exponent = text.find('e');
  if (exponent != std::string::npos && text.find('.') == std::string::npos) {
    text.insert(exponent, ".0");
  }
  return text;
}

// Every string is double-quoted, so no value can be mistaken for a number, bool or null.
std::string quote(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(c));
          out += escape;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string flow(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + format_double(values[i]);
  return out + "]";
}

std::string flow(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string optional_int(const std::optional<int64_t>& value) {
  return value ? std::to_string(*value) : "null";
}

// "bytes: [...], time_s: [...]" for a curve kept as two aligned arrays.
std::string curve_arrays(const std::vector<CurvePoint>& points) {
  std::vector<double> bytes;
  std::vector<double> times;
  for (const CurvePoint& p : points) {
    bytes.push_back(p.bytes);
    times.push_back(p.time_s);
  }
  return "bytes: " + flow(bytes) + ", time_s: " + flow(times);
}

class YamlText {
 public:
  // One "key: value" (or "- ..." item) line at the given nesting depth (two spaces per level).
  void line(int depth, const std::string& text) {
    text_.append(static_cast<size_t>(depth) * 2, ' ');
    text_ += text;
    text_ += '\n';
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

void write_machine(YamlText& y, const MachineInfo& m) {
  y.line(0, "machine:");
  y.line(1, "name: " + quote(m.name));
  y.line(1, "host: " + quote(m.host));
  y.line(1, "cpu: " + quote(m.cpu));
  y.line(1, "cpu_cores: " + std::to_string(m.cpu_cores));
  y.line(1, "host_memory_bytes: " + format_double(m.host_memory_bytes));
  y.line(1, "device_kind: " + quote(m.device_kind));
  y.line(1, "device_name: " + quote(m.device_name));
  y.line(1, "device_count: " + std::to_string(m.device_count));
  y.line(1, "device_memory_bytes: " + format_double(m.device_memory_bytes));
  y.line(1, "driver: " + quote(m.driver));
  y.line(1, "cuda: " + quote(m.cuda));
  y.line(1, "nccl: " + quote(m.nccl));
  y.line(1, "libtorch: " + quote(m.libtorch));
  y.line(1, "date: " + quote(m.date));
  y.line(1, "threads: " + std::to_string(m.threads));
  // Optional: written only when measured, so profiles without it keep their exact bytes.
  if (m.page_fault_s > 0) y.line(1, "page_fault_s: " + format_double(m.page_fault_s));
}

void write_measurement(YamlText& y, const MeasurementInfo& m) {
  y.line(0, "measurement:");
  y.line(1, "command: " + quote(m.command));
  y.line(1, "data: " + quote(m.data));
  y.line(1, "warmup: " + std::to_string(m.warmup));
  y.line(1, "repeats: " + std::to_string(m.repeats));
  y.line(1, std::string("quick: ") + (m.quick ? "true" : "false"));
  const auto flag = [&](const char* key, const std::optional<bool>& value) {
    if (value) y.line(1, std::string(key) + ": " + (*value ? "true" : "false"));
  };
  flag("cudnn_benchmark", m.cudnn_benchmark);
  flag("tf32_convolutions", m.tf32_convolutions);
  flag("tf32_matmul", m.tf32_matmul);
  // Written only when not fp32, so fp32 profiles keep their exact bytes.
  if (m.precision != Precision::kFp32) y.line(1, std::string("precision: ") + precision_name(m.precision));
  if (m.memory_format != MemoryFormat::kNchw) {
    y.line(1, std::string("memory_format: ") + memory_format_name(m.memory_format));
  }
  if (m.resumed.empty()) return;
  y.line(1, "resumed:");
  for (const ResumedRun& r : m.resumed) {
    y.line(2, "- {command: " + quote(r.command) + ", date: " + quote(r.date) + ", probe_s: " + format_double(r.probe_s) + "}");
  }
}

void write_layer(YamlText& y, const LayerProfile& layer) {
  y.line(3, "- name: " + quote(layer.name));
  y.line(4, "kind: " + quote(layer.kind));
  if (layer.params.empty()) {
    y.line(4, "params: []");
  } else {
    y.line(4, "params:");
    for (const ParamTensor& p : layer.params) {
      y.line(5, "- {name: " + quote(p.name) + ", bytes: " + std::to_string(p.bytes) + "}");
    }
  }
  y.line(4, "buffer_bytes: " + std::to_string(layer.buffer_bytes));
  y.line(4, "output_shape: " + flow(layer.output_shape));
  y.line(4, "forward_flops: " + format_double(layer.forward_flops));
  y.line(4, "forward_s: " + flow(layer.forward_s));
  y.line(4, "backward_s: " + flow(layer.backward_s));
  // Optional: written only when measured, so profiles without them keep their exact bytes.
  if (!layer.host_forward_s.empty()) y.line(4, "host_forward_s: " + flow(layer.host_forward_s));
  if (!layer.host_backward_s.empty()) y.line(4, "host_backward_s: " + flow(layer.host_backward_s));
}

void write_model(YamlText& y, const std::string& key, const ModelProfile& model) {
  if (key != model.name) {
    throw std::invalid_argument("profile_to_yaml: models key '" + key + "' holds model named '" +
                                model.name + "'");
  }
  y.line(1, quote(key) + ":");
  // Optional: written only when set, so profiles without them keep their exact bytes.
  if (!model.source.empty()) y.line(2, "source: " + quote(model.source));
  if (!model.missing.empty()) {
    std::string list;
    for (const std::string& m : model.missing) list += (list.empty() ? "" : ", ") + quote(m);
    y.line(2, "missing: [" + list + "]");
  }
  y.line(2, "parameters: " + std::to_string(model.parameters));
  y.line(2, "input_bytes_per_sample: " + std::to_string(model.input_bytes_per_sample));
  y.line(2, "num_classes: " + std::to_string(model.num_classes));
  y.line(2, "batches: " + flow(model.batches));
  y.line(2, "loss_s: " + flow(model.loss_s));
  y.line(2, "zero_grad_s: " + flow(model.zero_grad_s));
  y.line(2, "optimizer_s: " + flow(model.optimizer_s));
  y.line(2, "iteration_s: " + flow(model.iteration_s));
  if (!model.ddp_iteration_s.empty()) y.line(2, "ddp_iteration_s: " + flow(model.ddp_iteration_s));
  if (model.has_host_issue()) {
    y.line(2, "host_loss_s: " + flow(model.host_loss_s));
    y.line(2, "host_zero_grad_s: " + flow(model.host_zero_grad_s));
    y.line(2, "host_optimizer_s: " + flow(model.host_optimizer_s));
  }
  y.line(2, "peak_memory_bytes: " + flow(model.peak_memory_bytes));
  if (!model.steady_peak_memory_bytes.empty()) {
    y.line(2, "steady_peak_memory_bytes: " + flow(model.steady_peak_memory_bytes));
  }
  if (!model.minor_faults.empty()) y.line(2, "minor_faults: " + flow(model.minor_faults));
  y.line(2, "memory_method: " + quote(model.memory_method));
  y.line(2, "oom_batch: " + optional_int(model.oom_batch));
  y.line(2, "max_batch_tried: " + optional_int(model.max_batch_tried));
  // Optional: written only when measured, so profiles without it keep their exact bytes.
  if (!model.host_contention.empty()) {
    y.line(2, "host_contention:");
    for (const ContentionPoint& p : model.host_contention) {
      y.line(3, "- {ranks: " + std::to_string(p.ranks) + ", batch: " + std::to_string(p.batch) +
                    ", iteration_s: " + format_double(p.iteration_s) + "}");
    }
  }
  if (!model.ddp_buckets.empty()) {
    y.line(2, "ddp_buckets:");
    for (const DdpBucket& b : model.ddp_buckets) {
      const std::vector<int64_t> params(b.params.begin(), b.params.end());
      y.line(3, "- {bytes: " + std::to_string(b.bytes) + ", params: " + flow(params) + "}");
    }
  }
  if (model.layers.empty()) {
    y.line(2, "layers: []");
  } else {
    y.line(2, "layers:");
    for (const LayerProfile& layer : model.layers) write_layer(y, layer);
  }
}

void write_h2d(YamlText& y, const CopyProfile& h2d) {
  y.line(0, "h2d:");
  y.line(1, std::string("applicable: ") + (h2d.applicable ? "true" : "false"));
  y.line(1, "pinned: {" + curve_arrays(h2d.pinned) + "}");
  y.line(1, "pageable: {" + curve_arrays(h2d.pageable) + "}");
}

void write_collectives(YamlText& y, const CollectivesProfile& c) {
  y.line(0, "collectives:");
  y.line(1, "backend: " + quote(c.backend));
  y.line(1, "source: " + quote(c.source));
  if (c.curves.empty()) {
    y.line(1, "curves: []");
    return;
  }
  y.line(1, "curves:");
  for (const CollectiveCurve& curve : c.curves) {
    y.line(2, "- {op: " + quote(curve.op) + ", ranks: " + std::to_string(curve.ranks) + ", " +
                  curve_arrays(curve.points) + "}");
  }
}

// The loader block at `depth` (0 for the top-level loader:, 1 inside pytorch:).
void write_loader(YamlText& y, const LoaderProfile& loader, int depth = 0) {
  y.line(depth, "loader:");
  y.line(depth + 1, "data: " + quote(loader.data));
  y.line(depth + 1, "batch: " + std::to_string(loader.batch));
  if (loader.points.empty()) {
    y.line(depth + 1, "points: []");
    return;
  }
  const auto point = [](const LoaderPoint& p) {
    return "- {workers: " + std::to_string(p.workers) + ", samples_per_s: " + format_double(p.samples_per_s) +
           (p.startup_s ? ", startup_s: " + format_double(*p.startup_s) : "") + "}";
  };
  y.line(depth + 1, "points:");
  for (const LoaderPoint& p : loader.points) y.line(depth + 2, point(p));
  if (loader.at_batches.empty()) return;
  y.line(depth + 1, "at_batches:");
  for (const LoaderAtBatch& at : loader.at_batches) {
    y.line(depth + 2, "- batch: " + std::to_string(at.batch));
    y.line(depth + 3, "points:");
    for (const LoaderPoint& p : at.points) y.line(depth + 4, point(p));
  }
}

void write_calibration(YamlText& y, const Calibration& c) {
  y.line(0, "calibration: {model: " + quote(c.model) + ", batch: " + std::to_string(c.batch) +
                ", threads: " + std::to_string(c.threads) + ", start_s: " + format_double(c.start_s) +
                ", end_s: " + format_double(c.end_s) + "}");
}

void write_pytorch(YamlText& y, const PytorchProfile& p) {
  y.line(0, "pytorch:");
  y.line(1, "torch: " + quote(p.torch));
  y.line(1, "torchvision: " + quote(p.torchvision));
  y.line(1, "python: " + quote(p.python));
  y.line(1, "threads: " + std::to_string(p.threads));
  y.line(1, "probe_s: " + format_double(p.probe_s));
  write_loader(y, p.loader, 1);
  if (p.gil) {
    y.line(1, "gil:");
    y.line(2, "threads: " + flow(std::vector<int64_t>(p.gil->threads.begin(), p.gil->threads.end())));
    y.line(2, "depth: " + std::to_string(p.gil->depth));
    y.line(2, "probes:");
    for (const GilProbe& g : p.gil->probes) {
      y.line(3, "- {name: " + quote(g.name) + ", width: " + std::to_string(g.width) + ", batch: " +
                    std::to_string(g.batch) + ", calls: " + std::to_string(g.calls) + ", forward_s: " +
                    flow(g.forward_s) + "}");
    }
  }
  if (p.models.empty()) {
    y.line(1, "models: {}");
    return;
  }
  y.line(1, "models:");
  for (const auto& [name, loop] : p.models) {
    y.line(2, quote(name) + ":");
    y.line(3, "batches: " + flow(loop.batches));
    y.line(3, "iteration_s: " + flow(loop.iteration_s));
    y.line(3, "ddp_iteration_s: " + flow(loop.ddp_iteration_s));
    if (!loop.minor_faults.empty()) y.line(3, "minor_faults: " + flow(loop.minor_faults));
    y.line(3, "oom_batch: " + optional_int(loop.oom_batch));
    if (loop.forward_calls) y.line(3, "forward_calls: " + std::to_string(*loop.forward_calls));
    if (loop.replicate_s) y.line(3, "replicate_s: " + format_double(*loop.replicate_s));
    if (loop.fork) {
      y.line(3, "fork:");
      y.line(4, "workers: " + std::to_string(loop.fork->workers));
      y.line(4, "points:");
      for (const ForkPoint& p : loop.fork->points) {
        y.line(5, "- {ranks: " + std::to_string(p.ranks) + ", iter_s: " + flow(p.iter_s) +
                      ", first_batch_s: " + flow(p.first_batch_s) + ", cow_s: " + flow(p.cow_s) + "}");
      }
    }
  }
}

void write_training(YamlText& y, const std::vector<TrainingCurve>& curves) {
  if (curves.empty()) {
    y.line(0, "training: []");
    return;
  }
  y.line(0, "training:");
  for (const TrainingCurve& c : curves) {
    y.line(1, "- model: " + quote(c.model));
    y.line(2, "data: " + quote(c.data));
    y.line(2, "batch: " + std::to_string(c.batch));
    y.line(2, "small_batch: " + std::to_string(c.small_batch));
    y.line(2, "train_samples: " + std::to_string(c.train_samples));
    y.line(2, "lr: " + format_double(c.lr));
    y.line(2, "momentum: " + format_double(c.momentum));
    y.line(2, "weight_decay: " + format_double(c.weight_decay));
    y.line(2, "lr_rule: " + quote(c.lr_rule));
    if (c.warmup_epochs > 0) y.line(2, "warmup_epochs: " + format_double(c.warmup_epochs));
    if (c.optimizer != "sgd") {
      y.line(2, "optimizer: " + quote(c.optimizer));
      y.line(2, "lars_eta: " + format_double(c.lars_eta));
    }
    if (!c.probe_batches.empty()) {
      std::string list;
      for (const int64_t b : c.probe_batches) list += (list.empty() ? "" : ", ") + std::to_string(b);
      y.line(2, "probe_batches: [" + list + "]");
    }
    if (c.recompute_bn_images > 0) y.line(2, "recompute_bn_images: " + std::to_string(c.recompute_bn_images));
    if (const auto& start = c.start_curvature) {
      y.line(2, "start_curvature: {lr_over_eps_max: " + format_double(start->lr_over_eps_max) +
                    (start->rest_lr_over_eps_max
                         ? ", rest_lr_over_eps_max: " + format_double(*start->rest_lr_over_eps_max)
                         : std::string()) +
                    ", scale_invariant: " + std::to_string(start->scale_invariant) +
                    ", parameters: " + std::to_string(start->parameters) + "}");
    }
    if (!c.pace_probe.empty()) {
      y.line(2, "pace_probe:");
      for (const PaceProbeReading& r : c.pace_probe) {
        y.line(3, "- {examples: " + format_double(r.examples) + ", ratio: " + std::to_string(r.ratio) +
                      ", lr_ratio: " + format_double(r.lr_ratio) + ", steps: " + std::to_string(r.steps) +
                      ", cool_steps: " + std::to_string(r.cool_steps) + ", cool: " + format_double(r.cool) +
                      ", draws: " + std::to_string(r.draws) + ", gains: " + flow(r.gains) + "}");
      }
    }
    if (c.epochs.empty()) {
      y.line(2, "epochs: []");
      continue;
    }
    // The curvature measurements an epoch or a sample may carry, each written only where measured (> 0).
    const auto curvature_fields = [](double max_lr, double noise_scale, double noise_scale_se) {
      std::string out;
      if (max_lr > 0) out += ", max_lr: " + format_double(max_lr);
      if (noise_scale > 0) out += ", curvature_noise_scale: " + format_double(noise_scale);
      if (noise_scale_se > 0) out += ", curvature_noise_scale_se: " + format_double(noise_scale_se);
      return out;
    };
    const auto probe_field = [](const std::vector<double>& losses) {
      if (losses.empty()) return std::string();
      std::string list;
      for (const double l : losses) list += (list.empty() ? "" : ", ") + format_double(l);
      return ", probe_loss: [" + list + "]";
    };
    const auto recomputed_field = [](double accuracy) {
      return accuracy >= 0 ? ", test_accuracy_recomputed: " + format_double(accuracy) : std::string();
    };
    const auto scale_invariant_fields = [](double weight_sq, double update_sq, double trace_sigma) {
      if (!(weight_sq > 0)) return std::string();
      return ", si_weight_sq: " + format_double(weight_sq) + ", si_update_sq: " + format_double(update_sq) +
             ", si_trace_sigma: " + format_double(trace_sigma);
    };
    y.line(2, "epochs:");
    for (const EpochPoint& e : c.epochs) {
      y.line(3, "- {epoch: " + std::to_string(e.epoch) + ", examples: " + format_double(e.examples) +
                    ", train_loss: " + format_double(e.train_loss) +
                    ", train_accuracy: " + format_double(e.train_accuracy) +
                    ", test_accuracy: " + format_double(e.test_accuracy) + recomputed_field(e.test_accuracy_recomputed) +
                    ", grad_sq_norm: " + format_double(e.grad_sq_norm) +
                    ", trace_sigma: " + format_double(e.trace_sigma) +
                    ", noise_scale: " + format_double(e.noise_scale) +
                    curvature_fields(e.max_lr, e.curvature_noise_scale, e.curvature_noise_scale_se) +
                    probe_field(e.probe_loss) + scale_invariant_fields(e.si_weight_sq, e.si_update_sq, e.si_trace_sigma) +
                    "}");
    }
    if (c.samples.empty()) continue;
    y.line(2, "samples:");
    for (const CurveSample& s : c.samples) {
      y.line(3, "- {examples: " + format_double(s.examples) + ", window_examples: " + format_double(s.window_examples) +
                    ", train_loss: " + format_double(s.train_loss) +
                    ", train_accuracy: " + format_double(s.train_accuracy) +
                    ", test_accuracy: " + format_double(s.test_accuracy) + recomputed_field(s.test_accuracy_recomputed) +
                    ", noise_scale: " + format_double(s.noise_scale) +
                    curvature_fields(s.max_lr, s.curvature_noise_scale, s.curvature_noise_scale_se) +
                    probe_field(s.probe_loss) + scale_invariant_fields(s.si_weight_sq, s.si_update_sq, s.si_trace_sigma) +
                    "}");
    }
  }
}


}  // namespace

std::string profile_to_yaml(const Profile& profile) {
  YamlText y;
  y.line(0, "# trainsim profile: written by `measure`, read by `simulate`. Format: docs/PROFILE.md");
  y.line(0, "# Units: seconds (*_s), bytes (*_bytes, bytes), samples; per-batch arrays align with batches.");
  y.line(0, "schema_version: " + std::to_string(profile.schema_version));
  // A profile read without its optional machine block has none to write: an empty device_kind
  // is no kind the reader accepts (the profile fuzzer found the write that did not read back).
  if (!profile.machine.device_kind.empty()) write_machine(y, profile.machine);
  write_measurement(y, profile.measurement);
  if (profile.models.empty()) {
    y.line(0, "models: {}");
  } else {
    y.line(0, "models:");
    for (const auto& [key, model] : profile.models) write_model(y, key, model);
  }
  write_h2d(y, profile.h2d);
  write_collectives(y, profile.collectives);
  write_loader(y, profile.loader);
  write_training(y, profile.training);
  if (profile.calibration) write_calibration(y, *profile.calibration);
  if (profile.pytorch) write_pytorch(y, *profile.pytorch);
  return y.take();
}

void write_profile_atomic(const Profile& profile, const std::string& path) {
  const std::string text = profile_to_yaml(profile);
  const std::filesystem::path target(path);
  const std::filesystem::path folder = target.parent_path();
  if (!folder.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) throw std::runtime_error("cannot create directory " + folder.string() + ": " + ec.message());
  }

  write_file_atomic(path, text);
}

}  // namespace trainsim
