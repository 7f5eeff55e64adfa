#pragma once
// The course's augmentation and a multi-threaded data loader (W workers building whole batches,
// prefetch queue of 2W batches, in-order delivery, W = 0 loads in the calling thread).

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "data/image_set.h"

namespace trainsim::data {

// RandomCrop(side, padding p, zero fill) + RandomHorizontalFlip(0.5) + ToTensor + Normalize, p
// the format's crop_padding (CIFAR-10: 32, 4). src: format.pixels() CHW bytes; dst as many floats.
// Crop offsets dy, dx in [0, 2p]; flip as given.
void augment_image(const ImageFormat& format, const uint8_t* src, float* dst, int dy, int dx, bool flip);
// ToTensor + Normalize only (test set).
void normalize_image(const ImageFormat& format, const uint8_t* src, float* dst);

struct Batch {
  torch::Tensor images;  // float32 [b, channels, side, side] of the set's format
  torch::Tensor labels;  // int64 [b]
  int64_t index = 0;     // batch number within the epoch
};

struct LoaderOptions {
  int64_t batch_size = 128;
  int workers = 2;          // 0: inline in the calling thread
  bool shuffle = true;
  bool augment = true;      // false: test-set transform
  uint64_t seed = 0;        // shuffling and augmentation are reproducible from (seed, epoch)
  bool pin_memory = false;  // allocate batches in pinned host memory (CUDA builds only)
  // Optional subset: first `limit` samples of the (shuffled) order; 0 = all.
  int64_t limit = 0;
};

// Yields ceil(n / batch_size) batches per epoch, the last one partial; a batch larger than the
// data set is one batch. Batches arrive in order whatever the worker count, and their contents
// depend only on (set, options without workers, epoch): W = 0, 1, 3 give identical batches.
// `set` is not copied: it must outlive the loader. One consumer thread calls start_epoch/next.
// Throws std::invalid_argument for batch_size < 1, workers < 0 or limit < 0.
class DataLoader {
 public:
  DataLoader(const ImageSet& set, LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  void start_epoch(int64_t epoch);   // reshuffles with (seed, epoch); stops any running epoch
  std::optional<Batch> next();       // nullopt at the end of the epoch; starts epoch 0 if none
                                     // was started; rethrows an error raised by a worker
  int64_t batches_per_epoch() const;
  int64_t samples_per_epoch() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainsim::data
