#include "format/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "format/errors.h"
#include "format/input_text.h"

namespace trainsim::yaml_io {
namespace {

bool is_quoted(const Node& node) { return node.kind == Node::Kind::scalar && node.quoted; }

// YAML's text is Unicode: UTF-8 here (a byte order mark taken off first). A byte that is not UTF-8,
// or a character YAML does not allow (C0 and C1 controls but tab, line feed and NEL; surrogates;
// U+FFFE and U+FFFF), is an error at its line and byte column, before yaml-cpp sees the text (it
// would take such bytes into a string).
void check_text(const std::string& file, const std::string& text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  const bool utf16 = size >= 2 && ((bytes[0] == 0xff && bytes[1] == 0xfe) ||
                                    (bytes[0] == 0xfe && bytes[1] == 0xff));
  if (utf16) {
    throw InputError(file, 1, "", "a YAML file in UTF-16: save it as UTF-8");
  }
  int line = 1;
  size_t line_start = 0;
  const auto fail = [&](size_t at, const char* problem) {
    throw InputError(file, line, "",
                     std::string("YAML syntax error: ") + problem + " at column " +
                         std::to_string(at - line_start + 1));
  };
  size_t i = 0;
  while (i < size) {
    const unsigned char lead = bytes[i];
    const size_t width = lead < 0x80 ? 1 : (lead & 0xe0) == 0xc0 ? 2 : (lead & 0xf0) == 0xe0 ? 3
                                         : (lead & 0xf8) == 0xf0 ? 4 : 0;
    if (width == 0) fail(i, "invalid leading UTF-8 octet");
    if (width > size - i) fail(i, "incomplete UTF-8 octet sequence");
    uint32_t code = width == 1 ? lead : lead & (0x7f >> width);
    for (size_t k = 1; k < width; ++k) {
      if ((bytes[i + k] & 0xc0) != 0x80) fail(i + k, "invalid trailing UTF-8 octet");
      code = (code << 6) | (bytes[i + k] & 0x3f);
    }
    const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < least[width]) fail(i, "invalid length of a UTF-8 sequence");
    if ((code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) fail(i, "invalid Unicode character");
    const bool allowed = code == 0x09 || code == 0x0a ||
                         (code >= 0x20 && code <= 0x7e) || code == 0x85 ||
                         (code >= 0xa0 && code <= 0xfffd) || code >= 0x10000;
    if (!allowed) fail(i, "control characters are not allowed");
    i += width;
    if (code == 0x0a) {
      ++line;
      line_start = i;
    }
  }
}

// A UTF-8 byte order mark is a signature, not text: off before yaml-cpp reads the text, so that
// its positions (an alias's name, a '---') are the text's.
void remove_byte_order_mark(std::string& text) {
  if (text.compare(0, 3, "\xef\xbb\xbf") == 0) text.erase(0, 3);
}

// YAML's line breaks are LF, CRLF and a lone CR. yaml-cpp 0.7 takes a lone CR for text (a comment
// would run on over the next line's key), so each break becomes LF first: a scalar's line breaks
// read as LF in YAML anyway, and the lines are numbered as YAML counts them.
void normalize_line_breaks(std::string& text) {
  if (text.find('\r') == std::string::npos) return;
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\r') {
      out += text[i];
      continue;
    }
    out += '\n';
    if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
  }
  text.swap(out);
}

// The alias at `pos` (its '*'), by name, for the messages.
std::string alias_name(const std::string& text, int pos) {
  if (pos < 0 || static_cast<size_t>(pos) >= text.size() || text[pos] != '*') return "";
  const size_t start = static_cast<size_t>(pos) + 1;
  const size_t end = text.find_first_of(" \t\n,[]{}", start);  // line breaks are LF by now
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// yaml-cpp's events into a Node tree, checked on the way: nesting is bounded, an alias names an
// anchor defined before it (never a list or map that contains the alias: no cycles in the tree),
// and the file holds one document. Every problem is an InputError at its line.
class TreeBuilder : public YAML::EventHandler {
 public:
  TreeBuilder(const std::string& file, const std::string& text) : file_(file), text_(text) {}

  NodePtr build() {
    std::istringstream in(text_);
    try {
      YAML::Parser parser(in);
      // At most two documents are asked for, the second only to refuse it: a parser that kept
      // finding empty documents (yaml-cpp 0.7.0's LoadAll on some input) cannot loop here.
      if (parser.HandleNextDocument(*this)) {
        in_second_ = true;
        parser.HandleNextDocument(*this);
      }
    } catch (const YAML::Exception& e) {
      if (e.msg == YAML::ErrorMsg::UNKNOWN_ANCHOR) {
        alias_error(e.mark, "names no anchor defined before it");
      }
      throw InputError(file_, e.mark.line >= 0 ? e.mark.line + 1 : 0, "",
                       "YAML syntax error: " + e.msg);
    }
    return root_ ? root_ : std::make_shared<const Node>();
  }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (!in_second_) return;
    const bool marker = text_.compare(static_cast<size_t>(std::max(mark.pos, 0)), 3, "---") == 0;
    throw InputError(file_, line_of(mark), "",
                     marker ? "a second YAML document ('---'): one document per file"
                            : "YAML syntax error: text after the end of the document (a second "
                              "top-level node): one document per file");
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto node = std::make_shared<Node>();
    node->line = line_of(mark);
    add(std::move(node), anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    // Anchors name their node once it is complete: one still open is a list or map that holds
    // this alias (a cycle). yaml-cpp itself refuses a name no anchor had before.
    const auto found = anchors_.find(anchor);
    if (found == anchors_.end()) alias_error(mark, "names the list or map that holds it");
    add(found->second, YAML::NullAnchor);
  }

  // yaml-cpp tags a quoted or block scalar "!", a plain one "?" (and a plain null is OnNull).
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::scalar;
    node->line = line_of(mark);
    node->text = value;
    node->quoted = tag == "!";
    add(std::move(node), anchor);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, Node::Kind::list, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, Node::Kind::map, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    std::shared_ptr<Node> node;
    YAML::anchor_t anchor;
    NodePtr pending_key;  // a map's key waiting for its value
  };

  static int line_of(const YAML::Mark& mark) { return mark.line + 1; }

  [[noreturn]] void alias_error(const YAML::Mark& mark, const std::string& problem) const {
    throw InputError(file_, line_of(mark), "",
                     "YAML alias '*" + alias_name(text_, mark.pos) + "' " + problem);
  }

  void open(const YAML::Mark& mark, Node::Kind kind, YAML::anchor_t anchor) {
    if (open_.size() >= static_cast<size_t>(kMaxDepth)) {
      throw InputError(file_, line_of(mark), "",
                       "lists and maps nested deeper than " + std::to_string(kMaxDepth) +
                           " levels");
    }
    auto node = std::make_shared<Node>();
    node->kind = kind;
    node->line = line_of(mark);
    open_.push_back({std::move(node), anchor, nullptr});
  }

  void close() {
    Open closed = std::move(open_.back());
    open_.pop_back();
    add(std::move(closed.node), closed.anchor);
  }

  // A finished node goes to the open list or map, or becomes the root; its anchor names it.
  void add(NodePtr node, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = node;
    if (open_.empty()) {
      root_ = std::move(node);
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
  bool in_second_ = false;
  NodePtr root_;
  std::vector<Open> open_;
  std::map<YAML::anchor_t, NodePtr> anchors_;
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
  std::string text = read_input_text(*file, "a YAML file");
  remove_byte_order_mark(text);
  normalize_line_breaks(text);
  check_text(*file, text);
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
