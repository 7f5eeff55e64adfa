#pragma once
// Number formatting and Markdown-friendly aligned tables for the reports.

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::report {

// `value` with `significant` significant digits in plain (non-exponent) notation:
// 123.4, 12.34, 1.234, 0.1234, 0.001234. Values below 1e-6 in magnitude use %.3e.
std::string format_significant(double value, int significant = 4);

// `value` with exactly `decimals` digits after the point (%.Nf).
std::string format_fixed(double value, int decimals);

// Bytes as GiB (2^30), 2 decimals: the unit of device memory.
std::string format_gib(double bytes);

// What the reports call one of the N parallel workers: "GPU", or "rank" when the profile is a
// CPU's and the config names no GPU (a CPU rank is a process sharing the host, not a device).
struct Unit {
  std::string name = "GPU";
  std::string plural() const { return name + "s"; }
  std::string count(int n) const { return std::to_string(n) + " " + (n == 1 ? name : plural()); }
};

// A table printed as aligned Markdown: header row, `|---:|` separator, one line per row.
// First column left-aligned (labels), the others right-aligned (numbers).
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);  // must have as many cells as headers
  bool empty() const { return rows_.empty(); }
  std::string to_markdown() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace trainsim::report
