#pragma once
// The GIL as a resource (docs/HOST.md "DataParallel's host mechanisms, measured"). N Python
// threads each run a forward of `calls` calls into ATen. Every call holds the GIL for its Python
// part (the interpreter: module __call__, the forward's body, the binding's argument parsing) and
// releases it for its ATen part (dispatch, kernel or launch). While two threads or more run, each
// call's Python part also pays the hand-over of the GIL: the waiting thread is woken by the
// operating system before it runs (CPython's GIL is a mutex and a condition variable). The
// threads share the host's cores (processor sharing), the Python part included.
//
// The measured figures come from GilProfile's first probe, Python-bound by construction (a few
// microseconds of ATen per call), run alone and by two threads at once:
//   python_call_s = T1 / calls                      (its ATen part counted as Python)
//   handoff_s     = max(0, T2 / (2 calls) - python_call_s)
// where T1, T2 are its wall times per forward (2 threads: both forwards in T2, the GIL bound).

#include <cstdint>

#include "format/profile.h"

namespace trainsim::train {

struct GilCosts {
  double python_call_s = 0;  // the GIL held per call into ATen
  double handoff_s = 0;      // per call, on top, while two or more threads run Python
};

// From the profile's GIL block (first probe). Throws std::invalid_argument when the block lacks
// one or two threads (the readers already refuse such a profile).
GilCosts gil_costs(const GilProfile& gil);

// Wall time per forward when `threads` threads each run one forward of `calls` calls at once,
// each call `call_s` in all when run alone (its Python part min(call_s, python_call_s)), on
// `cores` cores: the discrete-event simulation of the threads, the GIL and the cores.
double gil_threads_forward_s(int threads, int64_t calls, double call_s, const GilCosts& costs, double cores);

}  // namespace trainsim::train
