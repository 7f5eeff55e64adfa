#include "io/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "io/errors.h"
#include "io/input_text.h"

namespace trainsim::yaml_io {
namespace {

// yaml-cpp marks quoted scalars with the non-specific tag "!"; plain scalars get "?".
bool is_quoted(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "!"; }

size_t edit_distance(const std::string& a, const std::string& b) {
  // Levenshtein distance, one row at a time: row[j] = distance(a[0..i), b[0..j)).
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The known key a typo most likely meant, or "" when none is close: within an edit distance of
// a third of the longer name (at least 1), or one name a prefix of the other (3+ characters).
std::string closest_key(const std::string& key, std::initializer_list<const char*> known) {
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const char* candidate_c : known) {
    const std::string candidate = candidate_c;
    const size_t distance = edit_distance(key, candidate);
    const size_t allowed = std::max<size_t>(1, std::max(key.size(), candidate.size()) / 3);
    const size_t shorter = std::min(key.size(), candidate.size());
    const bool prefix = shorter >= 3 && (candidate.compare(0, shorter, key, 0, shorter) == 0);
    if ((distance <= allowed || prefix) && distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string join_keys(std::initializer_list<const char*> known) {
  std::string out;
  for (const char* k : known) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

}  // namespace

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

Value Value::load_file(const std::string* file) {
  const std::string text = read_input_text(*file, "a YAML file");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // Mark lines are 0-based; -1 when the parser had no position.
    throw InputError(*file, std::max(1, e.mark.line + 1), "", "YAML syntax error: " + e.msg);
  }
  return Value(file, root, "", /*key_line=*/0, /*anchor_line=*/1);
}

int Value::line() const {
  if (node_.IsNull() || node_.Mark().line < 0) return key_line_ > 0 ? key_line_ : anchor_line_;
  return node_.Mark().line + 1;
}

void Value::fail(const std::string& message) const { throw InputError(*file_, line(), path_, message); }

std::string Value::describe() const {
  if (!node_.IsDefined() || node_.IsNull()) return "nothing (null)";
  if (node_.IsMap()) return "a map";
  if (node_.IsSequence()) return "a list";
  if (is_quoted(node_)) return "the string \"" + node_.Scalar() + "\"";
  return "'" + node_.Scalar() + "'";
}

int64_t Value::as_int64(int64_t min, int64_t max) const {
  if (!node_.IsScalar() || is_quoted(node_)) fail("expected an integer, got " + describe());
  const std::string& text = node_.Scalar();
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) fail("integer '" + text + "' is out of range");
  if (ec != std::errc() || end != text.data() + text.size()) {
    fail("expected an integer, got '" + text + "'");
  }
  if (value < min) fail("must be >= " + std::to_string(min) + ", got " + text);
  if (value > max) fail("must be <= " + std::to_string(max) + ", got " + text);
  return value;
}

int Value::as_int(int min) const {
  return static_cast<int>(as_int64(min, std::numeric_limits<int>::max()));
}

double Value::as_double(double min) const {
  if (!node_.IsScalar() || is_quoted(node_)) fail("expected a number, got " + describe());
  const std::string& text = node_.Scalar();
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) fail("number '" + text + "' is out of range");
  if (ec != std::errc() || end != text.data() + text.size()) {
    fail("expected a number, got '" + text + "'");
  }
  if (!std::isfinite(value)) fail("expected a finite number, got '" + text + "'");
  if (value < min) {
    std::ostringstream bound;
    bound << min;
    fail("must be >= " + bound.str() + ", got " + text);
  }
  return value;
}

bool Value::as_bool() const {
  if (node_.IsScalar() && !is_quoted(node_)) {
    const std::string& text = node_.Scalar();
    if (text == "true" || text == "True" || text == "TRUE") return true;
    if (text == "false" || text == "False" || text == "FALSE") return false;
  }
  fail("expected true or false, got " + describe());
}

std::string Value::as_string() const {
  if (!node_.IsScalar()) fail("expected a string, got " + describe());
  return node_.Scalar();
}

std::vector<Value> Value::as_list(bool scalar_as_list) const {
  std::vector<Value> items;
  if (node_.IsSequence()) {
    items.reserve(node_.size());
    const int list_line = line();
    for (size_t i = 0; i < node_.size(); ++i) {
      items.emplace_back(file_, node_[i], path_ + "[" + std::to_string(i) + "]", 0, list_line);
    }
    return items;
  }
  if (scalar_as_list && node_.IsScalar()) {
    items.push_back(*this);
    return items;
  }
  fail("expected a list, got " + describe());
}

Map::Map(const Value& value) : self_(value) {
  if (!value.node_.IsMap()) value.fail("expected a map, got " + value.describe());
  std::set<std::string> seen;
  for (auto it = value.node_.begin(); it != value.node_.end(); ++it) {
    const Value key(value.file_, it->first, value.path_, 0, value.line());
    if (!it->first.IsScalar()) key.fail("map keys must be plain names, got " + key.describe());
    const std::string& name = it->first.Scalar();
    if (!seen.insert(name).second) {
      Value(value.file_, it->first, child_path(value.path_, name), 0, value.line())
          .fail("duplicate key '" + name + "'");
    }
  }
}

Map::Map(const Value& value, std::initializer_list<const char*> known) : Map(value) {
  for (auto it = value.node_.begin(); it != value.node_.end(); ++it) {
    const std::string& name = it->first.Scalar();
    const bool is_known = std::any_of(known.begin(), known.end(),
                                      [&](const char* k) { return name == k; });
    if (is_known) continue;
    const std::string suggestion = closest_key(name, known);
    const std::string hint = suggestion.empty() ? " (known keys: " + join_keys(known) + ")"
                                                : " (did you mean '" + suggestion + "'?)";
    Value(value.file_, it->first, child_path(value.path_, name), 0, value.line())
        .fail("unknown key '" + name + "'" + hint);
  }
}

bool Map::has(const std::string& key) const { return optional(key).has_value(); }

std::optional<Value> Map::optional(const std::string& key) const {
  for (auto it = self_.node_.begin(); it != self_.node_.end(); ++it) {
    if (it->first.Scalar() != key) continue;
    const int key_line = it->first.Mark().line + 1;
    return Value(self_.file_, it->second, child_path(self_.path_, key), key_line, key_line);
  }
  return std::nullopt;
}

Value Map::required(const std::string& key) const {
  std::optional<Value> value = optional(key);
  if (!value) {
    throw InputError(self_.file(), self_.heading_line(), child_path(self_.path_, key),
                     "missing required key '" + key + "'");
  }
  return *value;
}

std::vector<std::pair<std::string, Value>> Map::entries() const {
  std::vector<std::pair<std::string, Value>> out;
  for (auto it = self_.node_.begin(); it != self_.node_.end(); ++it) {
    const std::string& name = it->first.Scalar();
    const int key_line = it->first.Mark().line + 1;
    out.emplace_back(name, Value(self_.file_, it->second, child_path(self_.path_, name), key_line,
                                 key_line));
  }
  return out;
}

}  // namespace trainsim::yaml_io
