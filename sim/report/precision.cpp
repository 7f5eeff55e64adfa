#include "report/precision.h"

#include "report/format.h"

namespace trainsim::report {

SweepConfig precision_sweep(const SweepConfig& tables, const SweepConfig::PrecisionProfile& other) {
  SweepConfig sweep = tables;
  sweep.precision = other.precision;
  sweep.precision_line = 0;  // a profile of another precision is an error at its own line
  sweep.profile_path = other.profile_path;
  sweep.profile_line = other.line;
  sweep.other_precisions.clear();
  sweep.large_batch.reset();
  sweep.scale_out.reset();
  sweep.collectives.reset();
  return sweep;
}

namespace {

bool timed(const SimResult* r) { return r != nullptr && r->runnable && r->fits && r->epoch_s > 0; }

}  // namespace

std::string format_precision_section(const SweepConfig& tables, const Profile& profile, const ResultGrid& grid,
                                     const std::vector<PrecisionSweep>& others) {
  const std::string first = precision_name(tables.precision);
  std::vector<std::string> epoch_headers = {"config", first + " s"};
  std::vector<std::string> share_headers = {"config", first};
  for (const PrecisionSweep& o : others) {
    epoch_headers.push_back(std::string(precision_name(o.sweep.precision)) + " s");
    share_headers.push_back(precision_name(o.sweep.precision));
  }
  for (const PrecisionSweep& o : others) epoch_headers.push_back(std::string(precision_name(o.sweep.precision)) + " x");
  TextTable epochs(epoch_headers), shares(share_headers);
  for (const SimResult& r : grid.all()) {
    const RunSpec& s = r.spec;
    std::vector<const SimResult*> row = {&r};
    for (const PrecisionSweep& o : others) row.push_back(o.grid.find(s.strategy, s.gpus, s.batch_per_gpu));
    std::vector<std::string> epoch_cells = {config_label(s)}, share_cells = {config_label(s)};
    for (const SimResult* cell : row) epoch_cells.push_back(time_cell(cell, &SimResult::epoch_s));
    for (std::size_t i = 1; i < row.size(); ++i) {
      epoch_cells.push_back(timed(&r) && timed(row[i]) ? format_fixed(speedup(r.epoch_s, row[i]->epoch_s), 2) : "-");
    }
    epochs.add_row(epoch_cells);
    if (s.gpus < 2) continue;
    for (const SimResult* cell : row) {
      share_cells.push_back(timed(cell) ? format_fixed(100 * cell->exposed_comm_s / cell->epoch_s, 1) + "%" : "-");
    }
    shares.add_row(share_cells);
  }
  std::string out = "## Precision: " + first + " (the tables') and";
  for (std::size_t i = 0; i < others.size(); ++i) {
    out += (i == 0 ? " " : i + 1 == others.size() ? " and " : ", ") + std::string(precision_name(others[i].sweep.precision));
  }
  out += "\n\n";
  const auto source = [](Precision precision, const std::string& path, const MachineInfo& m) {
    return wrap_bullet(std::string(precision_name(precision)) + ": " + path + " (machine " + m.name + ": " +
                       m.device_kind + " " + m.device_name + ", measured " + m.date + ")");
  };
  out += source(tables.precision, tables.profile_path, profile.machine);
  for (const PrecisionSweep& o : others) out += source(o.sweep.precision, o.sweep.profile_path, o.profile.machine);
  out += wrap_bullet("each precision is predicted from a profile measured in it (measure --precision), the "
                     "configurations and their setting the tables'") +
         "\n";
  out += "Epoch time by precision:\n\n" + epochs.to_markdown() + "\n";
  out += wrap_paragraph("NAME s: the epoch's seconds in that precision. NAME x: its speedup over " + first +
                        ", the " + first + " epoch over its own.") +
         "\n";
  if (!shares.empty()) {
    out += "Exposed communication, share of the epoch, by precision:\n\n" + shares.to_markdown() + "\n";
    out += wrap_paragraph("The share of the epoch rank 0 waits for communication: a faster step in one precision "
                          "leaves the same all-reduces less compute to hide behind.") +
           "\n";
  }
  return out;
}

}  // namespace trainsim::report
