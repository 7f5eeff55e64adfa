#include "report/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace trainsim::report {

std::string format_significant(double value, int significant) {
  char buffer[64];
  if (!std::isfinite(value)) return value != value ? "nan" : (value > 0 ? "inf" : "-inf");
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  if (magnitude < 1e-6) {
    std::snprintf(buffer, sizeof buffer, "%.3e", value);
    return buffer;
  }
  // Digits before the point: floor(log10 |v|) + 1; decimals = significant - that (>= 0).
  const int integer_digits = static_cast<int>(std::floor(std::log10(magnitude))) + 1;
  int decimals = std::max(0, significant - integer_digits);
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  // Rounding can carry into a new digit (9.99996 -> "10.000"): drop one decimal then.
  if (decimals > 0 && std::fabs(std::atof(buffer)) >= std::pow(10.0, integer_digits)) {
    std::snprintf(buffer, sizeof buffer, "%.*f", --decimals, value);
  }
  return buffer;
}

std::string seconds(double s) { return format_significant(s, 4); }

std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string format_gib(double bytes) { return format_fixed(bytes / (1024.0 * 1024.0 * 1024.0), 2); }

namespace {

// Columns of UTF-8 text: its code points (continuation bytes 10xxxxxx not counted).
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Whether `word` at the start of a line would open a Markdown block (a list item, a thematic
// break or setext underline, a heading, a block quote, a table row, a fence, HTML).
bool opens_block(const std::string& word) {
  if (word.empty()) return false;
  const char c = word.front();
  if (c == '>' || c == '|' || c == '<') return true;
  if (word.rfind("```", 0) == 0 || word.rfind("~~~", 0) == 0) return true;
  if (word.find_first_not_of('#') == std::string::npos) return true;
  if (word.find_first_not_of("-=*_") == std::string::npos) return true;  // "-", "*", "---", "=="
  if (word == "+") return true;
  // An ordered list's marker: 1-9 digits and '.' or ')'.
  const std::size_t digits = word.find_first_not_of("0123456789");
  return digits > 0 && digits <= 9 && digits + 1 == word.size() && (word.back() == '.' || word.back() == ')');
}

void wrap_line(const std::string& line, std::size_t width, const std::string& first_prefix,
               const std::string& rest_prefix, std::string& out) {
  // Units: the words, each word that must not start a line (and an empty one, from a run of
  // spaces) joined to the one before it.
  std::vector<std::string> units;
  std::size_t start = 0;
  while (true) {
    const std::size_t space = line.find(' ', start);
    std::string word = line.substr(start, space == std::string::npos ? std::string::npos : space - start);
    if (!units.empty() && (word.empty() || opens_block(word))) {
      units.back() += " " + word;
    } else {
      units.push_back(std::move(word));
    }
    if (space == std::string::npos) break;
    start = space + 1;
  }
  std::string current = first_prefix;
  std::size_t current_columns = columns(first_prefix);
  bool has_word = false;
  for (const std::string& unit : units) {
    const std::size_t unit_columns = columns(unit);
    if (has_word && current_columns + 1 + unit_columns > width) {
      out += current + "\n";
      current = rest_prefix;
      current_columns = columns(rest_prefix);
      has_word = false;
    }
    if (has_word) {
      current += ' ';
      ++current_columns;
    }
    current += unit;
    current_columns += unit_columns;
    has_word = true;
  }
  out += current;
}

}  // namespace

std::string wrap_text(const std::string& text, std::size_t width, const std::string& first_prefix,
                      const std::string& rest_prefix) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    const std::size_t newline = text.find('\n', start);
    const std::string line = text.substr(start, newline == std::string::npos ? std::string::npos : newline - start);
    wrap_line(line, width, start == 0 ? first_prefix : rest_prefix, rest_prefix, out);
    if (newline == std::string::npos) break;
    out += '\n';
    start = newline + 1;
  }
  return out;
}

std::string wrap_paragraph(const std::string& text) { return wrap_text(text, kReportWidth) + "\n"; }

std::string wrap_bullet(const std::string& text) { return wrap_text(text, kReportWidth, "- ", "  ") + "\n"; }

TextTable::TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size()) {
    throw std::logic_error("TextTable: row has " + std::to_string(cells.size()) + " cells, table has " +
                           std::to_string(headers_.size()) + " columns");
  }
  rows_.push_back(std::move(cells));
}

std::string TextTable::to_markdown() const {
  std::vector<size_t> widths(headers_.size(), 3);  // "---" is the shortest separator
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = std::max(widths[c], headers_[c].size());
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(widths[c] - cells[c].size(), ' ');
      out += " " + (c == 0 ? cells[c] + pad : pad + cells[c]) + " |";
    }
    return out + "\n";
  };
  std::string out = line(headers_);
  out += "|";
  for (size_t c = 0; c < widths.size(); ++c) {
    // Markdown alignment: `:---` left for the label column, `---:` right for numbers.
    out += c == 0 ? " :" + std::string(widths[c] - 1, '-') + " |"
                  : " " + std::string(widths[c] - 1, '-') + ": |";
  }
  out += "\n";
  for (const auto& row : rows_) out += line(row);
  return out;
}

}  // namespace trainsim::report
