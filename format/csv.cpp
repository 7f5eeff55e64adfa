#include "format/csv.h"

#include <cstdio>

#include "format/errors.h"

namespace trainsim::csv {

std::string trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const size_t last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

std::string comma_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::vector<std::string> split_line(const std::string& line, const std::string& file, int line_number) {
  std::vector<std::string> fields;
  std::string current;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        current += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        current += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      fields.push_back(trim(current));
      current.clear();
    } else {
      current += ch;
    }
  }
  if (quoted) throw InputError(file, line_number, "row", "a quoted field is not closed");
  fields.push_back(trim(current));
  return fields;
}

std::string field(const std::string& text) {
  const bool needs_quotes = text.find_first_of(",\"\r\n") != std::string::npos ||
                            (!text.empty() && trim(text).size() != text.size());
  if (!needs_quotes) return text;
  std::string out = "\"";
  for (const char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

}  // namespace trainsim::csv
