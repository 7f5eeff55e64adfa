// The Chrome trace / Perfetto JSON: validity (parsed by a strict little JSON reader below),
// processes per device, tracks per resource, complete events in microseconds.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/trace.h"

namespace trainsim::report {
namespace {

// A strict RFC 8259 reader: enough to prove the trace is valid JSON and to inspect it.
struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // kString, and the number's literal for kNumber
  std::vector<Json> items;
  std::map<std::string, Json> members;

  const Json& at(const std::string& key) const {
    const auto it = members.find(key);
    if (kind != Kind::kObject || it == members.end()) throw std::runtime_error("no member " + key);
    return it->second;
  }
  bool has(const std::string& key) const { return members.count(key) > 0; }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text) {}
  Json document() {
    Json value = parse_value();
    skip_space();
    if (pos_ != s_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("invalid JSON at offset " + std::to_string(pos_) + ": " + what);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  void literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) fail("expected " + w);
    pos_ += w.size();
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("short \\u escape");
          const unsigned code = std::stoul(s_.substr(pos_, 4), nullptr, 16);
          pos_ += 4;
          if (code > 0x7f) fail("non-ASCII \\u escape (not needed here)");
          out += static_cast<char>(code);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Json parse_number() {
    const size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == from) fail("expected digits");
    };
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
    }
    Json value;
    value.kind = Json::Kind::kNumber;
    value.text = s_.substr(start, pos_ - start);
    value.number = std::stod(value.text);
    return value;
  }
  Json parse_value() {
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    Json value;
    const char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      value.kind = Json::Kind::kObject;
      if (consume('}')) return value;
      do {
        skip_space();
        const std::string key = parse_string();
        if (value.members.count(key)) fail("duplicate key " + key);
        expect(':');
        value.members[key] = parse_value();
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      ++pos_;
      value.kind = Json::Kind::kArray;
      if (consume(']')) return value;
      do {
        value.items.push_back(parse_value());
      } while (consume(','));
      expect(']');
    } else if (c == '"') {
      value.kind = Json::Kind::kString;
      value.text = parse_string();
    } else if (c == 't') {
      literal("true");
      value.kind = Json::Kind::kBool;
      value.boolean = true;
    } else if (c == 'f') {
      literal("false");
      value.kind = Json::Kind::kBool;
    } else if (c == 'n') {
      literal("null");
    } else {
      value = parse_number();
    }
    return value;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

TEST(JsonReader, AcceptsValidAndRejectsInvalidText) {
  EXPECT_NO_THROW(JsonReader(R"({"a":[1,-2.5e3,true,null,"x\"y"]})").document());
  for (const char* bad : {"{", R"({"a":1,})", "[1 2]", R"({"a":01})", "{'a':1}", R"(["\x"])", "[1] 2"}) {
    EXPECT_THROW(JsonReader(bad).document(), std::runtime_error) << bad;
  }
}

OpRecord op(const std::string& resource, const std::string& name, const std::string& category, int64_t start,
            int64_t end, int iteration) {
  OpRecord r;
  r.resource = resource;
  r.name = name;
  r.category = category;
  r.start_ns = start;
  r.end_ns = end;
  r.iteration = iteration;
  return r;
}

// Events of one "ph" kind.
std::vector<const Json*> events(const Json& trace, const std::string& phase) {
  std::vector<const Json*> out;
  for (const Json& e : trace.at("traceEvents").items) {
    if (e.at("ph").text == phase) out.push_back(&e);
  }
  return out;
}

TEST(TraceJson, OneProcessPerDeviceOneTrackPerResource) {
  SimResult result;
  result.spec.strategy = Strategy::kDdp;
  result.spec.gpus = 2;
  result.spec.batch_per_gpu = 128;
  result.trace = {op("gpu1.compute", "fwd layer1.0", "compute", 2000, 3500, 0),
                  op("gpu0.compute", "fwd layer1.0", "compute", 1000, 2500, 0),
                  op("gpu0.comm", "allreduce bucket 0", "comm", 2500, 4000, 0),
                  op("loader.worker10", "batch", "loader", 0, 900, 1),
                  op("loader.worker2", "batch \"quoted\"", "loader", 0, 1000, 0),
                  op("host", "launch", "host", 0, 1, 0),
                  op("gpu0.compute", "bwd layer4.1", "compute", 1234567, 1234568, 1)};
  const Json trace = JsonReader(format_trace_json(result, "resnet18-cifar")).document();
  EXPECT_EQ(trace.at("otherData").at("strategy").text, "ddp");
  EXPECT_EQ(trace.at("otherData").at("gpus").number, 2);

  // Processes: gpus in index order, then loader, then host; pids 1, 2, ...
  std::map<std::string, int> pid;
  for (const Json* e : events(trace, "M")) {
    if (e->at("name").text == "process_name") pid[e->at("args").at("name").text] = int(e->at("pid").number);
  }
  EXPECT_EQ(pid, (std::map<std::string, int>{{"gpu0", 1}, {"gpu1", 2}, {"loader", 3}, {"host", 4}}));

  // Tracks: one per resource, inside its device's process; tids unique within a process, and
  // worker2 before worker10 (numeric order).
  std::map<std::string, std::pair<int, int>> track;  // resource -> (pid, tid)
  for (const Json* e : events(trace, "M")) {
    if (e->at("name").text != "thread_name") continue;
    track[e->at("args").at("name").text] = {int(e->at("pid").number), int(e->at("tid").number)};
  }
  EXPECT_EQ(track.size(), 6u);
  EXPECT_EQ(track["gpu0.comm"].first, 1);
  EXPECT_EQ(track["gpu0.compute"].first, 1);
  EXPECT_NE(track["gpu0.comm"].second, track["gpu0.compute"].second);
  EXPECT_EQ(track["gpu1.compute"].first, 2);
  EXPECT_EQ(track["loader.worker2"], std::make_pair(3, 1));
  EXPECT_EQ(track["loader.worker10"], std::make_pair(3, 2));
  EXPECT_EQ(track["host"].first, 4);

  // Complete events: one per op, ts/dur in microseconds with the nanoseconds kept exactly.
  const auto ops = events(trace, "X");
  ASSERT_EQ(ops.size(), result.trace.size());
  bool found_late_op = false;
  for (const Json* e : ops) {
    const int p = int(e->at("pid").number), t = int(e->at("tid").number);
    EXPECT_TRUE(e->at("args").has("iteration"));
    EXPECT_EQ(e->at("args").at("category").text, e->at("cat").text);
    if (e->at("name").text == "bwd layer4.1") {
      found_late_op = true;
      EXPECT_EQ(std::make_pair(p, t), track["gpu0.compute"]);
      EXPECT_EQ(e->at("ts").text, "1234.567");  // 1,234,567 ns
      EXPECT_EQ(e->at("dur").text, "0.001");    // 1 ns
      EXPECT_EQ(e->at("args").at("iteration").number, 1);
      EXPECT_EQ(e->at("cat").text, "compute");
    }
  }
  EXPECT_TRUE(found_late_op);
  // Ops are written in start order.
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LE(ops[i - 1]->at("ts").number, ops[i]->at("ts").number);
}

TEST(TraceJson, EmptyTraceIsStillValid) {
  const Json trace = JsonReader(format_trace_json(SimResult{}, "resnet18-cifar")).document();
  EXPECT_TRUE(trace.at("traceEvents").items.empty());
}

TEST(TraceDevice, IsTheResourcePrefix) {
  EXPECT_EQ(trace_device("gpu3.comm"), "gpu3");
  EXPECT_EQ(trace_device("loader.worker0"), "loader");
  EXPECT_EQ(trace_device("host"), "host");
}

// End to end: `simulate --trace` on the fixture sweep writes a valid timeline of the chosen config.
TEST(SimulateTrace, WritesAValidTimelineOfTheChosenConfiguration) {
  const auto dir = std::filesystem::temp_directory_path() / ("trainsim_report_trace_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto file = dir / "sub" / "trace.json";
  const std::string command = std::string(TRAINSIM_BIN_DIR) + "/simulate " + TRAINSIM_FIXTURES_DIR +
                              "/report/sweep.yaml --quiet --trace " + file.string() +
                              " --trace-config ddp:2:128 --trace-iterations 2 > " + (dir.string() + ".out") +
                              " 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << command;
  std::ifstream in(file);
  ASSERT_TRUE(in) << file;
  std::stringstream text;
  text << in.rdbuf();
  const Json trace = JsonReader(text.str()).document();
  EXPECT_EQ(trace.at("otherData").at("strategy").text, "ddp");
  EXPECT_EQ(trace.at("otherData").at("gpus").number, 2);
  EXPECT_EQ(trace.at("otherData").at("batch_per_gpu").number, 128);
  std::set<std::string> processes;
  for (const Json* e : events(trace, "M")) {
    if (e->at("name").text == "process_name") processes.insert(e->at("args").at("name").text);
  }
  EXPECT_TRUE(processes.count("gpu0")) << "gpu0 missing";
  EXPECT_TRUE(processes.count("gpu1")) << "gpu1 missing";
  std::set<int> iterations;
  for (const Json* e : events(trace, "X")) {
    iterations.insert(int(e->at("args").at("iteration").number));
    EXPECT_GE(e->at("dur").number, 0);
  }
  EXPECT_EQ(iterations.size(), 2u);  // --trace-iterations 2
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir.string() + ".out");
}

// --trace-iterations 2000000000 was accepted and reported as 2e9 traced iterations of an epoch
// that has a few: the whole epoch is traced, and the message says so.
TEST(SimulateTrace, MoreTraceIterationsThanTheEpochTraceTheWholeEpochAndSaySo) {
  const auto dir = std::filesystem::temp_directory_path() / ("trainsim_report_trace_all_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto file = dir / "trace.json";
  const std::string out = dir.string() + ".out";
  const std::string command = std::string(TRAINSIM_BIN_DIR) + "/simulate " + TRAINSIM_FIXTURES_DIR +
                              "/report/sweep.yaml --trace " + file.string() +
                              " --trace-config ddp:2:128 --trace-iterations 2000000000 > " + out + " 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << command;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find(" iterations (the whole epoch) of ddp on 2 GPUs"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("2000000000"), std::string::npos) << text.str();
  std::filesystem::remove_all(dir);
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace trainsim::report
