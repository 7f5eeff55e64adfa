#pragma once
// A labelled set of 8-bit images of one format (CIFAR-10: 3x32x32 colour; Fashion-MNIST: 1x28x28
// grey), and the errors the readers raise. Torch-free.

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::data {

inline constexpr int kNumClasses = 10;  // both data sets have ten classes

// The geometry of a data set's images and the transform the course's recipe applies to them:
// RandomCrop(side, padding = crop_padding) + RandomHorizontalFlip(0.5) + ToTensor + Normalize
// with the per-channel mean and std (only channels of them are used).
struct ImageFormat {
  const char* name;  // "cifar10" | "fashion-mnist": the profile's `data` label of real images
  int channels;
  int side;
  int crop_padding;
  std::array<float, 3> mean;
  std::array<float, 3> std;
  int64_t pixels() const { return static_cast<int64_t>(channels) * side * side; }
};

// CIFAR-10's usual normalisation (pytorch-cifar, the course's script).
inline constexpr ImageFormat kCifar10Format{"cifar10", 3, 32, 4, {0.4914f, 0.4822f, 0.4465f},
                                            {0.2023f, 0.1994f, 0.2010f}};
// Fashion-MNIST: the training set's pixel mean and standard deviation (0.2860, 0.3530, as
// tests/data_idx_test.cpp recomputes from the Debian package's files); crop padding 2 keeps the
// CIFAR recipe's ratio of padding to side (4/32 ~ 2/28, rounded down).
inline constexpr ImageFormat kFashionMnistFormat{"fashion-mnist", 1, 28, 2, {0.2860f, 0.0f, 0.0f},
                                                 {0.3530f, 1.0f, 1.0f}};

struct ImageSet {
  ImageFormat format = kCifar10Format;
  std::vector<uint8_t> pixels;  // size() * format.pixels() bytes, CHW per image
  std::vector<uint8_t> labels;  // 0..9
  bool synthetic = false;       // true: generated, not a real data set's images
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  const uint8_t* image(int64_t i) const { return pixels.data() + i * format.pixels(); }
};

// Error naming the file (and record, counted from 0, where it applies), e.g.
// "data_batch_3.bin: record 17: label 12 out of range 0..9". Also for a missing, unreadable or
// empty file.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trainsim::data
