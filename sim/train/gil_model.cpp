#include "train/gil_model.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "des/engine.h"
#include "des/op_scheduler.h"

namespace trainsim::train {

GilCosts gil_costs(const GilProfile& gil) {
  if (gil.probes.empty() || gil.threads.size() < 2 || gil.threads[0] != 1 || gil.threads[1] != 2) {
    throw std::invalid_argument("gil_costs: the GIL block needs a probe timed on 1 and 2 threads");
  }
  const GilProbe& probe = gil.probes.front();
  const double calls = static_cast<double>(probe.calls);
  GilCosts c;
  c.python_call_s = probe.forward_s[0] / calls;
  c.handoff_s = std::max(0.0, probe.forward_s[1] / (2 * calls) - c.python_call_s);
  return c;
}

double gil_threads_forward_s(int threads, int64_t calls, double call_s, const GilCosts& costs, double cores) {
  if (threads < 1 || calls < 1 || !(call_s > 0) || !(cores > 0)) {
    throw std::invalid_argument("gil_threads_forward_s: needs threads, calls, a call time and cores > 0");
  }
  des::Engine engine;
  des::OpScheduler ops(engine);
  const des::PoolId pool = ops.add_pool(cores);
  const des::ResourceId gil = ops.add_resource();
  const double python_s = std::min(call_s, costs.python_call_s) + (threads > 1 ? costs.handoff_s : 0);
  const des::SimTime python_ns = std::max<des::SimTime>(1, des::to_ns(python_s));
  const des::SimTime aten_ns = des::to_ns(std::max(0.0, call_s - costs.python_call_s));
  std::vector<des::OpId> last(static_cast<std::size_t>(threads), des::kNoOp);
  std::vector<des::ResourceId> thread(static_cast<std::size_t>(threads));
  for (auto& t : thread) {
    t = ops.add_resource();
    ops.attach_to_pool(t, pool, 1.0);
  }
  // Call k of every thread before call k + 1 of any: the order the threads become ready in.
  for (int64_t k = 0; k < calls; ++k) {
    for (std::size_t i = 0; i < thread.size(); ++i) {
      last[i] = ops.add_op(python_ns, {gil, thread[i]}, {last[i]});
      if (aten_ns > 0) last[i] = ops.add_op(aten_ns, {thread[i]}, {last[i]});
    }
  }
  des::SimTime end = 0;
  for (des::OpId op : last) {
    ops.run_until_done(op);
    end = std::max(end, ops.end_time(op));
  }
  return des::to_seconds(end);
}

}  // namespace trainsim::train
