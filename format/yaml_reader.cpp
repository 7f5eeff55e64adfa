#include "format/yaml_reader.h"

#include <yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "format/errors.h"
#include "format/input_text.h"

namespace trainsim::yaml_io {
namespace {

bool is_quoted(const Node& node) { return node.kind == Node::Kind::scalar && node.quoted; }

// YAML's spellings of null for a plain, untagged scalar (the core schema; "" is `key:`).
bool is_null_text(const std::string& text) {
  return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL";
}

// libyaml's events into a Node tree. The parser and its event are freed on every path.
class TreeBuilder {
 public:
  TreeBuilder(const std::string& file, const std::string& text) : file_(file), text_(text) {
    yaml_parser_initialize(&parser_);
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~TreeBuilder() { yaml_parser_delete(&parser_); }
  TreeBuilder(const TreeBuilder&) = delete;
  TreeBuilder& operator=(const TreeBuilder&) = delete;

  NodePtr build() {
    NodePtr root;
    int documents = 0;
    for (;;) {
      Event event(parser_, *this);
      const yaml_event_t& e = event.get();
      const int line = static_cast<int>(e.start_mark.line) + 1;
      switch (e.type) {
        case YAML_STREAM_END_EVENT:
          return root ? root : std::make_shared<const Node>();
        case YAML_DOCUMENT_START_EVENT:
          if (++documents > 1) {
            throw InputError(file_, line, "",
                             "a second YAML document ('---'): one document per file");
          }
          break;
        case YAML_SCALAR_EVENT: {
          auto node = std::make_shared<Node>();
          node->line = line;
          node->text.assign(chars(e.data.scalar.value), e.data.scalar.length);
          node->quoted = e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
          const bool untagged = e.data.scalar.tag == nullptr;
          node->kind = !node->quoted && untagged && is_null_text(node->text) ? Node::Kind::null
                                                                            : Node::Kind::scalar;
          if (node->kind == Node::Kind::null) node->text.clear();
          add(node, chars(e.data.scalar.anchor), root);
          break;
        }
        case YAML_ALIAS_EVENT: {
          const std::string name = chars(e.data.alias.anchor);
          const auto found = anchors_.find(name);
          if (found == anchors_.end()) {
            throw InputError(file_, line, "",
                             "YAML alias '*" + name + "' names no anchor defined before it");
          }
          add(found->second, nullptr, root);
          break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
          if (open_.size() >= static_cast<size_t>(kMaxDepth)) {
            throw InputError(file_, line, "",
                             "lists and maps nested deeper than " + std::to_string(kMaxDepth) +
                                 " levels");
          }
          auto node = std::make_shared<Node>();
          node->line = line;
          const bool list = e.type == YAML_SEQUENCE_START_EVENT;
          node->kind = list ? Node::Kind::list : Node::Kind::map;
          const yaml_char_t* anchor =
              list ? e.data.sequence_start.anchor : e.data.mapping_start.anchor;
          open_.push_back({node, anchor ? chars(anchor) : "", nullptr});
          break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
          Open closed = std::move(open_.back());
          open_.pop_back();
          // An anchor names its collection once complete: an alias inside it is undefined (no
          // cycles in the tree).
          add(closed.node, closed.anchor.empty() ? nullptr : closed.anchor.c_str(), root);
          break;
        }
        default:  // STREAM_START, DOCUMENT_END
          break;
      }
    }
  }

  // The syntax error libyaml reports, at its line (a reader error, e.g. bad UTF-8, has only a
  // byte offset).
  [[noreturn]] void syntax_error() const {
    std::string message = parser_.problem ? parser_.problem : "unreadable YAML";
    if (parser_.context) message += std::string(" (") + parser_.context + ")";
    size_t line = parser_.problem_mark.line + 1;
    if (parser_.error == YAML_READER_ERROR) {
      // The offset is of the offending byte; the line and column are counted here.
      const auto at = text_.begin() + static_cast<std::ptrdiff_t>(
                                          std::min(parser_.problem_offset, text_.size()));
      line = 1 + static_cast<size_t>(std::count(text_.begin(), at, '\n'));
      const auto line_start = std::find(std::make_reverse_iterator(at), text_.rend(), '\n').base();
      message += " at column " + std::to_string(at - line_start + 1);
    }
    throw InputError(file_, static_cast<int>(line), "", "YAML syntax error: " + message);
  }

 private:
  // One parsed event, deleted when it goes out of scope.
  class Event {
   public:
    Event(yaml_parser_t& parser, const TreeBuilder& builder) {
      if (!yaml_parser_parse(&parser, &event_)) builder.syntax_error();
    }
    ~Event() { yaml_event_delete(&event_); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    const yaml_event_t& get() const { return event_; }

   private:
    yaml_event_t event_{};
  };

  struct Open {
    std::shared_ptr<Node> node;
    std::string anchor;
    NodePtr pending_key;  // a map's key waiting for its value
  };

  static const char* chars(const yaml_char_t* text) {
    return reinterpret_cast<const char*>(text);
  }

  // A finished node goes to the open list or map, or becomes the root; its anchor names it.
  void add(NodePtr node, const char* anchor, NodePtr& root) {
    if (anchor) anchors_[anchor] = node;
    if (open_.empty()) {
      root = std::move(node);
      return;
    }
    Open& parent = open_.back();
    if (parent.node->kind == Node::Kind::list) {
      parent.node->items.push_back(std::move(node));
    } else if (!parent.pending_key) {
      parent.pending_key = std::move(node);
    } else {
      parent.node->entries.emplace_back(std::move(parent.pending_key), std::move(node));
      parent.pending_key = nullptr;
    }
  }

  const std::string& file_;
  const std::string& text_;
  yaml_parser_t parser_{};
  std::vector<Open> open_;
  std::map<std::string, NodePtr> anchors_;
};

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
  return Value(file, TreeBuilder(*file, text).build(), "", /*key_line=*/0, /*anchor_line=*/1);
}

int Value::line() const {
  if (is_null() || node_->line <= 0) return key_line_ > 0 ? key_line_ : anchor_line_;
  return node_->line;
}

void Value::fail(const std::string& message) const { throw InputError(*file_, line(), path_, message); }

std::string Value::describe() const {
  if (is_null()) return "nothing (null)";
  if (is_map()) return "a map";
  if (is_list()) return "a list";
  if (is_quoted(*node_)) return "the string \"" + node_->text + "\"";
  return "'" + node_->text + "'";
}

int64_t Value::as_int64(int64_t min, int64_t max) const {
  if (node_->kind != Node::Kind::scalar || is_quoted(*node_)) {
    fail("expected an integer, got " + describe());
  }
  const std::string& text = node_->text;
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
  if (node_->kind != Node::Kind::scalar || is_quoted(*node_)) {
    fail("expected a number, got " + describe());
  }
  const std::string& text = node_->text;
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
  if (node_->kind == Node::Kind::scalar && !is_quoted(*node_)) {
    const std::string& text = node_->text;
    if (text == "true" || text == "True" || text == "TRUE") return true;
    if (text == "false" || text == "False" || text == "FALSE") return false;
  }
  fail("expected true or false, got " + describe());
}

std::string Value::as_string() const {
  if (node_->kind != Node::Kind::scalar) fail("expected a string, got " + describe());
  return node_->text;
}

std::vector<Value> Value::as_list(bool scalar_as_list) const {
  std::vector<Value> items;
  if (is_list()) {
    items.reserve(node_->items.size());
    const int list_line = line();
    for (size_t i = 0; i < node_->items.size(); ++i) {
      items.emplace_back(file_, node_->items[i], path_ + "[" + std::to_string(i) + "]", 0,
                         list_line);
    }
    return items;
  }
  if (scalar_as_list && node_->kind == Node::Kind::scalar) {
    items.push_back(*this);
    return items;
  }
  fail("expected a list, got " + describe());
}

Map::Map(const Value& value) : self_(value) {
  if (!value.is_map()) value.fail("expected a map, got " + value.describe());
  std::set<std::string> seen;
  for (const auto& [key_node, unused] : value.node_->entries) {
    const Value key(value.file_, key_node, value.path_, 0, value.line());
    if (key_node->kind != Node::Kind::scalar) {
      key.fail("map keys must be plain names, got " + key.describe());
    }
    const std::string& name = key_node->text;
    if (!seen.insert(name).second) {
      Value(value.file_, key_node, child_path(value.path_, name), 0, value.line())
          .fail("duplicate key '" + name + "'");
    }
  }
}

Map::Map(const Value& value, std::initializer_list<const char*> known) : Map(value) {
  for (const auto& [key_node, unused] : value.node_->entries) {
    const std::string& name = key_node->text;
    const bool is_known = std::any_of(known.begin(), known.end(),
                                      [&](const char* k) { return name == k; });
    if (is_known) continue;
    const std::string suggestion = closest_key(name, known);
    const std::string hint = suggestion.empty() ? " (known keys: " + join_keys(known) + ")"
                                                : " (did you mean '" + suggestion + "'?)";
    Value(value.file_, key_node, child_path(value.path_, name), 0, value.line())
        .fail("unknown key '" + name + "'" + hint);
  }
}

bool Map::has(const std::string& key) const { return optional(key).has_value(); }

std::optional<Value> Map::optional(const std::string& key) const {
  for (const auto& [key_node, value_node] : self_.node_->entries) {
    if (key_node->text != key) continue;
    return Value(self_.file_, value_node, child_path(self_.path_, key), key_node->line,
                 key_node->line);
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
  out.reserve(self_.node_->entries.size());
  for (const auto& [key_node, value_node] : self_.node_->entries) {
    out.emplace_back(key_node->text, Value(self_.file_, value_node,
                                           child_path(self_.path_, key_node->text),
                                           key_node->line, key_node->line));
  }
  return out;
}

}  // namespace trainsim::yaml_io
