#include "machine_cli.h"

#include <boost/program_options.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "device.h"
#include "machine.h"

namespace trainsim::measure {

namespace po = boost::program_options;

std::string this_host_machine_name(const std::string& device_flag) {
  const Device device = resolve_device(device_flag);
  MachineInfo machine = detect_host();
  fill_device_info(machine, device, device.is_cuda() ? cuda_device_count() : 1);
  return default_machine_name(machine);
}

int machine_main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  po::options_description flags("measure machine: the default machine name of this host");
  flags.add_options()
      ("help,h", "print this help and exit")
      ("device", po::value<std::string>()->value_name("cpu|cuda"),
       "the device (default: cuda when a GPU is visible, else cpu)");
  const po::variables_map vm = parse_flags(args, flags, "machine: ");
  if (vm.count("help")) {
    std::cout << "usage: measure machine [--device cpu|cuda]\n\n"
                 "Prints the name that `measure` and `measure train` file this host's profile and runs\n"
                 "under when no --machine is given (reports/<machine>/): cuda, the GPU's name and the\n"
                 "visible GPU count (nvidia-h200-x1); cpu, the CPU model and its cores (cpu-epyc-2c).\n\n"
              << flags;
    return 0;
  }
  std::cout << this_host_machine_name(vm.count("device") ? vm["device"].as<std::string>() : "") << "\n";
  return 0;
}

}  // namespace trainsim::measure
