// Machine names: the reports/<machine>/ folder derived from the hardware.
#include <gtest/gtest.h>

#include "machine.h"

namespace {

using trainsim::MachineInfo;
using trainsim::measure::default_machine_name;
using trainsim::measure::short_cpu_slug;
using trainsim::measure::slug;

TEST(Slug, LowercasesAndJoinsWordsWithOneDash) {
  EXPECT_EQ(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(slug("  NVIDIA  H200 "), "nvidia-h200");          // no leading/trailing/double dash
  EXPECT_EQ(slug("Tesla V100-SXM2-32GB"), "tesla-v100-sxm2-32gb");
  EXPECT_EQ(slug("A_B..c"), "a-b-c");
  EXPECT_EQ(slug("---"), "");
}

TEST(ShortCpuSlug, DropsTrademarksVendorClockAndCoreCount) {
  EXPECT_EQ(short_cpu_slug("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"), "xeon-platinum-8375c");
  EXPECT_EQ(short_cpu_slug("AMD EPYC 7B13 64-Core Processor"), "epyc-7b13");
  EXPECT_EQ(short_cpu_slug("Intel(R) Xeon(R) Processor"), "xeon");  // this development VM
  EXPECT_EQ(short_cpu_slug("Intel(R) Core(TM) i7-10700K CPU @ 3.80GHz"), "core-i7-10700k");
  EXPECT_EQ(short_cpu_slug("Processor"), "cpu");  // nothing left: never empty
}

TEST(DefaultMachineName, CudaIsGpuSlugAndCount) {
  MachineInfo m;
  m.device_kind = "cuda";
  m.device_name = "NVIDIA H200";
  m.device_count = 1;
  m.cpu = "AMD EPYC 9654 96-Core Processor";
  m.cpu_cores = 16;
  EXPECT_EQ(default_machine_name(m), "nvidia-h200-x1");
  m.device_name = "NVIDIA H100 80GB HBM3";
  m.device_count = 4;
  EXPECT_EQ(default_machine_name(m), "nvidia-h100-80gb-hbm3-x4");
}

TEST(DefaultMachineName, CpuIsModelAndCores) {
  MachineInfo m;
  m.device_kind = "cpu";
  m.cpu = "Intel(R) Xeon(R) Processor";
  m.cpu_cores = 2;
  m.device_count = 2;  // ranks: not part of a CPU machine's name
  EXPECT_EQ(default_machine_name(m), "cpu-xeon-2c");
}

TEST(DetectHost, FindsCoresMemoryAndDate) {
  const MachineInfo m = trainsim::measure::detect_host();
  EXPECT_GE(m.cpu_cores, 1);
  EXPECT_GT(m.host_memory_bytes, 0.0);
  EXPECT_FALSE(m.cpu.empty());
  // "YYYY-MM-DDTHH:MM:SSZ"
  ASSERT_EQ(m.date.size(), 20u);
  EXPECT_EQ(m.date[10], 'T');
  EXPECT_EQ(m.date.back(), 'Z');
}

}  // namespace
