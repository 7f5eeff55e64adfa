#include "machine.h"

#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace trainsim::measure {
namespace {

std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::istringstream in(s);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The value after "key<spaces/tabs>:" on the first line of `path` starting with key, or "".
std::string proc_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    const auto first = value.find_first_not_of(" \t");
    return first == std::string::npos ? "" : value.substr(first);
  }
  return "";
}

}  // namespace

std::string slug(const std::string& text) {
  std::string out;
  bool pending_dash = false;
  for (char ch : to_lower(text)) {
    const bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    if (!alnum) {
      pending_dash = !out.empty();
      continue;
    }
    if (pending_dash) out += '-';
    pending_dash = false;
    out += ch;
  }
  return out;
}

std::string short_cpu_slug(const std::string& cpu_model) {
  std::string model = to_lower(cpu_model);
  // Everything from '@' on is the nominal clock.
  if (const auto at = model.find('@'); at != std::string::npos) model.erase(at);
  for (const std::string mark : {"(r)", "(tm)"}) {
    for (auto pos = model.find(mark); pos != std::string::npos; pos = model.find(mark)) {
      model.erase(pos, mark.size());
    }
  }
  std::string kept;
  for (const auto& word : split_words(model)) {
    if (word == "intel" || word == "amd" || word == "cpu" || word == "processor" ||
        ends_with(word, "-core")) {
      continue;
    }
    kept += (kept.empty() ? "" : " ") + word;
  }
  const std::string s = slug(kept);
  return s.empty() ? "cpu" : s;
}

std::string default_machine_name(const MachineInfo& machine) {
  if (machine.device_kind == "cuda") {
    return slug(machine.device_name) + "-x" + std::to_string(machine.device_count);
  }
  return "cpu-" + short_cpu_slug(machine.cpu) + "-" + std::to_string(machine.cpu_cores) + "c";
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

MachineInfo detect_host() {
  MachineInfo m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.host = host;
  m.cpu = proc_field("/proc/cpuinfo", "model name");
  if (m.cpu.empty()) m.cpu = proc_field("/proc/cpuinfo", "Model");  // some ARM kernels
  if (m.cpu.empty()) m.cpu = "unknown";
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    m.cpu_cores = CPU_COUNT(&set);
  } else {
    m.cpu_cores = static_cast<int>(std::thread::hardware_concurrency());
  }
  // "MemTotal:       24684084 kB"
  std::istringstream mem(proc_field("/proc/meminfo", "MemTotal"));
  double kib = 0;
  mem >> kib;
  m.host_memory_bytes = kib * 1024.0;
  m.date = utc_now_iso8601();
  return m;
}

std::optional<double> load_average_1min() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  if (!(in >> load) || load < 0) return std::nullopt;
  return load;
}

}  // namespace trainsim::measure
