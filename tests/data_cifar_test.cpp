// The CIFAR-10 binary reader and the synthetic images (measure/data/cifar.h). Every input file
// is generated into a fresh temporary directory by the test itself.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "data/cifar.h"
#include "remove_tree.h"

namespace trainsim::data {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("trainsim-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    trainsim::measure::remove_tree(path_.string());
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Records with the given labels; pixel p of record r is (r * 7 + p) mod 256.
std::vector<uint8_t> make_records(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> bytes;
  for (size_t r = 0; r < labels.size(); ++r) {
    bytes.push_back(labels[r]);
    for (int p = 0; p < kPixelsPerImage; ++p) bytes.push_back(static_cast<uint8_t>((r * 7 + p) % 256));
  }
  return bytes;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no DataError)";
}

TEST(CifarReader, ReadsHandMadeRecords) {
  TempDir dir;
  write_bytes(dir.file("a.bin"), make_records({3, 9}));
  const ImageSet set = read_cifar10_file(dir.file("a.bin"));
  ASSERT_EQ(set.size(), 2);
  EXPECT_EQ(set.labels[0], 3);
  EXPECT_EQ(set.labels[1], 9);
  EXPECT_FALSE(set.synthetic);
  EXPECT_EQ(set.image(0)[0], 0);           // (0*7 + 0) % 256
  EXPECT_EQ(set.image(0)[1025], 1025 % 256);  // G plane, second pixel: 1025 % 256 = 1
  EXPECT_EQ(set.image(1)[3071], (7 + 3071) % 256);  // 3078 % 256 = 6
}

TEST(CifarReader, WriteThenReadRoundTrips) {
  TempDir dir;
  const ImageSet original = synthetic_cifar10(25, 11);
  write_cifar10_file(original, dir.file("data.bin"));
  EXPECT_EQ(fs::file_size(dir.file("data.bin")), 25u * 3073u);
  const ImageSet back = read_cifar10_file(dir.file("data.bin"));
  EXPECT_EQ(back.labels, original.labels);
  EXPECT_EQ(back.pixels, original.pixels);
  EXPECT_FALSE(back.synthetic);  // the file is just bytes; only the generator marks synthetic
  EXPECT_FALSE(fs::exists(dir.file("data.bin.tmp")));
}

TEST(CifarReader, TruncatedFileNamesFileAndRecord) {
  TempDir dir;
  auto bytes = make_records({1, 2, 3});
  bytes.resize(2 * 3073 + 100);  // 6,246 bytes: two whole records and 100 bytes of the third
  write_bytes(dir.file("cut.bin"), bytes);
  const std::string msg = error_of([&] { read_cifar10_file(dir.file("cut.bin")); });
  EXPECT_EQ(msg, dir.file("cut.bin") +
                     ": truncated: 6246 bytes is not a multiple of 3073 (record 2 is incomplete)");
}

TEST(CifarReader, LabelOutOfRangeNamesRecord) {
  TempDir dir;
  write_bytes(dir.file("bad.bin"), make_records({0, 12, 4}));
  const std::string msg = error_of([&] { read_cifar10_file(dir.file("bad.bin")); });
  EXPECT_EQ(msg, dir.file("bad.bin") + ": record 1: label 12 out of range 0..9");
}

TEST(CifarReader, MissingFileNamesPathAndReason) {
  TempDir dir;
  const std::string msg = error_of([&] { read_cifar10_file(dir.file("nope.bin")); });
  EXPECT_EQ(msg, dir.file("nope.bin") + ": cannot open: No such file or directory");
}

TEST(CifarReader, EmptyFileAndDirectoryAreErrors) {
  TempDir dir;
  write_bytes(dir.file("empty.bin"), {});
  EXPECT_EQ(error_of([&] { read_cifar10_file(dir.file("empty.bin")); }),
            dir.file("empty.bin") + ": empty file (no CIFAR-10 records)");
  fs::create_directories(dir.file("sub"));
  EXPECT_EQ(error_of([&] { read_cifar10_file(dir.file("sub")); }),
            dir.file("sub") + ": is a directory, not a CIFAR-10 file");
}

TEST(CifarReader, TrainSetConcatenatesTheFiveBatchesInOrder) {
  TempDir dir;
  for (int i = 1; i <= 5; ++i) {
    // batch i holds two records labelled i - 1 and i % 10
    write_bytes(dir.file("data_batch_" + std::to_string(i) + ".bin"),
                make_records({static_cast<uint8_t>(i - 1), static_cast<uint8_t>(i % 10)}));
  }
  write_bytes(dir.file("test_batch.bin"), make_records({7}));
  const ImageSet train = read_cifar10_train(dir.file(""));
  EXPECT_EQ(train.labels, (std::vector<uint8_t>{0, 1, 1, 2, 2, 3, 3, 4, 4, 5}));
  EXPECT_EQ(train.pixels.size(), 10u * 3072u);
  const ImageSet test = read_cifar10_test(dir.file(""));
  EXPECT_EQ(test.labels, (std::vector<uint8_t>{7}));
  EXPECT_FALSE(train.synthetic);  // no SYNTHETIC marker: real CIFAR-10
  EXPECT_FALSE(test.synthetic);
}

TEST(SyntheticDir, WritesTheFiveBatchesTestSetAndMarker) {
  TempDir dir;
  const std::string out = dir.file("data");
  write_synthetic_cifar10_dir(out, 12, 3, 2);
  // 12 images over five files as evenly as possible, the first ones larger: 3, 3, 2, 2, 2.
  const std::vector<uintmax_t> sizes = {3, 3, 2, 2, 2};
  for (int i = 1; i <= 5; ++i) {
    EXPECT_EQ(fs::file_size(out + "/data_batch_" + std::to_string(i) + ".bin"),
              sizes[static_cast<size_t>(i - 1)] * static_cast<uintmax_t>(kRecordBytes));
  }
  EXPECT_TRUE(is_synthetic_dir(out));
  std::ifstream marker(out + "/SYNTHETIC");
  std::string text;
  std::getline(marker, text);
  EXPECT_NE(text.find("not real CIFAR-10"), std::string::npos) << text;

  // The readers see synthetic images: the training set is synthetic_cifar10(12, seed), the
  // test set synthetic_cifar10(3, seed + 1).
  const ImageSet train = read_cifar10_train(out);
  const ImageSet test = read_cifar10_test(out);
  EXPECT_TRUE(train.synthetic);
  EXPECT_TRUE(test.synthetic);
  const ImageSet want_train = synthetic_cifar10(12, 2);
  const ImageSet want_test = synthetic_cifar10(3, 3);
  EXPECT_EQ(train.labels, want_train.labels);
  EXPECT_EQ(train.pixels, want_train.pixels);
  EXPECT_EQ(test.labels, want_test.labels);
  EXPECT_EQ(test.pixels, want_test.pixels);
}

TEST(SyntheticDir, RejectsFewerThanOneImagePerFile) {
  TempDir dir;
  EXPECT_THROW(write_synthetic_cifar10_dir(dir.file("a"), 4, 1, 0), DataError);
  EXPECT_THROW(write_synthetic_cifar10_dir(dir.file("b"), 5, 0, 0), DataError);
  EXPECT_FALSE(fs::exists(dir.file("a")));
}

TEST(CifarReader, MissingTrainBatchIsNamed) {
  TempDir dir;
  for (int i : {1, 2, 4, 5}) {
    write_bytes(dir.file("data_batch_" + std::to_string(i) + ".bin"), make_records({0}));
  }
  const std::string msg = error_of([&] { read_cifar10_train(dir.file("")); });
  EXPECT_EQ(msg.rfind(dir.file("data_batch_3.bin") + ": missing", 0), 0u) << msg;
  EXPECT_EQ(error_of([&] { read_cifar10_test(dir.file("")); })
                .rfind(dir.file("test_batch.bin") + ": missing", 0),
            0u);
}

TEST(CifarReader, CorruptBatchInTrainSetIsNamed) {
  TempDir dir;
  for (int i = 1; i <= 5; ++i) {
    write_bytes(dir.file("data_batch_" + std::to_string(i) + ".bin"),
                make_records({static_cast<uint8_t>(i == 4 ? 200 : 1)}));
  }
  EXPECT_EQ(error_of([&] { read_cifar10_train(dir.file("")); }),
            dir.file("data_batch_4.bin") + ": record 0: label 200 out of range 0..9");
}

TEST(SyntheticCifar, IsDeterministicAndMarked) {
  const ImageSet a = synthetic_cifar10(40, 5);
  const ImageSet b = synthetic_cifar10(40, 5);
  const ImageSet c = synthetic_cifar10(40, 6);
  EXPECT_TRUE(a.synthetic);
  EXPECT_EQ(a.size(), 40);
  EXPECT_EQ(a.pixels.size(), 40u * 3072u);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.pixels, c.pixels);
  // Image i depends only on (seed, i): a smaller set is a prefix of a larger one.
  const ImageSet longer = synthetic_cifar10(60, 5);
  EXPECT_TRUE(std::equal(a.pixels.begin(), a.pixels.end(), longer.pixels.begin()));
  EXPECT_TRUE(std::equal(a.labels.begin(), a.labels.end(), longer.labels.begin()));
}

TEST(SyntheticCifar, ClassesAreLearnable) {
  // Nearest class mean on held-out images: chance is 10 %; the tints alone separate 8 of the
  // 10 classes (classes c and c + 8 share a tint), so well over 50 % must come out.
  const ImageSet set = synthetic_cifar10(3000, 3);
  const int64_t train = 2500;
  std::vector<std::vector<double>> mean(kNumClasses, std::vector<double>(kPixelsPerImage, 0.0));
  std::vector<int> count(kNumClasses, 0);
  for (int64_t i = 0; i < train; ++i) {
    const int c = set.labels[static_cast<size_t>(i)];
    ASSERT_LT(c, kNumClasses);
    ++count[c];
    for (int p = 0; p < kPixelsPerImage; ++p) mean[c][p] += set.image(i)[p];
  }
  for (int c = 0; c < kNumClasses; ++c) {
    ASSERT_GT(count[c], 0) << "class " << c << " never drawn";
    for (auto& v : mean[c]) v /= count[c];
  }
  int correct = 0;
  for (int64_t i = train; i < set.size(); ++i) {
    int best = -1;
    double best_distance = 0;
    for (int c = 0; c < kNumClasses; ++c) {
      double d = 0;
      for (int p = 0; p < kPixelsPerImage; ++p) {
        const double diff = set.image(i)[p] - mean[c][p];
        d += diff * diff;
      }
      if (best < 0 || d < best_distance) {
        best = c;
        best_distance = d;
      }
    }
    correct += best == set.labels[static_cast<size_t>(i)];
  }
  EXPECT_GT(correct, (set.size() - train) / 2);
}

}  // namespace
}  // namespace trainsim::data
