#include "collectives/benchmark.h"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cli_util.h"
#include "format/atomic_write.h"
#include "launch.h"
#include "stats.h"
#include "usage_error.h"

namespace trainsim::measure::collectives {
namespace {

namespace po = boost::program_options;

constexpr const char* kResultMagic = "trainsim-collective-result";
constexpr int kResultVersion = 1;
constexpr int64_t kCheckElements = 1024;

struct WorkerFlags {
  CollectiveJob job;
  int rank = -1;
  int world_size = 0;
  std::string store_dir;
};

WorkerFlags parse_worker_flags(const std::vector<std::string>& args) {
  WorkerFlags f;
  std::string op;
  std::string sizes;
  po::options_description desc("measure worker collective (internal: one rank process)");
  desc.add_options()
      ("backend", po::value(&f.job.backend)->required(), "gloo or nccl")
      ("op", po::value(&op)->required(), "all_reduce, broadcast or reduce")
      ("sizes", po::value(&sizes)->required(), "message bytes, comma-separated")
      ("warmup", po::value(&f.job.warmup)->required(), "untimed runs per size")
      ("repeats", po::value(&f.job.repeats)->required(), "timed runs per size")
      ("threads", po::value(&f.job.threads)->required(), "intra-op threads")
      ("timeout", po::value(&f.job.timeout_s)->required(), "seconds")
      ("rank", po::value(&f.rank)->required(), "this rank")
      ("world-size", po::value(&f.world_size)->required(), "ranks")
      ("store", po::value(&f.store_dir)->required(), "FileStore folder");
  const po::variables_map vm = parse_flags(args, desc, "worker collective: ");
  f.job.op = parse_op(op);
  f.job.sizes = parse_int_list(sizes, "--sizes", 4);
  if (f.job.warmup < 0 || f.job.repeats < 1 || f.job.threads < 1 || f.job.timeout_s <= 0) {
    throw UsageError("worker collective: --warmup >= 0, --repeats >= 1, --threads >= 1, --timeout > 0");
  }
  if (f.world_size < 1 || f.rank < 0 || f.rank >= f.world_size) {
    throw UsageError("worker collective: --rank must be in [0, --world-size)");
  }
  return f;
}

std::string format_double(double v) {
  std::ostringstream s;
  s << std::setprecision(17) << v;
  return s.str();
}

// Issues `op` on `tensor` (roots: rank 0); asynchronous.
c10::intrusive_ptr<c10d::Work> issue(Communicator& comm, CollectiveOp op, const torch::Tensor& tensor) {
  switch (op) {
    case CollectiveOp::all_reduce: return comm.all_reduce(tensor);
    case CollectiveOp::broadcast: return comm.broadcast(tensor, /*root=*/0);
    case CollectiveOp::reduce: return comm.reduce(tensor, /*root=*/0);
  }
  throw std::logic_error("unknown collective");
}

void run(Communicator& comm, CollectiveOp op, const torch::Tensor& tensor) { comm.wait(issue(comm, op, tensor)); }

// The maximum of `value` over the ranks (every rank must call it).
double max_over_ranks(Communicator& comm, double value) {
  const auto t = torch::full({1}, value, torch::TensorOptions().dtype(torch::kFloat64).device(comm.device()));
  comm.wait(comm.all_reduce(t, c10d::ReduceOp::MAX));
  return t.cpu().item<double>();
}

}  // namespace

double time_collective(Communicator& comm, CollectiveOp op, const torch::Tensor& tensor) {
  comm.synchronize();  // nothing queued earlier runs inside the timing
  const auto t0 = std::chrono::steady_clock::now();
  run(comm, op, tensor);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::pair<double, double> check_collective(Communicator& comm, CollectiveOp op) {
  const int n = comm.world_size();
  const int rank = comm.rank();
  torch::Tensor t = torch::full({kCheckElements}, static_cast<double>(rank + 1),
                                torch::TensorOptions().dtype(torch::kFloat32).device(comm.device()));
  run(comm, op, t);
  // Sum over ranks of (r + 1) = n(n + 1)/2; broadcast copies rank 0's value, 0 + 1 = 1.
  const double sum = n * (n + 1) / 2.0;
  double expected = 0;
  bool defined = true;
  switch (op) {
    case CollectiveOp::all_reduce: expected = sum; break;
    case CollectiveOp::broadcast: expected = 1.0; break;
    case CollectiveOp::reduce:
      expected = sum;
      defined = rank == 0;  // other ranks' buffers are unspecified after a reduce
      break;
  }
  if (!defined) return {expected, expected};
  const torch::Tensor host = t.cpu();
  const int64_t wrong = (host != static_cast<float>(expected)).sum().item<int64_t>();
  const double observed = host[0].item<double>();
  if (wrong != 0) {
    throw std::runtime_error(op_name(op) + " check failed on rank " + std::to_string(rank) + " of " +
                             std::to_string(n) + ": " + std::to_string(wrong) + " of " +
                             std::to_string(kCheckElements) + " elements wrong (expected " +
                             format_double(expected) + ", element 0 is " + format_double(observed) + ")");
  }
  return {expected, observed};
}

CollectiveResult run_benchmark(Communicator& comm, const CollectiveJob& job) {
  CollectiveResult result;
  std::tie(result.check_expected, result.check_observed) = check_collective(comm, job.op);
  result.curve.op = op_name(job.op);
  result.curve.ranks = comm.world_size();
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(comm.device());
  for (int64_t bytes : job.sizes) {
    set_rank_step(result.curve.op + " of " + std::to_string(bytes) + " bytes");
    const int64_t count = std::max<int64_t>(1, bytes / 4);
    torch::Tensor t = torch::rand({count}, options);  // random, never all zero
    for (int i = 0; i < job.warmup; ++i) run(comm, job.op, t);
    std::vector<double> times;
    const int repeats = repeats_for_size(job.repeats, bytes);
    for (int i = 0; i < repeats; ++i) {
      comm.barrier();  // every rank starts the timed collective together
      times.push_back(time_collective(comm, job.op, t));
    }
    const double slowest = max_over_ranks(comm, median(times));
    result.curve.points.push_back({static_cast<double>(count * 4), slowest});
  }
  return result;
}

int collective_worker_main(int argc, char** argv) {
  const WorkerFlags f = parse_worker_flags(std::vector<std::string>(argv, argv + argc));
  try {
    torch::set_num_threads(f.job.threads);
    CommunicatorOptions options;
    options.backend = f.job.backend;
    options.rank = f.rank;
    options.world_size = f.world_size;
    options.device_index = f.rank;  // nccl: rank r on cuda:r
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.job.timeout_s * 1000.0));
    set_rank_step("rendezvous");
    Communicator comm(make_file_store(f.store_dir + "/filestore", f.world_size), options);
    set_rank_step(op_name(f.job.op) + ": the check");
    const CollectiveResult result = run_benchmark(comm, f.job);
    if (f.rank == 0) write_result_file(result, f.store_dir + "/result.txt");
    comm.barrier();  // nobody leaves (closing its store handle) while others still need it
  } catch (const std::exception& e) {
    std::cerr << "error: rank " << f.rank << " of " << f.world_size << ": " << first_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}

std::vector<std::string> worker_args(const CollectiveJob& job) {
  return {"worker", "collective",
          "--backend", job.backend,
          "--op", op_name(job.op),
          "--sizes", join_ints(job.sizes),
          "--warmup", std::to_string(job.warmup),
          "--repeats", std::to_string(job.repeats),
          "--threads", std::to_string(job.threads),
          "--timeout", format_double(job.timeout_s)};
}

CollectiveResult run_collective(const std::string& exe, const CollectiveJob& job, int ranks,
                                double launch_timeout_s) {
  TempDir store("trainsim-collective-");
  launch_ranks(exe, worker_args(job), ranks, store.path(), launch_timeout_s);
  return read_result_file(store.path() + "/result.txt");
}

void write_result_file(const CollectiveResult& result, const std::string& path) {
  std::ostringstream out;
  out << kResultMagic << " " << kResultVersion << "\n";
  out << "op " << result.curve.op << "\n";
  out << "ranks " << result.curve.ranks << "\n";
  out << "check " << format_double(result.check_expected) << " " << format_double(result.check_observed) << "\n";
  for (const auto& p : result.curve.points) {
    out << "point " << format_double(p.bytes) << " " << format_double(p.time_s) << "\n";
  }
  write_file_atomic(path, out.str());
}

CollectiveResult read_result_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": missing (rank 0 wrote no result)");
  CollectiveResult r;
  std::string line;
  int line_number = 0;
  const auto fail = [&](const std::string& what) {
    throw std::runtime_error(path + ":" + std::to_string(line_number) + ": " + what);
  };
  bool header = false;
  while (std::getline(in, line)) {
    ++line_number;
    std::istringstream s(line);
    std::string key;
    s >> key;
    bool ok = true;
    if (key == kResultMagic) {
      int version = 0;
      ok = static_cast<bool>(s >> version) && version == kResultVersion;
      header = ok;
    } else if (key == "op") {
      ok = static_cast<bool>(s >> r.curve.op);
    } else if (key == "ranks") {
      ok = static_cast<bool>(s >> r.curve.ranks);
    } else if (key == "check") {
      ok = static_cast<bool>(s >> r.check_expected >> r.check_observed);
    } else if (key == "point") {
      CurvePoint p;
      ok = static_cast<bool>(s >> p.bytes >> p.time_s);
      r.curve.points.push_back(p);
    } else {
      fail("unknown line '" + line + "'");
    }
    if (!ok) fail("malformed line '" + line + "'");
  }
  if (!header) fail("not a " + std::string(kResultMagic) + " " + std::to_string(kResultVersion) + " file");
  return r;
}

}  // namespace trainsim::measure::collectives
