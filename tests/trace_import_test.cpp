// measure import-trace (measure/trace/trace_import.h): hand-made traces import to exactly known numbers
// (CPU, CPU under DDP, GPU with kernels on device streams), bad inputs are one-line errors naming
// the file, a real trace of Debian's torch imports, and `measure import-trace` merges into an
// existing profile.

#include <gtest/gtest.h>

#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "format/errors.h"
#include "format/profile_io.h"
#include "trace/trace_import.h"
#include "temp_dir.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string x(const std::string& name, const std::string& cat, int tid, double ts, double dur,
              const std::string& args = "{}") {
  std::ostringstream e;
  e << R"({"ph": "X", "cat": ")" << cat << R"(", "name": ")" << name << R"(", "pid": 100, "tid": )" << tid
    << R"(, "ts": )" << ts << R"(, "dur": )" << dur << R"(, "args": )" << args << "}";
  return e.str();
}
std::string op(const std::string& name, double ts, double dur, const std::string& args = "{}", int tid = 1) {
  return x(name, "cpu_op", tid, ts, dur, args);
}
std::string eval(const std::string& node, double ts, double dur, int tid = 1) {
  return op("autograd::engine::evaluate_function: " + node, ts, dur, "{}", tid);
}
std::string dims(const std::string& d) { return R"({"Input Dims": )" + d + "}"; }
std::string memory(double ts, double total, int device_type) {
  std::ostringstream e;
  e << R"({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 1, "ts": )" << ts
    << R"(, "args": {"Total Allocated": )" << static_cast<long long>(total) << R"(, "Bytes": 512, "Device Type": )" << device_type << "}}";
  return e.str();
}
std::string trace(const std::vector<std::string>& events) {
  std::string out = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (size_t i = 0; i < events.size(); ++i) out += (i ? ",\n" : "") + events[i];
  return out + "\n]}\n";
}

// A CPU step (ProfilerStep#5, 1000 us): zero_grad 20, forward 1040..1230 (conv2d, relu, flatten,
// linear), the loss 1230..1290 (cross_entropy, its backward nodes), then Linear's gradients (bias,
// weight) ready at 1350, the convolution's (weight, bias) at 1480, a last backward node until 1490,
// the optimizer step 70. Step 4 before it and step 6 after it (no backward) are not imported.
std::vector<std::string> cpu_step(const std::string& accumulate_extra = "") {
  return {
      x("ProfilerStep#4", "user_annotation", 1, 0, 900), op("aten::conv2d", 10, 100, dims("[[8, 3, 32, 32]]")),
      eval("torch::autograd::AccumulateGrad", 300, 5), memory(500, 8888888, 0),
      x("ProfilerStep#5", "user_annotation", 1, 1000, 1000),
      x("Optimizer.zero_grad#SGD.zero_grad", "user_annotation", 1, 1010, 20),
      op("aten::conv2d", 1040, 100, dims("[[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], []]")),
      op("aten::convolution", 1045, 90, dims("[[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], [], [], []]")),
      memory(1100, 1000000, 0),
      op("aten::relu", 1150, 10), op("aten::flatten", 1165, 5, dims("[[8, 16, 32, 32], [], []]")),
      op("aten::linear", 1175, 45, dims("[[8, 16384], [10, 16384], [10]]")),
      op("aten::cross_entropy_loss", 1230, 30, dims("[[8, 10], [8], [], [], [], []]")),
      op("aten::ones_like", 1265, 3),
      eval("NllLossBackward0", 1270, 10), eval("LogSoftmaxBackward0", 1282, 8),
      eval("AddmmBackward0", 1292, 40), memory(1300, 1500000, 0),
      eval("torch::autograd::AccumulateGrad", 1334, 4), op("torch::autograd::AccumulateGrad", 1335, 2, dims("[[10]]")),
      eval("TBackward0", 1340, 2),
      eval("torch::autograd::AccumulateGrad", 1344, 6),
      op("torch::autograd::AccumulateGrad", 1344.5, 1, dims("[[10, 16384]]")) + accumulate_extra,
      eval("ReshapeAliasBackward0", 1352, 3), eval("ReluBackward0", 1356, 10),
      eval("ConvolutionBackward0", 1368, 100),
      eval("torch::autograd::AccumulateGrad", 1470, 4), op("torch::autograd::AccumulateGrad", 1471, 2, dims("[[16, 3, 3, 3]]")),
      eval("torch::autograd::AccumulateGrad", 1476, 4), op("torch::autograd::AccumulateGrad", 1477, 2, dims("[[16]]")),
      eval("MulBackward0", 1482, 8),
      x("Optimizer.step#SGD.step", "user_annotation", 1, 1520, 70), op("aten::add_", 1530, 10),
      x("ProfilerStep#6", "user_annotation", 1, 2100, 100), op("aten::zeros", 2110, 5), memory(2150, 9999999, 0)};
}

class TraceImportTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }
  TraceImportOptions options(const std::string& name = "net") {
    TraceImportOptions o;
    o.name = name;
    return o;
  }
  // The one-line message import_trace throws for `text`.
  std::string error_of(const std::string& text, const TraceImportOptions& o) {
    const std::string path = write("bad.json", text);
    try {
      import_trace(path, o);
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      return e.what();
    }
    ADD_FAILURE() << "expected InputError";
    return "";
  }

  ::trainsim::testing::TempDir temp_{"trainsim-trace-import"};
  fs::path dir_ = temp_.path();
};

TEST_F(TraceImportTest, HandMadeCpuStepImportsToKnownNumbers) {
  const std::string path = write("step.json", trace(cpu_step()));
  const TraceImport t = import_trace(path, options());
  EXPECT_EQ(t.step, "ProfilerStep#5");
  EXPECT_EQ(t.steps, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_FALSE(t.device_times);
  const ModelProfile& m = t.model;
  EXPECT_EQ(m.name, "net");
  EXPECT_EQ(m.source, "trace:" + path);
  EXPECT_EQ(m.batches, (std::vector<int64_t>{8}));  // aten::conv2d's input
  EXPECT_EQ(m.input_bytes_per_sample, 3 * 32 * 32 * 4);
  EXPECT_EQ(m.num_classes, 10);
  EXPECT_DOUBLE_EQ(m.zero_grad_s[0], 20e-6);
  EXPECT_DOUBLE_EQ(t.forward_s, 190e-6);
  EXPECT_DOUBLE_EQ(m.loss_s[0], 60e-6);  // 1230 to the end of LogSoftmaxBackward0
  EXPECT_DOUBLE_EQ(m.optimizer_s[0], 70e-6);
  EXPECT_DOUBLE_EQ(m.iteration_s[0], 1000e-6);
  EXPECT_EQ(m.peak_memory_bytes, (std::vector<double>{1500000}));  // step 5's [memory] events only
  EXPECT_EQ(m.memory_method, "profiler-total-allocated");

  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_EQ(m.layers[0].name, "forward");
  EXPECT_EQ(m.layers[0].kind, "unsplit-forward");
  EXPECT_TRUE(m.layers[0].params.empty());
  EXPECT_DOUBLE_EQ(m.layers[0].forward_s[0], 190e-6);
  EXPECT_EQ(m.layers[0].backward_s, (std::vector<double>{0.0}));
  // Forward order: the convolution's group (ready last, with the tail until 1490), then Linear's.
  EXPECT_EQ(m.layers[1].name, "group.0");
  EXPECT_EQ(m.layers[1].kind, "gradient-group");
  EXPECT_EQ(m.layers[1].forward_s, (std::vector<double>{0.0}));
  EXPECT_DOUBLE_EQ(m.layers[1].backward_s[0], 140e-6);
  EXPECT_DOUBLE_EQ(m.layers[2].backward_s[0], 60e-6);
  EXPECT_DOUBLE_EQ(m.layers[1].backward_s[0] + m.layers[2].backward_s[0], (1490 - 1290) * 1e-6);
  // Registration order = reverse of the ready order (10, 10x16384, 16x3x3x3, 16).
  ASSERT_EQ(m.layers[1].params.size(), 2u);
  ASSERT_EQ(m.layers[2].params.size(), 2u);
  EXPECT_EQ(m.layers[1].params[0].name, "param.0");
  EXPECT_EQ(m.layers[1].params[0].bytes, 16 * 4);
  EXPECT_EQ(m.layers[1].params[1].name, "param.1");
  EXPECT_EQ(m.layers[1].params[1].bytes, 16 * 27 * 4);
  EXPECT_EQ(m.layers[2].params[0].name, "param.2");
  EXPECT_EQ(m.layers[2].params[0].bytes, 10 * 16384 * 4);
  EXPECT_EQ(m.layers[2].params[1].name, "param.3");
  EXPECT_EQ(m.layers[2].params[1].bytes, 10 * 4);
  EXPECT_EQ(m.parameters, 16 + 16 * 27 + 10 * 16384 + 10);
  EXPECT_EQ(m.missing, (std::vector<std::string>{"layer forward split", "oom_batch", "buffer_bytes",
                                                 "output_shape", "forward_flops"}));
  EXPECT_TRUE(t.collectives.empty());
  EXPECT_DOUBLE_EQ(t.other_s, (1000 - 20 - 190 - 60 - 200 - 70) * 1e-6);

  // It writes and reads back as a profile entry.
  Profile p;
  p.models[m.name] = m;
  const std::string yaml = (dir_ / "p.yaml").string();
  write_profile_atomic(p, yaml);
  const Profile back = load_profile(yaml);
  EXPECT_EQ(back.models.at("net").layers.size(), 3u);
  EXPECT_EQ(back.models.at("net").missing, m.missing);
  EXPECT_EQ(profile_to_yaml(back), read_text(yaml));

  const std::string summary = format_trace_import(t, path);
  EXPECT_NE(summary.find("ProfilerStep#5 (steps in the trace: 4, 5, 6)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("forward 0.190"), std::string::npos) << summary;
}

// --step-seconds: the parts keep their shares of the traced step and add up to the given time.
TEST_F(TraceImportTest, StepSecondsScalesEveryPart) {
  const std::string path = write("step.json", trace(cpu_step()));
  const TraceImport traced = import_trace(path, options());
  TraceImportOptions o = options();
  o.step_seconds = 0.5e-3;  // the traced step took 1 ms
  const TraceImport t = import_trace(path, o);
  const ModelProfile& a = traced.model;
  const ModelProfile& b = t.model;
  EXPECT_DOUBLE_EQ(b.iteration_s[0], 0.5e-3);
  EXPECT_DOUBLE_EQ(b.zero_grad_s[0], a.zero_grad_s[0] / 2);
  EXPECT_DOUBLE_EQ(b.loss_s[0], a.loss_s[0] / 2);
  EXPECT_DOUBLE_EQ(b.optimizer_s[0], a.optimizer_s[0] / 2);
  for (size_t l = 0; l < a.layers.size(); ++l) {
    EXPECT_DOUBLE_EQ(b.layers[l].forward_s[0], a.layers[l].forward_s[0] / 2) << l;
    EXPECT_DOUBLE_EQ(b.layers[l].backward_s[0], a.layers[l].backward_s[0] / 2) << l;
  }
  EXPECT_EQ(b.peak_memory_bytes, a.peak_memory_bytes);  // bytes are not times
  EXPECT_NE(format_trace_import(t, path).find("every part scaled by 0.500"), std::string::npos);
}

// Traces of other batch sizes of the same network join one model; another network does not.
TEST_F(TraceImportTest, BatchesOfOneNetworkMerge) {
  TraceImportOptions o = options();
  o.batch = 16;
  ModelProfile merged = import_trace(write("b16.json", trace(cpu_step())), o).model;
  o.batch = 4;
  const ModelProfile four = import_trace(write("b4.json", trace(cpu_step())), o).model;
  ASSERT_TRUE(merge_traced_batch(merged, four));
  o.batch = 8;
  o.step_seconds = 2e-3;
  const ModelProfile eight = import_trace(write("b8.json", trace(cpu_step())), o).model;
  ASSERT_TRUE(merge_traced_batch(merged, eight));
  EXPECT_EQ(merged.batches, (std::vector<int64_t>{4, 8, 16}));
  EXPECT_DOUBLE_EQ(merged.iteration_s[1], 2e-3);
  EXPECT_DOUBLE_EQ(merged.layers[2].backward_s[1], eight.layers[2].backward_s[0]);
  EXPECT_EQ(merged.peak_memory_bytes.size(), 3u);
  // The same batch again replaces its values.
  o.step_seconds = 3e-3;
  ASSERT_TRUE(merge_traced_batch(merged, import_trace(write("b8b.json", trace(cpu_step())), o).model));
  EXPECT_EQ(merged.batches, (std::vector<int64_t>{4, 8, 16}));
  EXPECT_DOUBLE_EQ(merged.iteration_s[1], 3e-3);
  // A trace without memory events: peak memory is dropped for every batch and named missing.
  std::vector<std::string> no_memory;
  for (const std::string& e : cpu_step()) {
    if (e.find("[memory]") == std::string::npos) no_memory.push_back(e);
  }
  o.batch = 32;
  ASSERT_TRUE(merge_traced_batch(merged, import_trace(write("b32.json", trace(no_memory)), o).model));
  EXPECT_TRUE(merged.peak_memory_bytes.empty());
  EXPECT_NE(std::find(merged.missing.begin(), merged.missing.end(), "peak_memory_bytes"), merged.missing.end());
  Profile p;
  p.models["net"] = merged;
  const std::string yaml = (dir_ / "merged.yaml").string();
  write_profile_atomic(p, yaml);
  EXPECT_EQ(load_profile(yaml).models.at("net").batches, (std::vector<int64_t>{4, 8, 16, 32}));
  // Another network (other parameter bytes) is not merged, and nothing changes.
  TraceImportOptions other = options();
  other.params = {{"w", 4}, {"b", 4}, {"w2", 4}, {"b2", 8}};
  other.batch = 64;
  const ModelProfile before = merged;
  EXPECT_FALSE(merge_traced_batch(merged, import_trace(write("other.json", trace(cpu_step())), other).model));
  EXPECT_EQ(merged.batches, before.batches);
}

// A batch whose trace did not measure the input's bytes per sample or the classes (no shapes, or
// a --batch other than the trace's input) merged with one that did, in either order: the network
// keeps both values, neither is named missing, and the profile reads back. (Found by the trace
// fuzzer: merged after a batch that measured them, they were named missing beside their values,
// and the profile written did not read.)
TEST_F(TraceImportTest, MergedBatchesKeepTheInputBytesAndClassesOneImportMeasured) {
  const ModelProfile measured = import_trace(write("b8.json", trace(cpu_step())), options()).model;
  ASSERT_EQ(measured.input_bytes_per_sample, 3 * 32 * 32 * 4);
  ASSERT_EQ(measured.num_classes, 10);
  std::string no_shapes = trace(cpu_step());
  for (size_t at; (at = no_shapes.find("\"Input Dims\"")) != std::string::npos;) no_shapes.replace(at, 12, "\"Dims\"");
  TraceImportOptions o = options();
  o.batch = 32;
  o.params = {{"conv.bias", 64}, {"conv.weight", 1728}, {"fc.weight", 655360}, {"fc.bias", 40}};
  o.params_file = "params.txt";
  const ModelProfile unmeasured = import_trace(write("b32.json", no_shapes), o).model;
  ASSERT_TRUE(unmeasured.is_missing("input_bytes_per_sample"));
  ASSERT_TRUE(unmeasured.is_missing("num_classes"));
  for (const bool measured_first : {true, false}) {
    SCOPED_TRACE(measured_first ? "the measured batch first" : "the measured batch merged into the other");
    ModelProfile merged = measured_first ? measured : unmeasured;
    ASSERT_TRUE(merge_traced_batch(merged, measured_first ? unmeasured : measured));
    EXPECT_EQ(merged.batches, (std::vector<int64_t>{8, 32}));
    EXPECT_EQ(merged.input_bytes_per_sample, 3 * 32 * 32 * 4);
    EXPECT_EQ(merged.num_classes, 10);
    EXPECT_FALSE(merged.is_missing("input_bytes_per_sample"));
    EXPECT_FALSE(merged.is_missing("num_classes"));
    Profile p;
    p.models["net"] = merged;
    const std::string yaml = (dir_ / "merged.yaml").string();
    write_profile_atomic(p, yaml);
    EXPECT_EQ(profile_to_yaml(load_profile(yaml)), profile_to_yaml(p));
  }
}

TEST_F(TraceImportTest, StepFlagAndParamsFile) {
  TraceImportOptions o = options();
  o.step = 4;
  o.batch = 32;
  const std::string path = write("step.json", trace(cpu_step()));
  // Step 4: one gradient, no shapes, no loss op: its forward runs until the backward starts.
  o.params = {{"w", 40}};
  o.params_file = "one.txt";
  const TraceImport four = import_trace(path, o);
  EXPECT_EQ(four.step, "ProfilerStep#4");
  EXPECT_DOUBLE_EQ(four.forward_s, 290e-6);
  EXPECT_EQ(four.model.loss_s, (std::vector<double>{0.0}));
  EXPECT_EQ(four.model.peak_memory_bytes, (std::vector<double>{8888888}));
  ASSERT_EQ(four.notes.size(), 1u);
  EXPECT_NE(four.notes[0].find("no loss op recognised"), std::string::npos);
  o.step = 5;
  o.params_file = write("params.txt", "# name bytes\nconv.weight 1728\nconv.bias 64\n\nfc.weight 655360\nfc.bias 40\n");
  o.params = read_params_file(o.params_file);
  const TraceImport t = import_trace(path, o);
  EXPECT_EQ(t.model.batches, (std::vector<int64_t>{32}));
  EXPECT_EQ(t.batch_from, "--batch");
  EXPECT_EQ(t.model.layers[1].params[0].name, "conv.weight");
  EXPECT_EQ(t.model.layers[1].params[1].name, "conv.bias");
  EXPECT_EQ(t.model.layers[2].params[1].name, "fc.bias");
  // The file's bytes disagree with the trace's shapes for the convolution's two tensors (the
  // trace accumulates its weight first): said, the file wins.
  EXPECT_EQ(t.model.layers[1].params[0].bytes, 1728);
  ASSERT_EQ(t.notes.size(), 3u);
  EXPECT_NE(t.notes[0].find("gives conv.weight 1728 bytes, the trace's shape 64"), std::string::npos) << t.notes[0];
  EXPECT_EQ(t.notes[2], "the loss's input has 8 rows, the batch is 32");  // --batch 32 against the trace's 8
}

TEST_F(TraceImportTest, DdpAllReduceOnTheBackwardThreadIsNotCompute) {
  // DDP's hook launches the all-reduce inside Linear's last AccumulateGrad (3 us); Gloo runs it on
  // its own thread (50 us).
  std::vector<std::string> events = cpu_step(
      ",\n" + op("c10d::allreduce_", 1346, 3, dims("[[[163850]], [], [], []]")) + ",\n" +
      op("gloo:all_reduce", 1400, 50, "{}", 2));
  const TraceImport t = import_trace(write("ddp.json", trace(events)), options());
  EXPECT_DOUBLE_EQ(t.model.layers[2].backward_s[0], 57e-6);
  EXPECT_DOUBLE_EQ(t.model.layers[1].backward_s[0], 140e-6);  // the other thread's time is not taken out
  ASSERT_EQ(t.collectives.size(), 2u);
  EXPECT_EQ(t.collectives[0].name, "c10d::allreduce_");
  EXPECT_TRUE(t.collectives[0].all_reduce);
  EXPECT_TRUE(t.collectives[0].on_backward_thread);
  EXPECT_EQ(t.collectives[0].count, 1);
  EXPECT_DOUBLE_EQ(t.collectives[0].subtracted_s, 3e-6);
  EXPECT_EQ(t.collectives[0].bytes, 163850 * 4);
  EXPECT_EQ(t.collectives[1].name, "gloo:all_reduce");
  EXPECT_FALSE(t.collectives[1].on_backward_thread);
  EXPECT_DOUBLE_EQ(t.collectives[1].time_s, 50e-6);
  EXPECT_DOUBLE_EQ(t.collectives[1].subtracted_s, 0);
  const std::string summary = format_trace_import(t, "ddp.json");
  EXPECT_NE(summary.find("collective gloo:all_reduce (all-reduce): 1x, 0.050 ms, on another thread"),
            std::string::npos) << summary;
}

// A GPU step: CPU ops launch kernels (cudaLaunchKernel, linked by correlation, or only by the op's
// External id); the backward runs on its own thread (tid 2); every time comes from the kernels.
TEST_F(TraceImportTest, GpuStepTakesTimesFromTheKernels) {
  const auto launch = [](double ts, int correlation, int external, int tid = 1) {
    return x("cudaLaunchKernel", "cuda_runtime", tid, ts, 1,
             R"({"External id": )" + std::to_string(external) + R"(, "correlation": )" + std::to_string(correlation) + "}");
  };
  const auto kernel = [](const std::string& name, double ts, double dur, int correlation, int external, int stream = 7) {
    std::ostringstream e;
    e << R"({"ph": "X", "cat": "kernel", "name": ")" << name << R"(", "pid": 0, "tid": )" << stream << R"(, "ts": )"
      << ts << R"(, "dur": )" << dur << R"(, "args": {"External id": )" << external << R"(, "correlation": )"
      << correlation << R"(, "device": 0, "stream": )" << stream << "}}";
    return e.str();
  };
  const auto with_id = [](const std::string& extra, int external) {
    return "{" + extra + (extra.empty() ? "" : ", ") + R"("External id": )" + std::to_string(external) + "}";
  };
  const std::vector<std::string> events = {
      x("ProfilerStep#1", "user_annotation", 1, 0, 420),
      x("Optimizer.zero_grad#SGD.zero_grad", "user_annotation", 1, 10, 10),
      op("aten::zero_", 12, 3, with_id("", 1)), launch(13, 101, 1), kernel("fill_kernel", 100, 3, 101, 1),
      op("aten::conv2d", 30, 30, with_id(R"("Input Dims": [[4, 3, 8, 8], [16, 3, 3, 3], [16]])", 2)),
      launch(40, 102, 2), kernel("implicit_gemm", 110, 40, 102, 2),
      op("aten::linear", 60, 20, with_id(R"("Input Dims": [[4, 64], [10, 64], [10]])", 3)),
      kernel("gemm_no_runtime_event", 150, 10, 103, 3),  // linked by External id only
      op("aten::cross_entropy_loss", 80, 15, with_id(R"("Input Dims": [[4, 10], [4]])", 4)), launch(85, 104, 4),
      kernel("softmax", 160, 5, 104, 4), op("aten::ones_like", 96, 2),
      memory(50, 5e6, 1), memory(60, 9e9, 0),
      eval("NllLossBackward0", 100, 10, 2), launch(102, 105, 5, 2), kernel("nll_backward", 165, 5, 105, 5),
      eval("AddmmBackward0", 112, 18, 2), launch(115, 106, 6, 2), kernel("gemm_backward", 170, 20, 106, 6),
      eval("torch::autograd::AccumulateGrad", 131, 4, 2),
      op("torch::autograd::AccumulateGrad", 132, 2, with_id(R"("Input Dims": [[10]])", 7), 2), launch(133, 107, 7, 2),
      kernel("add", 190, 2, 107, 7),
      eval("TBackward0", 136, 1, 2),
      eval("torch::autograd::AccumulateGrad", 138, 4, 2),
      op("torch::autograd::AccumulateGrad", 138.5, 3, with_id(R"("Input Dims": [[10, 64]])", 8), 2),
      launch(139, 108, 8, 2), kernel("add", 192, 2, 108, 8),
      op("nccl:all_reduce", 143, 1, with_id(R"("Input Dims": [[650]])", 9), 2), launch(143.5, 109, 9, 2),
      kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 195, 65, 109, 9, 20),
      eval("ConvolutionBackward0", 150, 50, 2), launch(160, 110, 10, 2), kernel("wgrad", 260, 40, 110, 10),
      launch(170, 111, 10, 2), kernel("dgrad", 300, 10, 111, 10),
      eval("torch::autograd::AccumulateGrad", 201, 4, 2),
      op("torch::autograd::AccumulateGrad", 201.5, 3, with_id(R"("Input Dims": [[16, 3, 3, 3]])", 11), 2),
      launch(202, 112, 11, 2), kernel("add", 310, 2, 112, 11),
      eval("torch::autograd::AccumulateGrad", 206, 4, 2),
      op("torch::autograd::AccumulateGrad", 206.5, 3, with_id(R"("Input Dims": [[16]])", 12), 2),
      launch(207, 113, 12, 2), kernel("add", 312, 1, 113, 12),
      x("Optimizer.step#SGD.step", "user_annotation", 1, 300, 100), op("aten::_foreach_add_", 305, 90, with_id("", 14)),
      launch(310, 114, 14), kernel("multi_tensor_apply_kernel", 400, 30, 114, 14),
      x("PyTorch Profiler (0)", "Trace", 1, 0, 5000)};  // Kineto's span over the whole trace: ignored
  const TraceImport t = import_trace(write("gpu.json", trace(events)), options("gpu-net"));
  EXPECT_TRUE(t.device_times);
  const ModelProfile& m = t.model;
  EXPECT_EQ(m.batches, (std::vector<int64_t>{4}));
  EXPECT_EQ(m.input_bytes_per_sample, 3 * 8 * 8 * 4);
  EXPECT_DOUBLE_EQ(m.zero_grad_s[0], 3e-6);
  EXPECT_DOUBLE_EQ(t.forward_s, 50e-6);
  EXPECT_DOUBLE_EQ(m.loss_s[0], 10e-6);
  EXPECT_DOUBLE_EQ(m.optimizer_s[0], 30e-6);
  EXPECT_DOUBLE_EQ(m.iteration_s[0], 430e-6);  // the last kernel ends after the step's CPU span
  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_DOUBLE_EQ(m.layers[1].backward_s[0], 53e-6);  // wgrad, dgrad, two adds: 260..313
  EXPECT_DOUBLE_EQ(m.layers[2].backward_s[0], 24e-6);  // gemm_backward and two adds: 170..194
  EXPECT_EQ(m.layers[1].param_bytes(), (16 * 27 + 16) * 4);
  EXPECT_EQ(m.peak_memory_bytes, (std::vector<double>{5e6}));  // the device's, not the host's 9e9
  EXPECT_EQ(t.peak_memory_device, 1);
  ASSERT_EQ(t.collectives.size(), 2u);
  const auto kernel_it = std::find_if(t.collectives.begin(), t.collectives.end(),
                                      [](const TraceCollective& c) { return c.device; });
  ASSERT_NE(kernel_it, t.collectives.end());
  EXPECT_TRUE(kernel_it->all_reduce);
  EXPECT_DOUBLE_EQ(kernel_it->time_s, 65e-6);
  EXPECT_TRUE(t.notes.empty()) << t.notes[0];
}

TEST_F(TraceImportTest, BadInputsAreOneLineErrors) {
  TraceImportOptions o = options();
  EXPECT_EQ(error_of("{\"traceEvents\": [\n{\"ph\": \"X\",, }]}", o).rfind(
                (dir_ / "bad.json").string() + ":2: not JSON (column 12): syntax error while parsing object key - unexpected ','", 0),
            0u);
  EXPECT_NE(error_of("{\"events\": []}", o).find("traceEvents: no traceEvents list"), std::string::npos);
  EXPECT_NE(error_of("42", o).find("traceEvents: not a PyTorch profiler trace: the JSON is a number"),
            std::string::npos);
  std::vector<std::string> forward_only = {x("ProfilerStep#1", "user_annotation", 1, 0, 100), op("aten::mm", 10, 5)};
  EXPECT_NE(error_of(trace(forward_only), o).find("has no backward in any ProfilerStep"), std::string::npos);
  forward_only.erase(forward_only.begin());
  EXPECT_NE(error_of(trace(forward_only), o).find("has no backward in the whole trace (no autograd::engine::"
                                                  "evaluate_function: torch::autograd::AccumulateGrad event)"),
            std::string::npos);
  o.step = 7;
  EXPECT_NE(error_of(trace(cpu_step()), o).find("step 7 is not in the trace (it has steps 4, 5, 6)"),
            std::string::npos);
  o.step = 6;
  EXPECT_NE(error_of(trace(cpu_step()), o).find("has no backward in ProfilerStep#6"), std::string::npos);
  o.step.reset();
  // No shapes (record_shapes off): no batch without --batch, no parameter sizes without --params.
  std::string no_shapes = trace(cpu_step());
  for (size_t at; (at = no_shapes.find("\"Input Dims\"")) != std::string::npos;) no_shapes.replace(at, 12, "\"Dims\"");
  EXPECT_NE(error_of(no_shapes, o).find("the trace has no parameter shapes"), std::string::npos);
  o.params = {{"a", 4}, {"b", 4}, {"c", 4}, {"d", 4}};
  o.params_file = "p.txt";
  EXPECT_NE(error_of(no_shapes, o).find("no batch size: the trace has no input shapes"), std::string::npos);
  o.batch = 8;
  o.params.pop_back();
  EXPECT_NE(error_of(no_shapes, o).find("3 parameter tensors in p.txt but the backward of ProfilerStep#5 "
                                        "accumulated 4 gradients"),
            std::string::npos);
}

// Every prefix of a good trace, and the trace with its bytes altered, is imported or rejected
// with an InputError: nothing else escapes, nothing crashes.
TEST_F(TraceImportTest, DamagedTracesAreRejectedCleanly) {
  const std::string good = trace(cpu_step());
  const auto attempt = [&](const std::string& text) {
    try {
      const TraceImport t = import_trace_text(text, "t.json", options());
      Profile p;
      p.models[t.model.name] = t.model;
      const std::string yaml = profile_to_yaml(p);
      EXPECT_EQ(profile_to_yaml(load_profile(write("p.yaml", yaml))), yaml);  // a written import reads back
    } catch (const InputError&) {
    }
  };
  for (size_t n = 0; n < good.size(); n += 13) attempt(good.substr(0, n));
  for (size_t at = 0; at < good.size(); at += 29) {
    for (const char c : std::string("9-e\"]}0 ")) {
      std::string bad = good;
      bad[at] = c;
      attempt(bad);
    }
  }
  EXPECT_NE(error_of(std::string("\x1f\x8b\x08\x00", 4), options()).find("a gzip file, not JSON"), std::string::npos);
}

// JSON nested 100,000 deep (an event's pid, a collective's Input Dims) overflowed the stack when
// the importer read it (a segfault); now it is one line naming where. 64 levels are read.
TEST_F(TraceImportTest, JsonNestedTooDeepIsAnErrorNotAStackOverflow) {
  const auto nested = [](size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  const std::string event = R"({"name": "aten::mm", "ph": "X", "ts": 1, "dur": 1, "pid": )";
  EXPECT_EQ(error_of("{\"traceEvents\": [\n" + event + nested(100000) + "}]}", options()),
            (dir_ / "bad.json").string() + ":2: lists and objects nested deeper than 64 levels (column " +
                std::to_string(event.size() + 62) + "): not a PyTorch profiler trace");
  const std::vector<std::string> deep_dims =
      cpu_step(",\n" + op("c10d::allreduce_", 1346, 3, dims("[" + nested(100000) + "]")));
  EXPECT_NE(error_of(trace(deep_dims), options()).find("nested deeper than 64 levels"), std::string::npos);
  std::vector<std::string> deepest = cpu_step();
  deepest.push_back(op("aten::relu", 1150, 1, R"({"x": )" + nested(60) + "}"));  // {[{{ and 60 more
  EXPECT_EQ(import_trace(write("deepest.json", trace(deepest)), options()).step, "ProfilerStep#5");
}

// A collective's sizes in a damaged trace (a negative dimension; tensors or messages adding up
// beyond int64) overflowed its byte count (undefined behaviour under UBSan). A list with a negative
// dimension is no shape, and the byte counts stop at 2^62.
TEST_F(TraceImportTest, CollectiveBytesOfDamagedTracesDoNotOverflow) {
  const std::vector<std::string> negative =
      cpu_step(",\n" + op("c10d::allreduce_", 1346, 3, dims("[[[-4611686018427387904, -4]], [], [], []]")));
  TraceImport t = import_trace(write("negative.json", trace(negative)), options());
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(t.collectives[0].bytes, -1);  // unknown
  // One message of 3,000 tensors of 2^50 elements; 2,000 messages of 2^50 doubles.
  std::string tensors = "[";
  for (int i = 0; i < 3000; ++i) tensors += std::string(i > 0 ? ", " : "") + "[1125899906842624]";
  std::string extra = ",\n" + op("c10d::allreduce_", 1346, 3, dims("[" + tensors + "]]"));
  for (int i = 0; i < 2000; ++i) {
    extra += ",\n" + x("record_param_comms", "cpu_op", 3, 1400 + i * 0.01, 0.005,
                       R"({"In msg nelems": 1125899906842624, "dtype": "Double"})");
  }
  t = import_trace(write("huge.json", trace(cpu_step(extra))), options());
  ASSERT_EQ(t.collectives.size(), 2u);
  EXPECT_EQ(t.collectives[0].bytes, int64_t{1} << 62);
  EXPECT_EQ(t.collectives[1].name, "record_param_comms");
  EXPECT_EQ(t.collectives[1].count, 2000);
  EXPECT_EQ(t.collectives[1].bytes, int64_t{1} << 62);
  EXPECT_NE(format_trace_import(t, "huge.json").find("4,611,686,018,427,387,904 bytes"), std::string::npos);
}

// A parameter shape of more than 2^50 bytes was imported into a profile that did not read back
// (its reader refuses such a tensor; caught by the trace fuzz target), and parameters adding up
// beyond int64 overflowed the model's total. Both are one-line errors now.
TEST_F(TraceImportTest, ParameterTensorsBeyondAPebibyteAreAnError) {
  std::string huge = trace(cpu_step());
  const std::string bias = R"("Input Dims": [[10]])";  // Linear's bias: the first gradient ready
  huge.replace(huge.find(bias), bias.size(), R"("Input Dims": [[300000000000000]])");
  EXPECT_EQ(error_of(huge, options()), (dir_ / "bad.json").string() +
                                           ": parameter tensor param.3 (from the trace's shapes) is "
                                           "1,200,000,000,000,000 bytes, more than 2^50 (1 PiB): not a model's");
  TraceImportOptions o = options();
  const int64_t half = int64_t{1} << 49;
  o.params = {{"a", half}, {"b", half}, {"c", half}, {"d", 4}};
  o.params_file = "p.txt";
  EXPECT_EQ(error_of(trace(cpu_step()), o), (dir_ / "bad.json").string() +
                                                ": the parameter tensors (from p.txt) add up to more than 2^50 bytes "
                                                "(1 PiB): not a model's");
  o.params = {{"a", half}, {"b", 4}, {"c", 4}, {"d", 4}};
  EXPECT_EQ(import_trace(write("half.json", trace(cpu_step())), o).model.param_bytes(), half + 12);
}

// A [memory] event's Total Allocated of 1e300 bytes became the peak, whose conversion to an
// integer in the summary was undefined behaviour (UBSan); more than 2^50 bytes is an error now.
TEST_F(TraceImportTest, PeakMemoryBeyondAPebibyteIsAnError) {
  std::vector<std::string> events = cpu_step();
  events.push_back(R"({"ph": "i", "name": "[memory]", "pid": 100, "tid": 1, "ts": 1300.5, "args": {"Total Allocated": 1e300}})");
  EXPECT_EQ(error_of(trace(events), options()),
            (dir_ / "bad.json").string() + ": traceEvents: a [memory] event (ts 1300.5) has Total Allocated 1e+300 "
                                           "bytes, more than 2^50 (1 PiB): not a machine's memory");
  events.back() = memory(1300.5, 1125899906842624.0, 0);  // 2^50: read
  EXPECT_EQ(import_trace(write("pib.json", trace(events)), options()).model.peak_memory_bytes,
            (std::vector<double>{1125899906842624.0}));
}

// A number beyond a double's range (1e577, found by the trace fuzz target) escaped as nlohmann's
// out_of_range, not an InputError: `measure import-trace` printed it as an internal error (exit
// 1) without the file. Now it is one line naming the number's first place outside a string.
TEST_F(TraceImportTest, ANumberBeyondADoubleIsAnInputError) {
  EXPECT_EQ(error_of("{\"note\": \"1e577\", \"traceEvents\": [\n{\"name\": \"aten::t\", \"ts\": 1e577}]}", options()),
            (dir_ / "bad.json").string() + ":2: not JSON (column 27): number overflow parsing '1e577': beyond the "
                                           "range of a double");
  EXPECT_NE(error_of(R"([{"name": "aten::t", "ph": "X", "ts": 1, "dur": -1e400}])", options())
                .find(":1: not JSON (column 49): number overflow parsing '-1e400'"),
            std::string::npos);
}

TEST_F(TraceImportTest, BadParamsFileNamesTheLine) {
  const auto message = [&](const std::string& text) {
    const std::string path = write("params.txt", text);
    try {
      read_params_file(path);
    } catch (const InputError& e) {
      return std::string(e.what()).substr(path.size());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("w 12\nb x\n"), ":2: 'x' is not a whole number of bytes (expected 'NAME BYTES': a parameter "
                                    "tensor's name and its fp32 bytes)");
  EXPECT_EQ(message("w 12\n\nb\n").substr(0, 25), ":3: no bytes after 'b' (e");
  EXPECT_EQ(message("w 12 13\n").substr(0, 24), ":1: more than two fields");
  EXPECT_EQ(message("w 0\n").substr(0, 16), ":1: '0' bytes: m");
  EXPECT_EQ(message("# nothing\n"), ": no parameter tensors (one 'NAME BYTES' per line)");
}

// A folder, a missing file or an endless one (/dev/zero) is one line naming it, for the trace and
// the --params file alike: never a read into memory without end.
TEST_F(TraceImportTest, UnreadableFilesAreOneLineErrors) {
  const auto message = [](const std::function<void()>& read) {
    try {
      read();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string folder = dir_.string();
  EXPECT_EQ(message([&] { import_trace(folder, options()); }), folder + ": is a directory, not a profiler trace");
  EXPECT_EQ(message([&] { read_params_file(folder); }), folder + ": is a directory, not a --params file");
  const std::string missing = (dir_ / "missing.json").string();
  EXPECT_EQ(message([&] { import_trace(missing, options()); }).rfind(missing + ": cannot open: ", 0), 0u);
  if (fs::exists("/dev/zero")) {
    EXPECT_EQ(message([] { read_params_file("/dev/zero"); }), "/dev/zero: larger than 64 MiB: not a --params file");
  }
}

// A real step of a small MLP profiled by Debian's torch (1.13: its legacy profiler writes the
// event list without shapes or memory events), imported with --params and --batch.
TEST_F(TraceImportTest, RealTraceFromDebianTorch) {
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
  }
  const std::string script = std::string(TRAINSIM_FIXTURES_DIR) + "/trace/profile_step.py";
  const std::string command = "/usr/bin/python3 " + script + " " + dir_.string() + " > " +
                              (dir_ / "count.txt").string() + " 2> " + (dir_ / "stderr.txt").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << read_text((dir_ / "stderr.txt").string());
  const int64_t count = std::stoll(read_text((dir_ / "count.txt").string()));
  TraceImportOptions o = options("mlp");
  o.batch = 16;
  o.params_file = (dir_ / "params.txt").string();
  o.params = read_params_file(o.params_file);
  const TraceImport t = import_trace((dir_ / "trace.json").string(), o);
  const ModelProfile& m = t.model;
  EXPECT_EQ(m.param_bytes(), count * 4);
  EXPECT_EQ(m.parameters, count);
  // Three Linear layers: three groups of (weight, bias), in registration order.
  ASSERT_EQ(m.layers.size(), 4u);
  std::vector<std::string> names;
  std::vector<int64_t> registration;
  for (const LayerProfile& l : m.layers) {
    for (const ParamTensor& p : l.params) {
      names.push_back(p.name);
      registration.push_back(p.bytes);
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"}));
  // The order the real backward accumulated them (the profiler's own events) is the reverse.
  std::vector<int64_t> ready;
  std::istringstream in(read_text((dir_ / "ready.txt").string()));
  for (int64_t b; in >> b;) ready.push_back(b);
  EXPECT_EQ(std::vector<int64_t>(registration.rbegin(), registration.rend()), ready);
  for (size_t i = 1; i < m.layers.size(); ++i) EXPECT_EQ(m.layers[i].params.size(), 2u) << m.layers[i].name;
  // Every part was timed; the parts fit in the step.
  EXPECT_GT(t.forward_s, 0);
  EXPECT_GT(t.backward_s, 0);
  EXPECT_GT(m.loss_s[0], 0);
  EXPECT_GT(m.optimizer_s[0], 0);
  EXPECT_GE(t.other_s, 0);
  EXPECT_TRUE(m.is_missing("peak_memory_bytes"));  // the legacy trace has no [memory] events
  EXPECT_TRUE(m.is_missing("input_bytes_per_sample"));
  std::cout << format_trace_import(t, "trace.json");
}

// measure import-trace adds the model to an existing profile and keeps the rest.
TEST_F(TraceImportTest, CommandMergesIntoAnExistingProfile) {
  const std::string measure = std::string(TRAINSIM_BIN_DIR) + "/measure";
  if (!fs::exists(measure)) GTEST_SKIP() << "no " << measure << " (built without LibTorch)";
  const std::string profile = (dir_ / "profile.yaml").string();
  fs::copy_file(std::string(TRAINSIM_FIXTURES_DIR) + "/io/test-fixture-profile.yaml", profile);
  const std::string path = write("step.json", trace(cpu_step()));
  const std::string out = (dir_ / "out.txt").string();
  const std::string run = measure + " import-trace " + path + " --name traced --out " + profile + " > " + out + " 2>&1";
  ASSERT_EQ(std::system(run.c_str()), 0) << read_text(out);
  EXPECT_NE(read_text(out).find("import-trace: added models.traced in " + profile), std::string::npos) << read_text(out);
  const Profile p = load_profile(profile);
  EXPECT_EQ(p.models.size(), 2u);
  EXPECT_EQ(p.models.count("resnet18-cifar"), 1u);
  EXPECT_EQ(p.machine.name, "test-fixture");
  EXPECT_EQ(p.models.at("traced").layers.size(), 3u);
  // A bad trace: one line, exit 2, the profile untouched.
  const std::string before = read_text(profile);
  const std::string bad = write("bad.json", "{\"traceEvents\": 3}");
  EXPECT_EQ(std::system((measure + " import-trace " + bad + " --name x --out " + profile + " > " + out + " 2>&1").c_str()),
            2 << 8);
  EXPECT_EQ(read_text(out), "error: " + bad + ": traceEvents: no traceEvents list: not a PyTorch profiler trace "
                            "(export_chrome_trace writes {\"traceEvents\": [...]})\n");
  EXPECT_EQ(read_text(profile), before);
}

}  // namespace
}  // namespace trainsim
