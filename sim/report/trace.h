#pragma once
// The timeline of a simulated configuration as Chrome trace / Perfetto JSON
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU, "JSON Array
// Format" with an object wrapper): open it in ui.perfetto.dev or chrome://tracing.

#include <string>

#include "train/simulator.h"

namespace trainsim::report {

// The device a resource belongs to: the part before the first '.' ("gpu1.comm" -> "gpu1",
// "loader.worker0" -> "loader", "host" -> "host").
std::string trace_device(const std::string& resource);

// One process (pid, named by process_name metadata) per device, gpus first in index order, then
// loader, host and any other; one thread (tid, thread_name) per resource. Every OpRecord becomes a
// "ph":"X" complete event: ts and dur in microseconds written with exact nanosecond digits,
// cat = category, args = {iteration, category}. otherData names the configuration.
std::string format_trace_json(const SimResult& result, const std::string& model);

}  // namespace trainsim::report
