#include "profiler/pytorch_profile.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_util.h"
#include "format/bounds.h"
#include "format/errors.h"
#include "launch.h"
#include "usage_error.h"

namespace trainsim::measure::profiler {
namespace {

using nlohmann::json;

// Importing torch takes a few seconds; a broken interpreter must not hang measure.
constexpr double kImportTimeout = 120;

// Reads typed values out of the JSON document, naming the file and the key path in every error.
class Reader {
 public:
  explicit Reader(std::string name) : name_(std::move(name)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw InputError(name_, 0, key, message);
  }

  const json& member(const json& object, const std::string& path, const std::string& key) const {
    if (!object.is_object()) fail(path, "expected an object, found " + object.dump());
    const auto it = object.find(key);
    if (it == object.end()) fail(join(path, key), "missing");
    return *it;
  }

  std::string text(const json& value, const std::string& key) const {
    if (!value.is_string()) fail(key, "expected a string, found " + value.dump());
    return value.get<std::string>();
  }

  int64_t integer(const json& value, const std::string& key, int64_t minimum) const {
    if (!value.is_number_integer() || value.get<int64_t>() < minimum) {
      fail(key, "expected an integer >= " + std::to_string(minimum) + ", found " + value.dump());
    }
    return value.get<int64_t>();
  }

  // A finite number > 0 (positive) or >= 0.
  double number(const json& value, const std::string& key, bool positive) const {
    const bool ok = value.is_number() && std::isfinite(value.get<double>()) &&
                    (positive ? value.get<double>() > 0 : value.get<double>() >= 0);
    if (!ok) fail(key, std::string("expected a number ") + (positive ? "> 0" : ">= 0") + ", found " + value.dump());
    return value.get<double>();
  }

  const json& array(const json& value, const std::string& key) const {
    if (!value.is_array()) fail(key, "expected a list, found " + value.dump());
    return value;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string at(const std::string& key, size_t i) { return key + "[" + std::to_string(i) + "]"; }

 private:
  std::string name_;
};

std::vector<double> times(const Reader& r, const json& parent, const std::string& path, const std::string& key,
                          size_t count) {
  const std::string full = Reader::join(path, key);
  const json& list = r.array(r.member(parent, path, key), full);
  if (list.size() != count) {
    r.fail(full, std::to_string(list.size()) + " values for " + std::to_string(count) + " batches");
  }
  std::vector<double> out;
  for (size_t i = 0; i < list.size(); ++i) out.push_back(r.number(list[i], Reader::at(full, i), /*positive=*/true));
  return out;
}

// A per-batch array of counts >= 0 (page faults), `count` long.
std::vector<double> counts(const Reader& r, const json& list, const std::string& key, size_t count) {
  r.array(list, key);
  if (list.size() != count) r.fail(key, std::to_string(list.size()) + " values for " + std::to_string(count) + " batches");
  std::vector<double> out;
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(r.number(list[i], Reader::at(key, i), /*positive=*/false));
    if (out.back() > static_cast<double>(kMaxBytes)) {
      r.fail(Reader::at(key, i), "more than 2^50 is not a count of page faults, found " + list[i].dump());
    }
  }
  return out;
}

// Calls from Python into ATen in one forward: 1 to kMaxForwardCalls.
int64_t calls(const Reader& r, const json& value, const std::string& key) {
  const int64_t n = r.integer(value, key, 1);
  if (n > kMaxForwardCalls) r.fail(key, "more than 10^7 calls in one forward is not a model's, found " + value.dump());
  return n;
}

// {"threads": [1, 2, ...], "depth": D, "probes": [{"name", "width", "batch", "calls", "forward_s": [..]}]}:
// the GIL block (format/profile.h GilProfile).
GilProfile parse_gil(const Reader& r, const json& value) {
  GilProfile g;
  const json& threads = r.array(r.member(value, "gil", "threads"), "gil.threads");
  for (size_t i = 0; i < threads.size(); ++i) {
    g.threads.push_back(static_cast<int>(r.integer(threads[i], Reader::at("gil.threads", i), 1)));
    if (g.threads.back() > kMaxGilThreads) {
      r.fail(Reader::at("gil.threads", i), "at most " + std::to_string(kMaxGilThreads) + " threads");
    }
    if (i > 0 && g.threads[i] <= g.threads[i - 1]) r.fail(Reader::at("gil.threads", i), "threads must be strictly ascending");
  }
  if (g.threads.size() < 2 || g.threads[0] != 1 || g.threads[1] != 2) {
    r.fail("gil.threads", "expected 1, 2 and any more, found " + threads.dump());
  }
  g.depth = static_cast<int>(r.integer(r.member(value, "gil", "depth"), "gil.depth", 1));
  const json& probes = r.array(r.member(value, "gil", "probes"), "gil.probes");
  if (probes.empty()) r.fail("gil.probes", "expected at least one probe");
  for (size_t i = 0; i < probes.size(); ++i) {
    const std::string key = Reader::at("gil.probes", i);
    GilProbe probe;
    probe.name = r.text(r.member(probes[i], key, "name"), key + ".name");
    probe.width = r.integer(r.member(probes[i], key, "width"), key + ".width", 1);
    probe.batch = r.integer(r.member(probes[i], key, "batch"), key + ".batch", 1);
    probe.calls = calls(r, r.member(probes[i], key, "calls"), key + ".calls");
    const json& forward_s = r.array(r.member(probes[i], key, "forward_s"), key + ".forward_s");
    if (forward_s.size() != g.threads.size()) {
      r.fail(key + ".forward_s", std::to_string(forward_s.size()) + " values for " +
                                     std::to_string(g.threads.size()) + " thread counts (gil.threads)");
    }
    for (size_t t = 0; t < forward_s.size(); ++t) {
      probe.forward_s.push_back(r.number(forward_s[t], Reader::at(key + ".forward_s", t), /*positive=*/true));
    }
    g.probes.push_back(std::move(probe));
  }
  return g;
}

// {"workers": W, "points": [{"ranks": k, "iter_s": [...], "first_batch_s": [...], "cow_s": [...]}]}:
// ranks strictly ascending from 1; arrays aligned with the model's batches; cow_s may be 0.
// `key`.points: a loader's points, strictly ascending in workers.
std::vector<LoaderPoint> loader_points(const Reader& r, const json& loader, const std::string& key) {
  std::vector<LoaderPoint> out;
  const json& points = r.array(r.member(loader, key, "points"), key + ".points");
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string at = Reader::at(key + ".points", i);
    LoaderPoint point;
    point.workers = static_cast<int>(r.integer(r.member(points[i], at, "workers"), at + ".workers", 0));
    if (!out.empty() && point.workers <= out.back().workers) {
      r.fail(at + ".workers", "worker counts must be strictly ascending");
    }
    point.samples_per_s = r.number(r.member(points[i], at, "samples_per_s"), at + ".samples_per_s", true);
    point.startup_s = r.number(r.member(points[i], at, "startup_s"), at + ".startup_s", false);
    out.push_back(point);
  }
  return out;
}

ForkCost parse_fork(const Reader& r, const json& value, const std::string& key, size_t batch_count) {
  ForkCost fork;
  fork.workers = static_cast<int>(r.integer(r.member(value, key, "workers"), key + ".workers", 1));
  const json& points = r.array(r.member(value, key, "points"), key + ".points");
  if (points.empty()) r.fail(key + ".points", "must hold the ranks 1 point at least");
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string at = Reader::at(key + ".points", i);
    ForkPoint p;
    p.ranks = static_cast<int>(r.integer(r.member(points[i], at, "ranks"), at + ".ranks", 1));
    if ((fork.points.empty() && p.ranks != 1) || (!fork.points.empty() && p.ranks <= fork.points.back().ranks)) {
      r.fail(at + ".ranks", "ranks must rise strictly from 1");
    }
    p.iter_s = times(r, points[i], at, "iter_s", batch_count);
    p.first_batch_s = times(r, points[i], at, "first_batch_s", batch_count);
    const json& cow = r.array(r.member(points[i], at, "cow_s"), at + ".cow_s");
    if (cow.size() != batch_count) {
      r.fail(at + ".cow_s", std::to_string(cow.size()) + " values for " + std::to_string(batch_count) + " batches");
    }
    for (size_t j = 0; j < cow.size(); ++j) p.cow_s.push_back(r.number(cow[j], Reader::at(at + ".cow_s", j), false));
    fork.points.push_back(std::move(p));
  }
  return fork;
}

}  // namespace

std::string default_pytorch_script() { return std::string(TRAINSIM_SOURCE_DIR) + "/measure/pytorch/profile_torch.py"; }

std::vector<std::string> pytorch_profile_command(const PytorchRequest& q) {
  std::vector<int64_t> loader_batches = {q.loader_batch};
  for (int64_t b : q.loader_at_batches) {
    if (b != q.loader_batch) loader_batches.push_back(b);
  }
  std::string models;
  for (const auto& m : q.models) models += (models.empty() ? "" : ",") + m;
  std::vector<std::string> command = {q.python,
          q.script,
          "--data", q.data_dir,
          "--device", q.device,
          "--threads", std::to_string(q.threads),
          "--batches", join_ints(q.batches),
          "--models", models,
          "--warmup", std::to_string(q.warmup),
          "--repeats", std::to_string(q.repeats),
          "--loader-batch", join_ints(loader_batches),
          "--loader-workers", join_ints(std::vector<int64_t>(q.loader_workers.begin(), q.loader_workers.end()))};
  if (q.fork_ranks.empty()) {
    command.push_back("--no-fork");
  } else {
    command.insert(command.end(),
                   {"--fork-ranks", join_ints(std::vector<int64_t>(q.fork_ranks.begin(), q.fork_ranks.end()))});
  }
  if (!q.gil) command.push_back("--no-gil");
  command.insert(command.end(), {"--out", q.out});
  if (q.loader_only) command.push_back("--loader-only");
  if (q.device == "cuda") {
    command.insert(command.end(), {"--cudnn-benchmark", q.cudnn_benchmark ? "on" : "off"});
  }
  // Only when not fp32, so an fp32 profile's command line is as before.
  if (q.precision != "fp32") command.insert(command.end(), {"--precision", q.precision});
  if (q.memory_format != "nchw") command.insert(command.end(), {"--memory-format", q.memory_format});
  for (const auto& [name, file] : q.scripts) command.insert(command.end(), {"--script", name + "=" + file});
  return command;
}

PytorchProfile parse_pytorch_profile(const std::string& text, const std::string& name) {
  const Reader r(name);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    r.fail("", std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object()) r.fail("", "expected a JSON object, found " + doc.dump());
  if (r.text(r.member(doc, "", "framework"), "framework") != "pytorch") {
    r.fail("framework", "expected \"pytorch\", found " + doc.at("framework").dump());
  }
  PytorchProfile p;
  p.torch = r.text(r.member(doc, "", "torch"), "torch");
  p.torchvision = r.text(r.member(doc, "", "torchvision"), "torchvision");
  p.python = r.text(r.member(doc, "", "python"), "python");
  p.threads = static_cast<int>(r.integer(r.member(doc, "", "threads"), "threads", 1));
  p.probe_s = r.number(r.member(doc, "", "probe_s"), "probe_s", /*positive=*/true);
  const std::string data = r.text(r.member(doc, "", "data"), "data");
  if (data != "synthetic" && data != "cifar10") r.fail("data", "expected \"synthetic\" or \"cifar10\", found \"" + data + "\"");
  p.loader.data = data;

  const json& loader = r.member(doc, "", "loader");
  p.loader.batch = r.integer(r.member(loader, "loader", "batch"), "loader.batch", 1);
  p.loader.points = loader_points(r, loader, "loader");
  if (loader.contains("at_batches")) {
    const json& at_batches = r.array(loader.at("at_batches"), "loader.at_batches");
    for (size_t i = 0; i < at_batches.size(); ++i) {
      const std::string key = Reader::at("loader.at_batches", i);
      LoaderAtBatch at;
      at.batch = r.integer(r.member(at_batches[i], key, "batch"), key + ".batch", 1);
      if (at.batch == p.loader.batch || (!p.loader.at_batches.empty() && at.batch <= p.loader.at_batches.back().batch)) {
        r.fail(key + ".batch", "batches must be strictly ascending and not loader.batch");
      }
      at.points = loader_points(r, at_batches[i], key);
      if (at.points.empty()) r.fail(key + ".points", "expected at least one point");
      for (LoaderPoint& point : at.points) point.startup_s.reset();  // the main batch's start-up is the one used
      p.loader.at_batches.push_back(std::move(at));
    }
  }

  const json& models = r.member(doc, "", "models");
  if (!models.is_object()) r.fail("models", "expected an object, found " + models.dump());
  for (const auto& [model, entry] : models.items()) {
    const std::string key = "models." + model;
    PytorchLoop loop;
    const json& batches = r.array(r.member(entry, key, "batches"), key + ".batches");
    for (size_t i = 0; i < batches.size(); ++i) {
      loop.batches.push_back(r.integer(batches[i], Reader::at(key + ".batches", i), 1));
      if (i > 0 && loop.batches[i] <= loop.batches[i - 1]) {
        r.fail(Reader::at(key + ".batches", i), "batches must be strictly ascending");
      }
    }
    loop.iteration_s = times(r, entry, key, "iteration_s", loop.batches.size());
    loop.ddp_iteration_s = times(r, entry, key, "ddp_iteration_s", loop.batches.size());
    if (entry.contains("minor_faults")) {
      loop.minor_faults = counts(r, entry.at("minor_faults"), key + ".minor_faults", loop.batches.size());
    }
    const json& oom = r.member(entry, key, "oom_batch");
    if (!oom.is_null()) loop.oom_batch = r.integer(oom, key + ".oom_batch", 1);
    if (entry.contains("fork")) loop.fork = parse_fork(r, entry.at("fork"), key + ".fork", loop.batches.size());
    if (entry.contains("forward_calls")) {
      loop.forward_calls = calls(r, entry.at("forward_calls"), key + ".forward_calls");
    }
    if (entry.contains("replicate_s")) {
      loop.replicate_s = r.number(entry.at("replicate_s"), key + ".replicate_s", /*positive=*/false);
    }
    p.models.emplace(model, std::move(loop));
  }
  if (doc.contains("gil")) p.gil = parse_gil(r, doc.at("gil"));
  return p;
}

PytorchProfile read_pytorch_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "", "cannot read the PyTorch profile (measure/pytorch/profile_torch.py wrote none)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_pytorch_profile(text.str(), path);
}

bool python_has_torch(const std::string& python) {
  return run_program({python, "-c", "import torch, torchvision"}, kImportTimeout, /*quiet=*/true) == 0;
}

std::optional<std::string> choose_pytorch_python(const std::string& choice, std::string& note,
                                                 bool (*has_torch)(const std::string&)) {
  note.clear();
  if (choice == "off") return std::nullopt;
  if (choice == "auto") {
    for (const char* candidate : {"/usr/bin/python3", "python3"}) {
      if (has_torch(candidate)) return std::string(candidate);
    }
    note = "no Python with torch and torchvision (tried /usr/bin/python3 and python3 on PATH): the pytorch "
           "section is not measured (--pytorch PYTHON names one)";
    return std::nullopt;
  }
  if (choice.empty()) throw UsageError("--pytorch: expected auto, off or a Python interpreter");
  if (!has_torch(choice)) {
    throw UsageError("--pytorch " + choice + ": cannot run it or it cannot import torch and torchvision");
  }
  return choice;
}

}  // namespace trainsim::measure::profiler
