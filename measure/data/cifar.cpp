#include "data/cifar.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "data/splitmix64.h"
#include "format/atomic_write.h"

namespace trainsim::data {
namespace {

namespace fs = std::filesystem;

constexpr int kTrainFiles = 5;  // data_batch_1.bin .. data_batch_5.bin

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string errno_text(int err) { return std::strerror(err); }

std::vector<uint8_t> read_whole_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw DataError(path + ": is a directory, not a CIFAR-10 file");
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) throw DataError(path + ": cannot open: " + errno_text(errno));
  const auto size = fs::file_size(path, ec);
  if (ec) throw DataError(path + ": cannot read its size: " + ec.message());
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && std::fread(bytes.data(), 1, bytes.size(), file.get()) != bytes.size()) {
    throw DataError(path + ": read failed: " +
                    (std::ferror(file.get()) ? errno_text(errno) : "file shrank while reading"));
  }
  return bytes;
}

void append_records(const std::string& path, const std::vector<uint8_t>& bytes, ImageSet& set) {
  const auto size = static_cast<int64_t>(bytes.size());
  if (size == 0) throw DataError(path + ": empty file (no CIFAR-10 records)");
  if (size % kRecordBytes != 0) {
    // Records are counted from 0; the first incomplete one is the one after the whole ones.
    throw DataError(path + ": truncated: " + std::to_string(size) +
                    " bytes is not a multiple of " + std::to_string(kRecordBytes) + " (record " +
                    std::to_string(size / kRecordBytes) + " is incomplete)");
  }
  const int64_t records = size / kRecordBytes;
  const size_t first = set.labels.size();
  set.labels.resize(first + static_cast<size_t>(records));
  set.pixels.resize((first + static_cast<size_t>(records)) * kPixelsPerImage);
  for (int64_t r = 0; r < records; ++r) {
    const uint8_t* record = bytes.data() + r * kRecordBytes;
    if (record[0] >= kNumClasses) {
      throw DataError(path + ": record " + std::to_string(r) + ": label " +
                      std::to_string(record[0]) + " out of range 0.." +
                      std::to_string(kNumClasses - 1));
    }
    set.labels[first + static_cast<size_t>(r)] = record[0];
    std::copy(record + 1, record + kRecordBytes,
              set.pixels.begin() + static_cast<std::ptrdiff_t>((first + r) * kPixelsPerImage));
  }
}

std::string require_file(const std::string& dir, const std::string& name) {
  const std::string path = (fs::path(dir) / name).string();
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw DataError(path + ": missing (a CIFAR-10 directory holds data_batch_1.bin .. "
                    "data_batch_5.bin and test_batch.bin)");
  }
  return path;
}

}  // namespace

ImageSet read_cifar10_file(const std::string& path) {
  ImageSet set;
  append_records(path, read_whole_file(path), set);
  return set;
}

bool is_synthetic_dir(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / kSyntheticMarker, ec);
}

ImageSet read_cifar10_train(const std::string& dir) {
  std::vector<std::string> paths;
  for (int i = 1; i <= kTrainFiles; ++i) {
    paths.push_back(require_file(dir, "data_batch_" + std::to_string(i) + ".bin"));
  }
  ImageSet set;
  for (const auto& path : paths) append_records(path, read_whole_file(path), set);
  set.synthetic = is_synthetic_dir(dir);
  return set;
}

ImageSet read_cifar10_test(const std::string& dir) {
  ImageSet set = read_cifar10_file(require_file(dir, "test_batch.bin"));
  set.synthetic = is_synthetic_dir(dir);
  return set;
}

// Class c is a tinted stripe pattern: the tint (one of 8 colours) from the low 3 bits of c, the
// stripe direction (horizontal, vertical, two diagonals) from c % 4 and the period (4, 6 or 8
// pixels) from c / 4, so every class differs in colour or texture. Each image adds a random
// stripe phase and pixel noise, so images of one class are alike but not identical.
ImageSet synthetic_cifar10(int64_t n, uint64_t seed) {
  if (n < 0) throw std::invalid_argument("synthetic_cifar10: negative image count");
  constexpr int kLow = 70, kHigh = 185;   // tint levels per channel
  constexpr int kStripeAmplitude = 50;    // +- around the tint
  constexpr int kNoise = 32;              // uniform noise in [-32, 32]
  ImageSet set;
  set.synthetic = true;
  set.labels.resize(static_cast<size_t>(n));
  set.pixels.resize(static_cast<size_t>(n) * kPixelsPerImage);
  for (int64_t i = 0; i < n; ++i) {
    // Image i depends only on (seed, i): a smaller set is a prefix of a larger one.
    uint64_t state = mix_seed(seed, static_cast<uint64_t>(i));
    const int label = static_cast<int>(uniform_below(state, kNumClasses));
    const int direction = label % 4;
    const int period = 4 + 2 * (label / 4);
    const int phase = static_cast<int>(uniform_below(state, static_cast<uint64_t>(period)));
    set.labels[static_cast<size_t>(i)] = static_cast<uint8_t>(label);
    uint8_t* image = set.pixels.data() + i * kPixelsPerImage;
    for (int c = 0; c < kChannels; ++c) {
      const int tint = ((label >> c) & 1) ? kHigh : kLow;
      for (int y = 0; y < kImageSide; ++y) {
        for (int x = 0; x < kImageSide; ++x) {
          const int coordinate = direction == 0   ? y
                                 : direction == 1 ? x
                                 : direction == 2 ? x + y
                                                  : x - y + kImageSide;
          const bool bright = ((coordinate + phase) / (period / 2)) % 2 == 0;
          const int noise = static_cast<int>(uniform_below(state, 2 * kNoise + 1)) - kNoise;
          const int value = tint + (bright ? kStripeAmplitude : -kStripeAmplitude) + noise;
          image[(c * kImageSide + y) * kImageSide + x] =
              static_cast<uint8_t>(std::clamp(value, 0, 255));
        }
      }
    }
  }
  return set;
}

void write_cifar10_file(const ImageSet& set, const std::string& path) {
  if (set.format.pixels() != kPixelsPerImage) {
    throw DataError(path + ": cannot write " + set.format.name + " images (" + std::to_string(set.format.channels) +
                    "x" + std::to_string(set.format.side) + "x" + std::to_string(set.format.side) +
                    ") as CIFAR-10 records (3x32x32)");
  }
  if (set.pixels.size() != set.labels.size() * static_cast<size_t>(kPixelsPerImage)) {
    throw DataError(path + ": cannot write: " + std::to_string(set.pixels.size()) +
                    " pixel bytes for " + std::to_string(set.labels.size()) + " labels");
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(set.size()) * (1 + static_cast<size_t>(kPixelsPerImage)));
  for (int64_t i = 0; i < set.size(); ++i) {
    bytes.push_back(static_cast<char>(set.labels[static_cast<size_t>(i)]));
    bytes.append(reinterpret_cast<const char*>(set.image(i)), static_cast<size_t>(kPixelsPerImage));
  }
  try {
    write_file_atomic(path, bytes);
  } catch (const WriteError& e) {
    throw DataError(e.what());
  }
}

void write_synthetic_cifar10_dir(const std::string& dir, int64_t train, int64_t test, uint64_t seed) {
  if (train < kTrainFiles || test < 1) {
    throw DataError(dir + ": a synthetic CIFAR-10 directory needs at least " + std::to_string(kTrainFiles) +
                    " training images (one per data_batch file) and 1 test image; asked for " +
                    std::to_string(train) + " and " + std::to_string(test));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw DataError(dir + ": cannot create: " + ec.message());
  const ImageSet all = synthetic_cifar10(train, seed);
  int64_t start = 0;
  for (int i = 0; i < kTrainFiles; ++i) {
    const int64_t size = train / kTrainFiles + (i < train % kTrainFiles ? 1 : 0);
    ImageSet part;
    part.labels.assign(all.labels.begin() + start, all.labels.begin() + start + size);
    part.pixels.assign(all.pixels.begin() + start * kPixelsPerImage,
                       all.pixels.begin() + (start + size) * kPixelsPerImage);
    write_cifar10_file(part, (fs::path(dir) / ("data_batch_" + std::to_string(i + 1) + ".bin")).string());
    start += size;
  }
  write_cifar10_file(synthetic_cifar10(test, seed + 1), (fs::path(dir) / "test_batch.bin").string());
  const std::string marker = (fs::path(dir) / kSyntheticMarker).string();
  try {
    write_file_atomic(marker, "synthetic CIFAR-10-format images (measure make-data, seed " + std::to_string(seed) +
                                  ": " + std::to_string(train) + " training, " + std::to_string(test) +
                                  " test); generated by trainsim::data::synthetic_cifar10, not real CIFAR-10\n");
  } catch (const WriteError& e) {
    throw DataError(e.what());
  }
}

}  // namespace trainsim::data
