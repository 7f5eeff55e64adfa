#pragma once
// CIFAR-10 binary format: records of 1 label byte + 3072 pixel bytes (1024 R, 1024 G, 1024 B,
// row-major 32x32). Train: data_batch_1.bin .. data_batch_5.bin; test: test_batch.bin.
// Torch-free.

#include <cstdint>
#include <string>

#include "data/image_set.h"

namespace trainsim::data {

inline constexpr int kImageSide = 32;
inline constexpr int kChannels = 3;
inline constexpr int64_t kPixelsPerImage = kChannels * kImageSide * kImageSide;  // 3072
inline constexpr int64_t kRecordBytes = 1 + kPixelsPerImage;                      // 3073

// A CIFAR-10 directory holding a file of this name contains generated images (measure make-data,
// measure/pytorch/synthetic.py): both trainers' readers label what they read `synthetic`.
inline constexpr const char* kSyntheticMarker = "SYNTHETIC";
bool is_synthetic_dir(const std::string& dir);

ImageSet read_cifar10_file(const std::string& path);
// The five data_batch_N.bin, in order / test_batch.bin; synthetic = is_synthetic_dir(dir).
ImageSet read_cifar10_train(const std::string& dir);
ImageSet read_cifar10_test(const std::string& dir);

// Deterministic synthetic images in the same format, labelled synthetic. Each class has its own
// tint and stripe pattern (plus per-image phase and noise), so a model can learn them. Image i
// depends only on (seed, i). Uses SplitMix64 (data/splitmix64.h): identical on every platform.
ImageSet synthetic_cifar10(int64_t n, uint64_t seed);
// Writes the binary format (tests generate their input files with it).
void write_cifar10_file(const ImageSet& set, const std::string& path);

// A synthetic CIFAR-10 directory (`measure make-data`, the images measure/pytorch/synthetic.py
// writes too): `dir` (created if missing) gets data_batch_1.bin .. data_batch_5.bin with the
// first `train` images of synthetic_cifar10(train, seed) split over the five files as evenly as
// possible (the first files one larger), test_batch.bin with synthetic_cifar10(test, seed + 1),
// and the marker file SYNTHETIC saying the images are generated. Throws DataError for train < 5
// or test < 1 (an empty file is not a CIFAR-10 file) or a file that cannot be written.
void write_synthetic_cifar10_dir(const std::string& dir, int64_t train, int64_t test, uint64_t seed);

}  // namespace trainsim::data
