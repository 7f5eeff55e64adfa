#pragma once
// Number formatting and Markdown-friendly aligned tables for the reports.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::report {

// `value` with `significant` significant digits in plain (non-exponent) notation:
// 123.4, 12.34, 1.234, 0.1234, 0.001234. Values below 1e-6 in magnitude use %.3e.
std::string format_significant(double value, int significant = 4);

// What a table cell holds where there is no value.
inline constexpr const char* kNone = "-";

// Seconds as the tables print them: 4 significant digits.
std::string seconds(double s);

// `value` with exactly `decimals` digits after the point (%.Nf).
std::string format_fixed(double value, int decimals);

// Bytes as GiB (2^30), 2 decimals: the unit of device memory.
std::string format_gib(double bytes);

// The column the reports' prose wraps at (docs/OUTPUT.md): paragraphs and list items, not
// table rows or headings.
constexpr std::size_t kReportWidth = 100;

// `text` broken at its spaces into lines of at most `width` columns (UTF-8 code points, the
// prefixes included): the first line starts with `first_prefix`, every other with `rest_prefix`.
// Words are never split: a word longer than the width stays whole on a line of its own. A '\n'
// in `text` is kept as a line break (the next line gets `rest_prefix`). No break is put before a
// word that would open a Markdown block at the start of a line ("-", "+", "*", "1.", ">", "#",
// "|", "<", a run of '=' or '-'): that word stays on the line before it, so the wrapped text
// renders as the unwrapped one. The result has no trailing newline.
std::string wrap_text(const std::string& text, std::size_t width, const std::string& first_prefix = "",
                      const std::string& rest_prefix = "");

// A paragraph wrapped at kReportWidth, continuation lines plain, with its newline.
std::string wrap_paragraph(const std::string& text);

// A Markdown list item "- text" wrapped at kReportWidth, continuation lines indented by 2 spaces
// (the same item), with its newline.
std::string wrap_bullet(const std::string& text);

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
