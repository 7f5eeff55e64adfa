#pragma once
// `measure make-data --out DIR [--train-samples N] [--test-samples M] [--seed S]`: a folder of
// synthetic images in the CIFAR-10 binary format (data_batch_1..5.bin, test_batch.bin) and the
// marker file SYNTHETIC, for machines without the real data set; both trainers (and `measure
// --data DIR`) read it and label everything made from it `synthetic`.

namespace trainsim::measure {

// argv[0] is "make-data". Returns 0; throws UsageError for bad flags and data::DataError when a
// file cannot be written (main prints one `error: ...` line and exits 2).
int make_data_main(int argc, char** argv);

}  // namespace trainsim::measure
