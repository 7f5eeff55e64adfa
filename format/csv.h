#pragma once
// The one CSV dialect of trainsim's runs.csv, read by `simulate --compare` and written and read
// back by `measure train`: RFC 4180 without line breaks inside fields. Dependency-free (both
// programs link it).

#include <string>
#include <vector>

namespace trainsim::csv {

// One line split into fields: commas separate, a quoted field may hold commas and doubled quotes.
// Fields are trimmed of spaces and tabs. A quote left open is an InputError at FILE:LINE, key
// "row".
std::vector<std::string> split_line(const std::string& line, const std::string& file, int line_number);

// `text` as one field: quoted (inner quotes doubled) where it holds a comma, a quote, a line
// break, or a leading or trailing space or tab; as it is otherwise. Both programs' CSV writers
// (runs.csv, predictions.csv) quote through it.
std::string field(const std::string& text);

// A number as trainsim's CSV and data files write it: printf's %.9g (nine significant digits).
std::string number(double value);

// `text` without its leading and trailing spaces and tabs.
std::string trim(const std::string& text);

// "a, b, c": the items as one list for a message or a report (not a CSV row: nothing is quoted).
std::string comma_list(const std::vector<std::string>& items);

}  // namespace trainsim::csv
