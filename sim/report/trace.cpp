#include "report/trace.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>
#include <vector>

namespace trainsim::report {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order they are written

// Compact JSON, as nlohmann writes it: non-ASCII kept as UTF-8, a byte that is not UTF-8 written
// as U+FFFD (names come from YAML that the reader has checked, so that does not happen in practice).
std::string dump(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Nanoseconds as microseconds with all three fractional digits: 1234567 -> "1234.567".
std::string microseconds(int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%s%llu.%03llu", negative ? "-" : "",
                static_cast<unsigned long long>(magnitude / 1000),
                static_cast<unsigned long long>(magnitude % 1000));
  return buffer;
}

// Orders names with embedded numbers numerically: "worker2" before "worker10".
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i_end = i, j_end = j;
      while (i_end < a.size() && std::isdigit(static_cast<unsigned char>(a[i_end]))) ++i_end;
      while (j_end < b.size() && std::isdigit(static_cast<unsigned char>(b[j_end]))) ++j_end;
      // Compare digit runs by value: strip leading zeros, then shorter is smaller, then lexically.
      std::string x = a.substr(i, i_end - i), y = b.substr(j, j_end - j);
      x.erase(0, std::min(x.find_first_not_of('0'), x.size() - 1));
      y.erase(0, std::min(y.find_first_not_of('0'), y.size() - 1));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i_end;
      j = j_end;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// gpus first, then the loader, then the host thread, then anything else.
int device_group(const std::string& device) {
  if (device.rfind("gpu", 0) == 0) return 0;
  if (device == "loader") return 1;
  if (device == "host") return 2;
  return 3;
}

bool device_less(const std::string& a, const std::string& b) {
  const int ga = device_group(a), gb = device_group(b);
  if (ga != gb) return ga < gb;
  return natural_less(a, b);
}

}  // namespace

std::string trace_device(const std::string& resource) { return resource.substr(0, resource.find('.')); }

std::string format_trace_json(const SimResult& result, const std::string& model) {
  std::vector<std::string> devices;
  std::vector<std::string> resources;
  for (const auto& op : result.trace) {
    if (std::find(resources.begin(), resources.end(), op.resource) == resources.end()) {
      resources.push_back(op.resource);
      const std::string device = trace_device(op.resource);
      if (std::find(devices.begin(), devices.end(), device) == devices.end()) devices.push_back(device);
    }
  }
  std::sort(devices.begin(), devices.end(), device_less);
  std::sort(resources.begin(), resources.end(), natural_less);

  std::map<std::string, int> pid_of;  // device -> pid (1-based)
  for (size_t i = 0; i < devices.size(); ++i) pid_of[devices[i]] = static_cast<int>(i) + 1;
  std::map<std::string, int> tid_of;  // resource -> tid, 1-based within its process
  std::map<std::string, int> threads_in;
  for (const auto& resource : resources) tid_of[resource] = ++threads_in[trace_device(resource)];

  std::vector<std::string> events;
  for (const auto& device : devices) {
    const int pid = pid_of[device];
    events.push_back(dump(Json{{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                               {"args", {{"name", device}}}}));
    events.push_back(dump(Json{{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                               {"args", {{"sort_index", pid}}}}));
  }
  for (const auto& resource : resources) {
    const int pid = pid_of[trace_device(resource)];
    const int tid = tid_of[resource];
    events.push_back(dump(Json{{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                               {"args", {{"name", resource}}}}));
    events.push_back(dump(Json{{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                               {"args", {{"sort_index", tid}}}}));
  }

  // Ops in time order (ties: track, then the simulator's order), so the file reads as a timeline.
  std::vector<const OpRecord*> ops;
  for (const auto& op : result.trace) ops.push_back(&op);
  std::stable_sort(ops.begin(), ops.end(), [&](const OpRecord* a, const OpRecord* b) {
    return std::make_tuple(a->start_ns, pid_of[trace_device(a->resource)], tid_of[a->resource]) <
           std::make_tuple(b->start_ns, pid_of[trace_device(b->resource)], tid_of[b->resource]);
  });
  for (const OpRecord* op : ops) {
    // nlohmann writes a double with its shortest digits (1234.5, 1234.0); ts and dur keep all
    // three fractional digits of the exact nanoseconds, so they go in as text after "tid".
    std::string event = dump(Json{{"name", op->name}, {"cat", op->category}, {"ph", "X"},
                                  {"pid", pid_of[trace_device(op->resource)]}, {"tid", tid_of[op->resource]}});
    event.pop_back();  // the closing '}'
    event += ",\"ts\":" + microseconds(op->start_ns) + ",\"dur\":" + microseconds(op->end_ns - op->start_ns) +
             ",\"args\":" + dump(Json{{"iteration", op->iteration}, {"category", op->category}}) + "}";
    events.push_back(std::move(event));
  }

  const Json other_data = {{"tool", "trainsim simulate"},
                           {"model", model},
                           {"strategy", to_string(result.spec.strategy)},
                           {"gpus", result.spec.gpus},
                           {"batch_per_gpu", result.spec.batch_per_gpu},
                           {"loader_workers", result.spec.loader_workers},
                           {"fits", result.fits}};
  // One event per line.
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":" + dump(other_data) + ",\n\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) out += events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  out += "]}\n";
  return out;
}

}  // namespace trainsim::report
