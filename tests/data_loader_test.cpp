// Augmentation values on hand-made images and the multi-threaded loader (measure/data/loader.h).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "data/cifar.h"
#include "data/loader.h"

namespace trainsim::data {
namespace {

constexpr float kTol = 1e-5f;

// Normalised values, float formula (v/255 - mean)/std, worked out:
//   R: 255 -> (1 - 0.4914)/0.2023 = 2.514088   0 -> -0.4914/0.2023 = -2.429066
//   G: 255 -> (1 - 0.4822)/0.1994 = 2.596790   0 -> -0.4822/0.1994 = -2.418255
//   B: 255 -> (1 - 0.4465)/0.2010 = 2.753731   0 -> -0.4465/0.2010 = -2.221393
//   R: 200 -> (200/255 - 0.4914)/0.2023 = 1.447918
constexpr double kRed255 = 2.514088, kRed0 = -2.429066;
constexpr double kGreen255 = 2.596790, kGreen0 = -2.418255;
constexpr double kBlue255 = 2.753731, kBlue0 = -2.221393;
constexpr double kRed200 = 1.447918;

int at(int c, int y, int x) { return (c * kImageSide + y) * kImageSide + x; }

std::vector<uint8_t> image_filled(uint8_t value) {
  return std::vector<uint8_t>(kPixelsPerImage, value);
}

TEST(Augment, NormalizeUsesPerChannelMeanAndStd) {
  auto src = image_filled(0);
  src[at(0, 0, 0)] = 255;
  src[at(1, 0, 0)] = 255;
  src[at(2, 0, 0)] = 255;
  std::vector<float> dst(kPixelsPerImage);
  normalize_image(kCifar10Format, src.data(), dst.data());
  EXPECT_NEAR(dst[at(0, 0, 0)], kRed255, kTol);
  EXPECT_NEAR(dst[at(1, 0, 0)], kGreen255, kTol);
  EXPECT_NEAR(dst[at(2, 0, 0)], kBlue255, kTol);
  EXPECT_NEAR(dst[at(0, 9, 9)], kRed0, kTol);
  EXPECT_NEAR(dst[at(1, 31, 31)], kGreen0, kTol);
  EXPECT_NEAR(dst[at(2, 5, 17)], kBlue0, kTol);
}

TEST(Augment, CenteredCropWithoutFlipIsNormalize) {
  // Offset (4, 4) in the 40x40 padded image is the original image.
  auto src = synthetic_cifar10(1, 9).pixels;
  std::vector<float> augmented(kPixelsPerImage), normalized(kPixelsPerImage);
  augment_image(kCifar10Format, src.data(), augmented.data(), 4, 4, false);
  normalize_image(kCifar10Format, src.data(), normalized.data());
  EXPECT_EQ(augmented, normalized);
}

TEST(Augment, CropMovesPixelsByTheOffset) {
  auto src = image_filled(0);
  src[at(0, 5, 7)] = 255;
  std::vector<float> dst(kPixelsPerImage);
  // Output (y, x) = source (y + dy - 4, x + dx - 4). dy = 6, dx = 1: source (5, 7) lands at
  // (5 - 2, 7 + 3) = (3, 10).
  augment_image(kCifar10Format, src.data(), dst.data(), 6, 1, false);
  EXPECT_NEAR(dst[at(0, 3, 10)], kRed255, kTol);
  EXPECT_NEAR(dst[at(0, 5, 7)], kRed0, kTol);
  int bright = 0;
  for (float v : dst) bright += std::abs(v - kRed255) < kTol;
  EXPECT_EQ(bright, 1);
}

TEST(Augment, PaddingIsZeroNormalised) {
  const auto src = image_filled(200);
  std::vector<float> dst(kPixelsPerImage);
  // dy = dx = 0: output rows and columns 0..3 come from the zero padding, (4, 4) from source (0, 0).
  augment_image(kCifar10Format, src.data(), dst.data(), 0, 0, false);
  EXPECT_NEAR(dst[at(0, 0, 0)], kRed0, kTol);
  EXPECT_NEAR(dst[at(0, 3, 31)], kRed0, kTol);
  EXPECT_NEAR(dst[at(0, 31, 3)], kRed0, kTol);
  EXPECT_NEAR(dst[at(2, 2, 2)], kBlue0, kTol);
  EXPECT_NEAR(dst[at(0, 4, 4)], kRed200, kTol);
  EXPECT_NEAR(dst[at(0, 31, 31)], kRed200, kTol);
  // dy = dx = 8: the last 4 rows and columns are padding.
  augment_image(kCifar10Format, src.data(), dst.data(), 8, 8, false);
  EXPECT_NEAR(dst[at(0, 27, 27)], kRed200, kTol);
  EXPECT_NEAR(dst[at(0, 28, 0)], kRed0, kTol);
  EXPECT_NEAR(dst[at(1, 0, 28)], kGreen0, kTol);
}

TEST(Augment, FlipMirrorsTheCrop) {
  auto src = image_filled(0);
  src[at(2, 5, 7)] = 255;
  std::vector<float> dst(kPixelsPerImage);
  // No shift, flipped: column 7 -> 31 - 7 = 24.
  augment_image(kCifar10Format, src.data(), dst.data(), 4, 4, true);
  EXPECT_NEAR(dst[at(2, 5, 24)], kBlue255, kTol);
  EXPECT_NEAR(dst[at(2, 5, 7)], kBlue0, kTol);
  // Crop then flip: output x shows crop column 31 - x = source column 31 - x + dx - 4.
  // dx = 6: source column 7 = 33 - x -> x = 26.
  augment_image(kCifar10Format, src.data(), dst.data(), 4, 6, true);
  EXPECT_NEAR(dst[at(2, 5, 26)], kBlue255, kTol);
}

TEST(Augment, RejectsOffsetsOutsideThePadding) {
  const auto src = image_filled(0);
  std::vector<float> dst(kPixelsPerImage);
  EXPECT_THROW(augment_image(kCifar10Format, src.data(), dst.data(), 9, 0, false), std::invalid_argument);
  EXPECT_THROW(augment_image(kCifar10Format, src.data(), dst.data(), 0, -1, false), std::invalid_argument);
}

// Image i is filled with the byte i, so any pixel of any crop identifies the sample: the centre
// pixel (16, 16) stays inside the source for every offset in [0, 8].
ImageSet numbered_images(int n) {
  ImageSet set;
  for (int i = 0; i < n; ++i) {
    set.labels.push_back(static_cast<uint8_t>(i % kNumClasses));
    set.pixels.insert(set.pixels.end(), kPixelsPerImage, static_cast<uint8_t>(i));
  }
  return set;
}

// Sample index from the red centre pixel: v = round((x * std + mean) * 255).
int sample_of(const torch::Tensor& images, int64_t row) {
  const float x = images[row][0][16][16].item<float>();
  return static_cast<int>(std::lround((x * kCifar10Format.std[0] + kCifar10Format.mean[0]) * 255.0f));
}

std::vector<Batch> whole_epoch(DataLoader& loader, int64_t epoch) {
  loader.start_epoch(epoch);
  std::vector<Batch> batches;
  while (auto b = loader.next()) batches.push_back(std::move(*b));
  return batches;
}

std::vector<int> sample_order(const std::vector<Batch>& batches) {
  std::vector<int> order;
  for (const auto& b : batches) {
    for (int64_t r = 0; r < b.images.size(0); ++r) order.push_back(sample_of(b.images, r));
  }
  return order;
}

TEST(DataLoader, BatchCountsAndSizesIncludingPartial) {
  const ImageSet set = numbered_images(10);
  LoaderOptions options;
  options.batch_size = 4;
  options.workers = 2;
  DataLoader loader(set, options);
  // ceil(10 / 4) = 3 batches: 4, 4, 2.
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  EXPECT_EQ(loader.samples_per_epoch(), 10);
  const auto batches = whole_epoch(loader, 0);
  ASSERT_EQ(batches.size(), 3u);
  const int64_t sizes[] = {4, 4, 2};
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(batches[k].index, static_cast<int64_t>(k));
    EXPECT_EQ(batches[k].images.sizes().vec(), (std::vector<int64_t>{sizes[k], 3, 32, 32}));
    EXPECT_EQ(batches[k].images.scalar_type(), torch::kFloat32);
    EXPECT_EQ(batches[k].labels.sizes().vec(), (std::vector<int64_t>{sizes[k]}));
    EXPECT_EQ(batches[k].labels.scalar_type(), torch::kInt64);
  }
  EXPECT_FALSE(loader.next().has_value());  // the epoch stays finished
  EXPECT_FALSE(loader.next().has_value());
}

TEST(DataLoader, BatchLargerThanTheDataSetIsOneBatch) {
  const ImageSet set = numbered_images(10);
  LoaderOptions options;
  options.batch_size = 64;
  options.workers = 3;
  DataLoader loader(set, options);
  const auto batches = whole_epoch(loader, 0);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].images.size(0), 10);
}

TEST(DataLoader, LimitTakesTheFirstSamplesOfTheOrder) {
  const ImageSet set = numbered_images(30);
  LoaderOptions options;
  options.batch_size = 4;
  options.workers = 1;
  options.limit = 7;
  DataLoader loader(set, options);
  // 7 samples: ceil(7 / 4) = 2 batches of 4 and 3.
  EXPECT_EQ(loader.samples_per_epoch(), 7);
  const auto batches = whole_epoch(loader, 0);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].images.size(0), 3);
  const auto order = sample_order(batches);
  EXPECT_EQ(std::set<int>(order.begin(), order.end()).size(), 7u);
}

TEST(DataLoader, EverySampleExactlyOncePerEpochWithMatchingLabels) {
  const ImageSet set = numbered_images(101);
  LoaderOptions options;
  options.batch_size = 8;
  options.workers = 3;
  options.seed = 17;
  DataLoader loader(set, options);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const auto batches = whole_epoch(loader, epoch);
    ASSERT_EQ(batches.size(), 13u);  // ceil(101 / 8)
    std::vector<int> seen(101, 0);
    for (const auto& b : batches) {
      for (int64_t r = 0; r < b.images.size(0); ++r) {
        const int i = sample_of(b.images, r);
        ASSERT_GE(i, 0);
        ASSERT_LT(i, 101);
        ++seen[static_cast<size_t>(i)];
        EXPECT_EQ(b.labels[r].item<int64_t>(), i % kNumClasses);
      }
    }
    for (int i = 0; i < 101; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], 1) << "sample " << i;
  }
}

TEST(DataLoader, UnshuffledOrderIsTheDataSetOrder) {
  const ImageSet set = numbered_images(20);
  LoaderOptions options;
  options.batch_size = 6;
  options.workers = 2;
  options.shuffle = false;
  DataLoader loader(set, options);
  const auto order = sample_order(whole_epoch(loader, 3));
  std::vector<int> expected(20);
  for (int i = 0; i < 20; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_EQ(order, expected);
}

TEST(DataLoader, SameOutputForAnyWorkerCount) {
  const ImageSet set = synthetic_cifar10(150, 4);
  std::vector<std::vector<Batch>> runs;
  for (int workers : {0, 1, 3}) {
    LoaderOptions options;
    options.batch_size = 16;
    options.workers = workers;
    options.seed = 99;
    DataLoader loader(set, options);
    runs.push_back(whole_epoch(loader, 2));
  }
  for (size_t r = 1; r < runs.size(); ++r) {
    ASSERT_EQ(runs[r].size(), runs[0].size());
    for (size_t k = 0; k < runs[0].size(); ++k) {
      EXPECT_TRUE(torch::equal(runs[r][k].images, runs[0][k].images)) << "run " << r << " batch " << k;
      EXPECT_TRUE(torch::equal(runs[r][k].labels, runs[0][k].labels)) << "run " << r << " batch " << k;
    }
  }
}

TEST(DataLoader, OrderDependsOnSeedAndEpochOnly) {
  const ImageSet set = numbered_images(64);
  auto order = [&](uint64_t seed, int64_t epoch) {
    LoaderOptions options;
    options.batch_size = 10;
    options.workers = 2;
    options.seed = seed;
    DataLoader loader(set, options);
    return sample_order(whole_epoch(loader, epoch));
  };
  const auto base = order(1, 0);
  EXPECT_EQ(order(1, 0), base);
  // Two permutations of 64 agree with probability 1/64!: a collision would be a bug.
  EXPECT_NE(order(1, 1), base);
  EXPECT_NE(order(2, 0), base);
}

TEST(DataLoader, AugmentationVariesAcrossEpochs) {
  // Same sample, same position in the batch (no shuffle), different epoch: different crop/flip
  // draws. The synthetic image has structure, so some of 8 images must differ.
  const ImageSet set = synthetic_cifar10(8, 1);
  LoaderOptions options;
  options.batch_size = 8;
  options.workers = 0;
  options.shuffle = false;
  DataLoader loader(set, options);
  const auto a = whole_epoch(loader, 0);
  const auto b = whole_epoch(loader, 1);
  EXPECT_FALSE(torch::equal(a[0].images, b[0].images));
  EXPECT_TRUE(torch::equal(a[0].labels, b[0].labels));
}

TEST(DataLoader, TestTransformOnlyNormalises) {
  const ImageSet set = synthetic_cifar10(3, 8);
  LoaderOptions options;
  options.batch_size = 3;
  options.workers = 1;
  options.shuffle = false;
  options.augment = false;
  DataLoader loader(set, options);
  const auto batches = whole_epoch(loader, 0);
  std::vector<float> expected(kPixelsPerImage);
  normalize_image(kCifar10Format, set.image(2), expected.data());
  const auto row = batches[0].images[2].contiguous();
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), row.data_ptr<float>()));
}

// Fashion-MNIST's grey 28x28 images: batches of [b, 1, 28, 28] normalised with its own mean and
// std, crops of padding 2 (offsets 0..4), the same pixel arithmetic as CIFAR's.
TEST(DataLoader, FashionMnistFormatBatchesAreOneChannelOf28) {
  ImageSet set;
  set.format = kFashionMnistFormat;
  for (int i = 0; i < 6; ++i) {
    set.labels.push_back(static_cast<uint8_t>(i));
    set.pixels.insert(set.pixels.end(), 28 * 28, static_cast<uint8_t>(10 * i));
  }
  LoaderOptions options;
  options.batch_size = 4;
  options.workers = 0;
  options.shuffle = false;
  options.augment = false;
  DataLoader plain(set, options);
  const auto batches = whole_epoch(plain, 0);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].images.sizes().vec(), (std::vector<int64_t>{4, 1, 28, 28}));
  EXPECT_FLOAT_EQ(batches[0].images[3][0][5][7].item<float>(), (30.0f / 255.0f - 0.2860f) / 0.3530f);

  std::vector<float> dst(28 * 28);
  augment_image(kFashionMnistFormat, set.image(1), dst.data(), 4, 4, false);  // source (y + 2, x + 2)
  EXPECT_FLOAT_EQ(dst[0], (10.0f / 255.0f - 0.2860f) / 0.3530f);
  EXPECT_FLOAT_EQ(dst[27 * 28 + 27], (0.0f - 0.2860f) / 0.3530f);  // the padding, black
  EXPECT_THROW(augment_image(kFashionMnistFormat, set.image(1), dst.data(), 5, 0, false), std::invalid_argument);

  options.augment = true;
  DataLoader augmented(set, options);
  EXPECT_EQ(whole_epoch(augmented, 0)[1].images.sizes().vec(), (std::vector<int64_t>{2, 1, 28, 28}));
}

TEST(DataLoader, NextWithoutStartEpochRunsEpochZero) {
  const ImageSet set = numbered_images(12);
  LoaderOptions options;
  options.batch_size = 5;
  options.workers = 2;
  options.seed = 3;
  DataLoader implicit(set, options);
  std::vector<Batch> batches;
  while (auto b = implicit.next()) batches.push_back(std::move(*b));
  DataLoader explicit_epoch(set, options);
  EXPECT_EQ(sample_order(batches), sample_order(whole_epoch(explicit_epoch, 0)));
}

TEST(DataLoader, StoppingEarlyDoesNotHang) {
  // Workers block on a full prefetch window while the consumer is idle; restarting the epoch and
  // destroying the loader must wake and join them (a hang here fails by the test timeout).
  const ImageSet set = synthetic_cifar10(400, 2);
  LoaderOptions options;
  options.batch_size = 4;
  options.workers = 3;
  {
    DataLoader loader(set, options);
    ASSERT_TRUE(loader.next().has_value());
    loader.start_epoch(1);  // abandons epoch 0 with 99 batches left
    ASSERT_TRUE(loader.next().has_value());
    const auto rest = whole_epoch(loader, 2);
    EXPECT_EQ(rest.size(), 100u);  // 400 / 4
  }
  {
    DataLoader loader(set, options);  // destroyed while workers are building or waiting
  }
  {
    DataLoader loader(set, options);
    loader.start_epoch(0);
  }
}

TEST(DataLoader, EmptySetAndBadOptions) {
  const ImageSet empty;
  DataLoader loader(empty, LoaderOptions{});
  EXPECT_EQ(loader.batches_per_epoch(), 0);
  EXPECT_FALSE(loader.next().has_value());
  LoaderOptions bad;
  bad.batch_size = 0;
  EXPECT_THROW(DataLoader(empty, bad), std::invalid_argument);
  bad = LoaderOptions{};
  bad.workers = -1;
  EXPECT_THROW(DataLoader(empty, bad), std::invalid_argument);
  bad = LoaderOptions{};
  bad.limit = -2;
  EXPECT_THROW(DataLoader(empty, bad), std::invalid_argument);
}

TEST(DataLoader, PinMemoryOnlyWithCuda) {
  const ImageSet set = numbered_images(4);
  LoaderOptions options;
  options.batch_size = 4;
  options.pin_memory = true;
  DataLoader loader(set, options);
  auto b = loader.next();
  ASSERT_TRUE(b.has_value());
  // Pinned with a CUDA runtime; silently ignored on a CPU-only build or machine.
  EXPECT_EQ(b->images.is_pinned(), torch::cuda::is_available());
  EXPECT_EQ(b->labels.is_pinned(), torch::cuda::is_available());
}

}  // namespace
}  // namespace trainsim::data
