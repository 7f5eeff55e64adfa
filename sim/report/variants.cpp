#include "report/variants.h"

#include "report/format.h"

namespace trainsim::report {

SweepConfig variant_sweep(const SweepConfig& tables, const SweepConfig::VariantProfile& other) {
  SweepConfig sweep = tables;
  sweep.precision = other.precision;
  sweep.memory_format = other.memory_format;
  // A profile of another precision or format is an error at its own line.
  sweep.precision_line = 0;
  sweep.memory_format_line = 0;
  sweep.profile_path = other.profile_path;
  sweep.profile_line = other.line;
  sweep.other_variants.clear();
  sweep.large_batch.reset();
  sweep.scale_out.reset();
  sweep.collectives.reset();
  return sweep;
}

std::string variant_name(const SweepConfig& config) {
  return variant_name(config.variant_axis, config.precision, config.memory_format);
}

namespace {

bool timed(const SimResult* r) { return r != nullptr && r->runnable && r->fits && r->epoch_s > 0; }

}  // namespace

std::string format_variant_section(const SweepConfig& tables, const Profile& profile, const ResultGrid& grid,
                                   const std::vector<VariantSweep>& others) {
  const SweepConfig::VariantAxis axis = tables.variant_axis;
  const VariantAxisWords words = variant_axis_words(axis);
  const std::string what = words.noun;
  const std::string first = variant_name(tables);
  std::vector<std::string> epoch_headers = {"config", first + " s"};
  std::vector<std::string> share_headers = {"config", first};
  for (const VariantSweep& o : others) {
    epoch_headers.push_back(variant_name(o.sweep) + " s");
    share_headers.push_back(variant_name(o.sweep));
  }
  for (const VariantSweep& o : others) epoch_headers.push_back(variant_name(o.sweep) + " x");
  TextTable epochs(epoch_headers), shares(share_headers);
  for (const SimResult& r : grid.all()) {
    const RunSpec& s = r.spec;
    std::vector<const SimResult*> row = {&r};
    for (const VariantSweep& o : others) row.push_back(o.grid.find(s.strategy, s.gpus, s.batch_per_gpu));
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
  std::string out = std::string("## ") + words.title + ": " + first + " (the tables') and";
  for (std::size_t i = 0; i < others.size(); ++i) {
    out += (i == 0 ? " " : i + 1 == others.size() ? " and " : ", ") + variant_name(others[i].sweep);
  }
  out += "\n\n";
  const auto source = [](const std::string& name, const std::string& path, const MachineInfo& m) {
    return wrap_bullet(name + ": " + path + " (machine " + m.name + ": " + m.device_kind + " " + m.device_name +
                       ", measured " + m.date + ")");
  };
  out += source(first, tables.profile_path, profile.machine);
  for (const VariantSweep& o : others) out += source(variant_name(o.sweep), o.sweep.profile_path, o.profile.machine);
  const std::string flags = variant_measure_flags(axis, tables.precision, tables.memory_format, /*values=*/false);
  out += wrap_bullet("each " + what + " is predicted from a profile measured in it (measure " + flags +
                     "), the configurations and their setting the tables'") +
         "\n";
  out += "Epoch time by " + what + ":\n\n" + epochs.to_markdown() + "\n";
  out += wrap_paragraph("NAME s: the epoch's seconds in that " + what + ". NAME x: its speedup over " + first +
                        ", the " + first + " epoch over its own.") +
         "\n";
  if (!shares.empty()) {
    out += "Exposed communication, share of the epoch, by " + what + ":\n\n" + shares.to_markdown() + "\n";
    out += wrap_paragraph("The share of the epoch rank 0 waits for communication: a faster step in one " + what +
                          " leaves the same all-reduces less compute to hide behind.") +
           "\n";
  }
  return out;
}

}  // namespace trainsim::report
