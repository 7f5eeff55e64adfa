#pragma once
// `collectives:` (docs/SCALE.md): one collective over a range of sizes on the config's topology,
// as NCCL's cost model predicts it, printed in nccl-tests' own layout and written as
// collectives.csv.

#include <string>
#include <vector>

#include "hw/nccl_model.h"
#include "io/config.h"

namespace trainsim::report {

struct CollectiveRow {
  double bytes = 0;
  hw::NcclTime time;       // the tuner's choice and its time
  double algbw_gbs = 0;    // bytes / time, GB/s
  double busbw_gbs = 0;    // algbw x nccl-tests' factor
};

// The sizes min, min x factor, ... <= max, each a whole number of float32 elements per rank
// (nccl-tests' float type), and the predicted row of each: NCCL's model on the catalog's figures
// for the log's own op and rank count and with `collectives.log`, else the model calibrated by the
// cluster's log where there is one (uses_calibration).
std::vector<CollectiveRow> predict_collectives(const CollectivesRequest& request, const Topology& topology);

// nccl-tests' layout: size, count, type, redop, root, time (us), algbw, busbw (GB/s), then the
// algorithm and protocol the tuner chose; a '#' header naming the topology.
std::string format_collectives_table(const CollectivesRequest& request, const Topology& topology,
                                     const std::vector<CollectiveRow>& rows);

// op,nodes,gpus,size_bytes,algorithm,protocol,time_us,algbw_GBps,busbw_GBps
std::string format_collectives_csv(const CollectivesRequest& request, const Topology& topology,
                                   const std::vector<CollectiveRow>& rows);

// Whether the table's predictions are the model calibrated by the cluster's log: any op or rank
// count but the log's own, and not with a log of the table's own (CollectivesRequest::log).
bool uses_calibration(const CollectivesRequest& request, const Topology& topology, const hw::NcclCluster& cluster);

}  // namespace trainsim::report
