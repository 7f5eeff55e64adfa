#pragma once
// Factories of the compiled-in backends (internal to measure/collectives; use make_communicator).

#include <memory>

#include "collectives/communicator.h"

namespace trainsim::measure::collectives {

#ifdef TRAINSIM_HAVE_GLOO
std::unique_ptr<Communicator> make_gloo_communicator(const CommunicatorOptions& options);
#endif
#ifdef TRAINSIM_HAVE_NCCL
std::unique_ptr<Communicator> make_nccl_communicator(const CommunicatorOptions& options);
#endif

}  // namespace trainsim::measure::collectives
