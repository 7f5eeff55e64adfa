#include "format/runs_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "format/csv.h"
#include "format/errors.h"
#include "format/input_text.h"
#include "format/runs_columns.h"

namespace trainsim {
namespace {

using csv::trim;

int64_t parse_whole(const std::string& text, const std::string& file, int line, const std::string& column,
                    int64_t minimum, int64_t maximum = std::numeric_limits<int64_t>::max()) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw InputError(file, line, column, "'" + text + "' is not a whole number");
  }
  if (value < minimum) {
    throw InputError(file, line, column, text + " must be >= " + std::to_string(minimum));
  }
  if (value > maximum) {
    throw InputError(file, line, column, text + " must be <= " + std::to_string(maximum));
  }
  return value;
}

double parse_seconds(const std::string& text, const std::string& file, int line, const std::string& column) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw InputError(file, line, column, "'" + text + "' is not a number");
  }
  if (!std::isfinite(value) || value <= 0) {
    throw InputError(file, line, column, text + " must be a finite number of seconds > 0");
  }
  return value;
}

Strategy parse_strategy(const std::string& text, const std::string& file, int line) {
  if (text == "ddp") return Strategy::kDdp;
  if (text == "dp") return Strategy::kDp;
  throw InputError(file, line, "strategy", "'" + text + "' is not a strategy (expected ddp or dp)");
}

void add_distinct(std::vector<std::string>& values, const std::string& value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

// An optional number column: empty means not recorded; otherwise finite and >= minimum
// (strictly greater when `positive`).
std::optional<double> parse_optional_number(const std::string& text, const std::string& file, int line,
                                            const std::string& column, bool positive) {
  if (text.empty()) return std::nullopt;
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw InputError(file, line, column, "'" + text + "' is not a number");
  }
  if (!std::isfinite(value) || value < 0 || (positive && value == 0)) {
    throw InputError(file, line, column, text + (positive ? " must be a finite number > 0" : " must be a finite number >= 0"));
  }
  return value;
}

Trainer parse_trainer_field(const std::string& text, const std::string& file, int line) {
  if (const std::optional<Trainer> t = parse_trainer(text)) return *t;
  throw InputError(file, line, "trainer", "'" + text + "' is not a trainer (expected pytorch or trainsim)");
}

// The values of one configuration's rows, summarised once every row is read.
struct Repeats {
  std::vector<double> epoch_s, train_s, test_s, probe_s, load_before, load_after;
};

std::optional<double> max_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return *std::max_element(values.begin(), values.end());
}

}  // namespace

const std::vector<std::string>& runs_required_columns() {
  static const std::vector<std::string> columns(kRunsColumns.begin(), kRunsColumns.begin() + kRunsRequiredColumns);
  return columns;
}

Spread spread_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  return Spread{median, values.front(), values.back()};
}

namespace {

// The text's lines, without carriage returns and trailing blank lines.
std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  return lines;
}

// The header: column name -> index; every required column once.
std::map<std::string, size_t> read_header(const std::vector<std::string>& header, const std::string& file,
                                          const std::string& required) {
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i].empty()) throw InputError(file, 1, "header", "column " + std::to_string(i + 1) + " has no name");
    if (!column.emplace(header[i], i).second) {
      throw InputError(file, 1, header[i], "column named twice in the header");
    }
  }
  for (const auto& name : runs_required_columns()) {
    if (!column.count(name)) {
      throw InputError(file, 1, name, "missing column (the header must name " + required + ")");
    }
  }
  return column;
}

// One data row, its fields by column name.
struct Row {
  const std::vector<std::string>& fields;
  const std::map<std::string, size_t>& column;
  const std::string& file;
  int line;

  const std::string& field(const std::string& name) const { return fields[column.at(name)]; }
  // An optional column: its text, or "" where the header does not name it.
  std::string optional_field(const std::string& name) const {
    const auto it = column.find(name);
    return it == column.end() ? std::string() : fields[it->second];
  }
};

// What one row measured.
struct RowValues {
  RunKey key;
  double epoch_s = 0;
  double train_s = 0;
  std::optional<double> test_s, probe_s, load_before, load_after;
};

RunKey parse_key(const Row& row, bool has_trainer_column) {
  const std::string& file = row.file;
  const int line = row.line;
  RunKey key;
  key.strategy = parse_strategy(row.field("strategy"), file, line);
  key.gpus = static_cast<int>(parse_whole(row.field("gpus"), file, line, "gpus", 1, kMaxGpus));
  key.batch_per_gpu = parse_whole(row.field("batch_per_gpu"), file, line, "batch_per_gpu", 1);
  key.loader_workers =
      static_cast<int>(parse_whole(row.field("loader_workers"), file, line, "loader_workers", 0, kMaxLoaderWorkers));
  key.train_samples = parse_whole(row.field("train_samples"), file, line, "train_samples", 1);
  // The simulator's limit, as a config's train_samples is held to it.
  if (const int64_t iterations = epoch_iterations(key.strategy, key.gpus, key.batch_per_gpu, key.train_samples);
      iterations > kMaxIterationsPerEpoch) {
    throw InputError(file, line, "train_samples",
                     row.field("train_samples") + " samples make epochs of " + std::to_string(iterations) +
                         " iterations per rank at batch_per_gpu " + std::to_string(key.batch_per_gpu) +
                         "; at most " + std::to_string(kMaxIterationsPerEpoch) + " are simulated");
  }
  if (has_trainer_column) key.trainer = parse_trainer_field(row.field("trainer"), file, line);
  if (!row.optional_field("test_samples").empty()) {
    key.test_samples = parse_whole(row.field("test_samples"), file, line, "test_samples", 0);
  }
  if (!row.optional_field("threads").empty()) {
    key.threads =
        static_cast<int>(parse_whole(row.field("threads"), file, line, "threads", 1, std::numeric_limits<int>::max()));
  }
  return key;
}

RowValues parse_row(const Row& row, bool has_trainer_column) {
  const std::string& file = row.file;
  const int line = row.line;
  RowValues v;
  v.key = parse_key(row, has_trainer_column);
  v.epoch_s = parse_seconds(row.field("epoch_s"), file, line, "epoch_s");
  v.train_s = parse_seconds(row.field("train_s"), file, line, "train_s");
  // train_s = epoch_s - loader waits, so it cannot exceed epoch_s.
  if (v.train_s > v.epoch_s) {
    throw InputError(file, line, "train_s", row.field("train_s") + " exceeds epoch_s " + row.field("epoch_s"));
  }
  v.test_s = parse_optional_number(row.optional_field("test_s"), file, line, "test_s", true);
  if (v.key.test_samples > 0 && !v.test_s) {
    throw InputError(file, line, "test_s", "is empty but test_samples is " + std::to_string(v.key.test_samples));
  }
  v.probe_s = parse_optional_number(row.optional_field("probe_s"), file, line, "probe_s", true);
  v.load_before = parse_optional_number(row.optional_field("load_before"), file, line, "load_before", false);
  v.load_after = parse_optional_number(row.optional_field("load_after"), file, line, "load_after", false);
  if (const std::string precision = trim(row.optional_field("precision")); !precision.empty()) {
    const auto parsed = parse_precision(precision);
    if (!parsed) {
      throw InputError(file, line, "precision", "'" + precision + "' is not one of " + std::string(kPrecisionNames));
    }
    v.key.precision = *parsed;
  }
  if (const std::string format = trim(row.optional_field("memory_format")); !format.empty()) {
    const auto parsed = parse_memory_format(format);
    if (!parsed) {
      throw InputError(file, line, "memory_format",
                       "'" + format + "' is not one of " + std::string(kMemoryFormatNames));
    }
    v.key.memory_format = *parsed;
  }
  v.key.model = trim(row.optional_field("model"));
  return v;
}

// The row's values added to the repeats of its configuration (a new one where none has its key).
void add_repeat(const RowValues& v, int line, RunsTable& table, std::vector<Repeats>& repeats) {
  auto it = std::find_if(table.configs.begin(), table.configs.end(),
                         [&](const MeasuredConfig& m) { return m.key == v.key; });
  if (it == table.configs.end()) {
    it = table.configs.insert(table.configs.end(), MeasuredConfig{});
    it->key = v.key;
    repeats.emplace_back();
  }
  Repeats& r = repeats[static_cast<size_t>(it - table.configs.begin())];
  r.epoch_s.push_back(v.epoch_s);
  r.train_s.push_back(v.train_s);
  if (v.test_s) r.test_s.push_back(*v.test_s);
  if (v.probe_s) r.probe_s.push_back(*v.probe_s);
  if (v.load_before) r.load_before.push_back(*v.load_before);
  if (v.load_after) r.load_after.push_back(*v.load_after);
  ++it->runs;
  it->lines.push_back(line);
}

}  // namespace

RunsTable parse_runs_csv(const std::string& text, const std::string& file) {
  const std::vector<std::string> lines = text_lines(text);
  const std::string required = csv::comma_list(runs_required_columns());
  if (lines.empty()) throw InputError(file, 1, "header", "empty file; expected a header naming " + required);
  const std::vector<std::string> header = csv::split_line(lines[0], file, 1);
  const std::map<std::string, size_t> column = read_header(header, file, required);

  RunsTable table;
  table.file = file;
  table.has_trainer_column = column.count("trainer") > 0;
  std::vector<Repeats> repeats;  // aligned with table.configs
  for (size_t i = 1; i < lines.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    if (trim(lines[i]).empty()) throw InputError(file, line, "row", "empty line between rows");
    const std::vector<std::string> fields = csv::split_line(lines[i], file, line);
    if (fields.size() != header.size()) {
      throw InputError(
          file, line, "row",
          "has " + std::to_string(fields.size()) + " fields, the header has " + std::to_string(header.size()));
    }
    const Row row{fields, column, file, line};
    const RowValues values = parse_row(row, table.has_trainer_column);
    if (!values.key.model.empty()) add_distinct(table.models, values.key.model);
    if (column.count("data")) add_distinct(table.data, row.field("data"));
    if (column.count("device")) add_distinct(table.devices, row.field("device"));
    add_repeat(values, line, table, repeats);
    ++table.rows;
  }
  for (size_t i = 0; i < table.configs.size(); ++i) {
    MeasuredConfig& m = table.configs[i];
    const Repeats& r = repeats[i];
    m.epoch_s = spread_of(r.epoch_s);
    m.train_s = spread_of(r.train_s);
    if (!r.test_s.empty()) m.test_s = spread_of(r.test_s);
    if (!r.probe_s.empty()) m.probe_s = spread_of(r.probe_s);
    m.load_before = max_of(r.load_before);
    m.load_after = max_of(r.load_after);
  }
  return table;
}

RunsTable load_runs_csv(const std::string& path) {
  return parse_runs_csv(read_input_text(path, "a runs file (reports/<machine>/runs.csv)"), path);
}

}  // namespace trainsim
