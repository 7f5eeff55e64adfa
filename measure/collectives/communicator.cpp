#include "collectives/communicator.h"

#include <stdexcept>

#include "collectives/backends.h"

namespace trainsim::measure::collectives {

bool backend_available(const std::string& backend) {
#ifdef TRAINSIM_HAVE_GLOO
  if (backend == "gloo") return true;
#endif
#ifdef TRAINSIM_HAVE_NCCL
  if (backend == "nccl") return true;
#endif
  return false;
}

std::unique_ptr<Communicator> make_communicator(const CommunicatorOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    throw std::invalid_argument("make_communicator: rank " + std::to_string(options.rank) +
                                " outside a world of " + std::to_string(options.world_size));
  }
#ifdef TRAINSIM_HAVE_GLOO
  if (options.backend == "gloo") return make_gloo_communicator(options);
#endif
#ifdef TRAINSIM_HAVE_NCCL
  if (options.backend == "nccl") return make_nccl_communicator(options);
#endif
  throw std::runtime_error("collective backend '" + options.backend +
                           "' is not available in this build of measure");
}

}  // namespace trainsim::measure::collectives
