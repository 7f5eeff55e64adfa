#include "make_data.h"

#include <boost/program_options.hpp>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "data/cifar.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace {

namespace po = boost::program_options;

po::options_description make_data_flags() {
  po::options_description d("measure make-data: synthetic images in the CIFAR-10 binary format");
  d.add_options()
      ("help,h", "print this help and exit")
      ("out", po::value<std::string>()->value_name("DIR"), "folder to write (created if missing); required")
      ("train-samples", po::value<int64_t>()->value_name("N")->default_value(50000),
       "training images, split over data_batch_1..5.bin as evenly as possible (at least 5)")
      ("test-samples", po::value<int64_t>()->value_name("M")->default_value(10000),
       "test images in test_batch.bin (at least 1)")
      ("seed", po::value<int64_t>()->value_name("S")->default_value(0),
       "the training images come from seed S, the test images from S + 1");
  return d;
}

}  // namespace

int make_data_main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  const po::options_description flags = make_data_flags();
  const po::variables_map vm = parse_flags(args, flags, "make-data: ");
  if (vm.count("help")) {
    std::cout << "usage: measure make-data --out DIR [--train-samples N] [--test-samples M] [--seed S]\n\n"
                 "Writes DIR/data_batch_1.bin .. data_batch_5.bin, DIR/test_batch.bin (the images of\n"
                 "trainsim::data::synthetic_cifar10, bit for bit those of measure/pytorch/synthetic.py) and the\n"
                 "marker file DIR/SYNTHETIC: readers of DIR (measure --data, measure train --data, the PyTorch\n"
                 "trainer) label everything made from it `synthetic`.\n\n"
              << flags;
    return 0;
  }
  if (!vm.count("out") || vm["out"].as<std::string>().empty()) throw UsageError("make-data: --out DIR is required");
  const std::string out = vm["out"].as<std::string>();
  const int64_t train = at_least("train-samples", vm["train-samples"].as<int64_t>(), 5);
  const int64_t test = at_least("test-samples", vm["test-samples"].as<int64_t>(), 1);
  const int64_t seed = at_least("seed", vm["seed"].as<int64_t>(), 0);
  data::write_synthetic_cifar10_dir(out, train, test, static_cast<uint64_t>(seed));
  std::printf("make-data: wrote %s: %lld training images in data_batch_1..5.bin, %lld test images in "
              "test_batch.bin, synthetic (seed %lld; marker file %s)\n",
              out.c_str(), static_cast<long long>(train), static_cast<long long>(test),
              static_cast<long long>(seed), data::kSyntheticMarker);
  return 0;
}

}  // namespace trainsim::measure
