#include "report/scale_out.h"

#include <algorithm>

#include "report/format.h"

namespace trainsim::report {

std::string format_scale_out(const SweepConfig& scale, const Profile& profile, const ResultGrid& grid) {
  const Topology& topology = *scale.topology;
  const int base = *std::min_element(scale.gpus.begin(), scale.gpus.end());
  const std::string speedup_header = base == 1 ? "speedup" : "speedup vs " + std::to_string(base);
  TextTable table({"batch/GPU", "GPUs", "nodes", "global", "epoch_s", "iter ms", speedup_header, "efficiency",
                   "exposed", "busbw"});
  std::vector<int> gpus = scale.gpus;
  std::sort(gpus.begin(), gpus.end());
  for (int64_t batch : scale.batch_per_gpu) {
    const SimResult* first = grid.find(Strategy::kDdp, base, batch);
    const bool have_base = first != nullptr && first->runnable && first->fits;
    for (int n : gpus) {
      const SimResult* r = grid.find(Strategy::kDdp, n, batch);
      if (r == nullptr) continue;
      const bool ok = r->runnable && r->fits;
      const int nodes = (n + topology.gpus_per_node - 1) / topology.gpus_per_node;
      const double s = ok && have_base ? speedup(first->epoch_s, r->epoch_s) : 0;
      table.add_row({std::to_string(batch), std::to_string(n), std::to_string(nodes),
                     std::to_string(r->global_batch), time_cell(r, &SimResult::epoch_s),
                     ok ? format_significant(r->iteration_s * 1e3, 4) : "-",
                     ok && have_base ? format_fixed(s, 1) : "-",
                     ok && have_base ? format_fixed(s * base / n, 3) : "-",
                     ok && r->epoch_s > 0 ? format_fixed(100 * r->exposed_comm_s / r->epoch_s, 1) + "%" : "-",
                     ok && r->busbw_gbs > 0 ? format_significant(r->busbw_gbs, 4) : "-"});
    }
  }
  const MachineInfo& m = profile.machine;
  // The heading names the nodes; the topology's full description is the first bullet (a heading
  // cannot wrap, and the report's lines fit 100 columns).
  const std::string described = topology.describe();
  std::string out = "## Scale-out: ddp on " + described.substr(0, described.find(':')) + "\n\n";
  out += wrap_bullet("topology: " + described);
  out += wrap_bullet("compute: " + scale.profile_path + " (machine " + m.name + ": " + m.device_kind + " " +
                     m.device_name + "), trainer " + to_string(scale.trainer));
  out += wrap_bullet("collectives: assumed, not measured: NCCL's cost model on the topology");
  out += wrap_bullet("epoch: " + std::to_string(scale.train_samples) + " samples of " + scale.model +
                     "; loader workers: " + std::to_string(scale.loader_workers) +
                     " per rank, each node's host as the profile's");
  out += wrap_bullet("across nodes one node's ranks are simulated: every node runs the same iterations") + "\n";
  out += table.to_markdown() + "\n";
  out += wrap_paragraph("global: the global batch. iter ms: one iteration. exposed: the share of the epoch GPU 0 "
                        "waits for communication. busbw: the all-reduces' bus bandwidth in GB/s (nccl-tests' "
                        "definition) over their time.") +
         "\n";
  return out;
}

}  // namespace trainsim::report
