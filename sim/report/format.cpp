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

std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string format_gib(double bytes) { return format_fixed(bytes / (1024.0 * 1024.0 * 1024.0), 2); }

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
