#pragma once
// Private to trainsim_format and sim/io: strict, line-tracking reading of YAML files on top of
// yaml-cpp's event parser. Every value carries the file, its 1-based line and its key path
// ("sweep.gpus[2]"), so each problem becomes one InputError pointing at the offending node.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainsim::yaml_io {

// One node of the document tree that Value::load_file builds from yaml-cpp's events. An alias
// (*name) shares the node of its anchor (&name).
struct Node {
  enum class Kind { null, scalar, list, map };
  Kind kind = Kind::null;
  // A scalar written quoted or as a block (| or >): a string, never a number, bool or null.
  bool quoted = false;
  // 1-based line where the node starts; 0 for the empty document.
  int line = 0;
  std::string text;                                                       // scalar
  std::vector<std::shared_ptr<const Node>> items;                         // list
  std::vector<std::pair<std::shared_ptr<const Node>, std::shared_ptr<const Node>>> entries;  // map
};
using NodePtr = std::shared_ptr<const Node>;

// One YAML node and where it came from.
class Value {
 public:
  // key_line: line of the key that introduced this value, 0 for the root and list items.
  // anchor_line: the line to report when the node has no position of its own.
  Value(const std::string* file, NodePtr node, std::string path, int key_line, int anchor_line)
      : file_(file), node_(std::move(node)), path_(std::move(path)), key_line_(key_line),
        anchor_line_(anchor_line) {}

  // Reads `path` and parses it. InputError at line 0 when the file cannot be read; at its line
  // for a byte that is not UTF-8, a control character, a YAML syntax error, a second document,
  // an alias of no anchor before it, or nesting deeper than kMaxDepth. `file` must outlive every
  // Value made from it.
  static Value load_file(const std::string* file);

  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  // 1-based line of the node. A null value (`key:` or `key: null`) reports the line of its key.
  int line() const;
  // Where a block starts for the reader: the `key:` line for a map value, else line().
  int heading_line() const { return key_line_ > 0 ? key_line_ : line(); }

  bool is_null() const { return node_->kind == Node::Kind::null; }
  bool is_map() const { return node_->kind == Node::Kind::map; }
  bool is_list() const { return node_->kind == Node::Kind::list; }

  [[noreturn]] void fail(const std::string& message) const;

  // Typed scalars. Numbers must be plain (unquoted) YAML scalars that parse completely:
  // "1.5" and "12abc" are not integers; "nan" and "inf" are not accepted as numbers.
  int64_t as_int64(int64_t min = std::numeric_limits<int64_t>::min(),
                   int64_t max = std::numeric_limits<int64_t>::max()) const;
  int as_int(int min = std::numeric_limits<int>::min()) const;
  double as_double(double min = -std::numeric_limits<double>::infinity()) const;
  bool as_bool() const;            // true | false
  std::string as_string() const;   // any scalar (quoted or plain)

  // The elements of a list. With scalar_as_list, a single scalar is taken as a one-element list.
  std::vector<Value> as_list(bool scalar_as_list = false) const;

  // "a map", "a list", "nothing (null)" or "'text'": for "expected X, got Y" messages.
  std::string describe() const;

 private:
  friend class Map;
  const std::string* file_;
  NodePtr node_;
  std::string path_;
  int key_line_;
  int anchor_line_;
};

// A YAML map with its keys checked: keys must be scalars, appear once, and be known.
class Map {
 public:
  // Fails unless `value` is a map; checks keys against `known` (suggesting the closest known key
  // for a typo) and rejects duplicate keys.
  Map(const Value& value, std::initializer_list<const char*> known);
  // A map keyed by names (e.g. models): any scalar key, each once.
  explicit Map(const Value& value);

  const Value& self() const { return self_; }
  bool has(const std::string& key) const;
  std::optional<Value> optional(const std::string& key) const;
  // Missing key: fails at the map's heading line (its `key:` line) with the key's full path.
  Value required(const std::string& key) const;
  // Entries in file order (for maps keyed by names, e.g. models).
  std::vector<std::pair<std::string, Value>> entries() const;

 private:
  Value self_;
};

// Deepest nesting of lists and maps a file may have (trainsim's own files reach 8).
inline constexpr int kMaxDepth = 64;

// Joins a key path: child_path("sweep", "gpus") == "sweep.gpus", child_path("", "sweep") == "sweep".
std::string child_path(const std::string& parent, const std::string& key);

}  // namespace trainsim::yaml_io
