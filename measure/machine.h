#pragma once
// The machine block of the profile: what the host is, and the default machine name (the
// reports/<machine>/ folder) derived from the hardware. Torch-free; the device fields are
// filled by device.h.

#include <optional>
#include <string>

#include "format/profile.h"

namespace trainsim::measure {

// Lower case; every run of characters other than [a-z0-9] becomes one '-'; no leading or
// trailing '-'. "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3".
std::string slug(const std::string& text);

// A short slug of a CPU model string: trademarks, vendor names, "CPU"/"Processor", the "N-Core"
// count and the "@ clock" suffix dropped. "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz" ->
// "xeon-platinum-8375c"; "AMD EPYC 7B13 64-Core Processor" -> "epyc-7b13". Never empty ("cpu").
std::string short_cpu_slug(const std::string& cpu_model);

// cuda: slug(device_name) + "-x" + device_count ("nvidia-h200-x1");
// cpu:  "cpu-" + short_cpu_slug(cpu) + "-" + cpu_cores + "c" ("cpu-xeon-2c").
std::string default_machine_name(const MachineInfo& machine);

// Host fields: host, cpu (model name from /proc/cpuinfo), cpu_cores (CPUs this process may run
// on), host_memory_bytes (MemTotal), date (now, UTC). Device fields are left empty.
MachineInfo detect_host();

// "2025-01-31T12:34:56Z"
std::string utc_now_iso8601();

// The 1-minute load average (first field of /proc/loadavg); nullopt where it cannot be read.
std::optional<double> load_average_1min();

}  // namespace trainsim::measure
