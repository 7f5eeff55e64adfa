// The IDX reader (measure/data/idx.h): generated files, plain and gzip, against bad files, and
// the real Fashion-MNIST files of Debian's dataset-fashion-mnist (installed by scripts/setup.sh).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/cifar.h"
#include "data/idx.h"
#include "remove_tree.h"

namespace trainsim::data {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("trainsim-idx-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() { trainsim::measure::remove_tree(path_.string()); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

// n images of 28x28: image i's pixel p is (i * 31 + p) % 256, label i % 10.
ImageSet generated(int64_t n) {
  ImageSet set;
  set.format = kFashionMnistFormat;
  for (int64_t i = 0; i < n; ++i) {
    set.labels.push_back(static_cast<uint8_t>(i % 10));
    for (int64_t p = 0; p < set.format.pixels(); ++p) set.pixels.push_back(static_cast<uint8_t>((i * 31 + p) % 256));
  }
  return set;
}

std::vector<uint8_t> read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_raw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The DataError's message, or "" if none was thrown.
std::string error_of(const std::string& images, const std::string& labels) {
  try {
    read_idx_images(images, labels, kFashionMnistFormat);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(Idx, PlainAndGzipRoundTrip) {
  TempDir dir;
  const ImageSet set = generated(7);
  for (bool gzip : {false, true}) {
    const std::string images = dir.file(gzip ? "i.gz" : "i"), labels = dir.file(gzip ? "l.gz" : "l");
    write_idx_images(set, images, labels, gzip);
    const ImageSet back = read_idx_images(images, labels, kFashionMnistFormat);
    EXPECT_EQ(back.labels, set.labels);
    EXPECT_EQ(back.pixels, set.pixels);
    EXPECT_EQ(back.format.side, 28);
    EXPECT_EQ(back.format.channels, 1);
    EXPECT_EQ(back.image(3)[5], static_cast<uint8_t>(3 * 31 + 5));
  }
  // The header is big-endian: magic 0x00000803, count 7, 28, 28.
  const auto raw = read_raw(dir.file("i"));
  ASSERT_GE(raw.size(), 16u);
  EXPECT_EQ(std::vector<uint8_t>(raw.begin(), raw.begin() + 16),
            (std::vector<uint8_t>{0, 0, 8, 3, 0, 0, 0, 7, 0, 0, 0, 28, 0, 0, 0, 28}));
  EXPECT_EQ(raw.size(), 16u + 7u * 784u);
  EXPECT_NE(read_raw(dir.file("i.gz")).size(), raw.size());  // really compressed
}

TEST(Idx, BadFilesAreOneErrorNamingTheFile) {
  TempDir dir;
  write_idx_images(generated(5), dir.file("i"), dir.file("l"), false);
  const auto images = read_raw(dir.file("i"));
  const auto labels = read_raw(dir.file("l"));

  // Truncated: one pixel short.
  write_raw(dir.file("short"), std::vector<uint8_t>(images.begin(), images.end() - 1));
  EXPECT_EQ(error_of(dir.file("short"), dir.file("l")),
            dir.file("short") + ": truncated: the header says 5 images (3936 bytes), the file holds 3935 (images 4 on "
                                "are missing)");
  // Trailing bytes.
  auto longer = images;
  longer.push_back(0);
  write_raw(dir.file("long"), longer);
  EXPECT_EQ(error_of(dir.file("long"), dir.file("l")),
            dir.file("long") + ": 1 bytes after the 5 images its header declares");
  // Wrong magic: the label file given as images, and the other way round.
  EXPECT_EQ(error_of(dir.file("l"), dir.file("l")),
            dir.file("l") + ": wrong magic 0x00000801 (an IDX image file starts with 0x00000803)");
  EXPECT_EQ(error_of(dir.file("i"), dir.file("i")),
            dir.file("i") + ": wrong magic 0x00000803 (an IDX label file starts with 0x00000801)");
  // Counts that differ.
  write_idx_images(generated(4), dir.file("i4"), dir.file("l4"), false);
  EXPECT_EQ(error_of(dir.file("i"), dir.file("l4")),
            dir.file("l4") + ": 4 labels, but " + dir.file("i") + " holds 5 images");
  // A label out of range names its record.
  auto bad_label = labels;
  bad_label[8 + 3] = 12;
  write_raw(dir.file("badlabel"), bad_label);
  EXPECT_EQ(error_of(dir.file("i"), dir.file("badlabel")),
            dir.file("badlabel") + ": record 3: label 12 out of range 0..9");
  // Images of another size.
  auto wide = images;
  wide[15] = 32;
  write_raw(dir.file("wide"), wide);
  EXPECT_EQ(error_of(dir.file("wide"), dir.file("l")), dir.file("wide") + ": images are 28x32, fashion-mnist's are 28x28");
  // Too short for a magic, empty, missing, a folder, a corrupt gzip stream.
  write_raw(dir.file("tiny"), {0, 0});
  EXPECT_EQ(error_of(dir.file("tiny"), dir.file("l")),
            dir.file("tiny") + ": truncated: 2 bytes, not even an IDX magic number");
  write_raw(dir.file("header-only"), {0, 0, 8, 3, 0, 0});
  EXPECT_EQ(error_of(dir.file("header-only"), dir.file("l")),
            dir.file("header-only") + ": truncated: 6 bytes, the header alone is 16");
  write_raw(dir.file("none"), {0, 0, 8, 3, 0, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0, 28});
  EXPECT_EQ(error_of(dir.file("none"), dir.file("l")), dir.file("none") + ": no images");
  EXPECT_NE(error_of(dir.file("missing"), dir.file("l")).find(dir.file("missing") + ": cannot open"), std::string::npos);
  EXPECT_EQ(error_of(dir.path(), dir.file("l")), dir.path() + ": is a directory, not an IDX file");
  write_idx_images(generated(5), dir.file("g.gz"), dir.file("gl.gz"), true);
  auto gz = read_raw(dir.file("g.gz"));
  gz.resize(gz.size() / 2);  // a gzip stream cut in half
  write_raw(dir.file("cut.gz"), gz);
  EXPECT_NE(error_of(dir.file("cut.gz"), dir.file("l")).find(dir.file("cut.gz") + ": "), std::string::npos);
}

TEST(Idx, FolderReadsPlainOrGzipAndSaysWhatIsMissing) {
  TempDir dir;
  write_idx_images(generated(6), dir.file("train-images-idx3-ubyte.gz"), dir.file("train-labels-idx1-ubyte.gz"), true);
  write_idx_images(generated(2), dir.file("t10k-images-idx3-ubyte"), dir.file("t10k-labels-idx1-ubyte"), false);
  const ImageSet train = read_fashion_mnist_train(dir.path());
  EXPECT_EQ(train.size(), 6);
  EXPECT_FALSE(train.synthetic);
  EXPECT_EQ(read_fashion_mnist_test(dir.path()).size(), 2);
  std::ofstream(dir.file(kSyntheticMarker)) << "generated\n";
  EXPECT_TRUE(read_fashion_mnist_train(dir.path()).synthetic);
  fs::remove(dir.file("t10k-labels-idx1-ubyte"));
  try {
    read_fashion_mnist_test(dir.path());
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir.file("t10k-labels-idx1-ubyte") + "[.gz]: missing", 0), 0u) << e.what();
  }
}

TEST(Idx, CifarImagesAreNotWrittenAsIdx) {
  TempDir dir;
  EXPECT_THROW(write_idx_images(synthetic_cifar10(2, 0), dir.file("i"), dir.file("l"), false), DataError);
  ImageSet grey = generated(1);
  EXPECT_THROW(write_cifar10_file(grey, dir.file("c.bin")), DataError);
}

// The real files: 60,000 + 10,000 images, 6,000 / 1,000 per class, and the normalisation the
// format uses is the training set's own mean and standard deviation.
TEST(Idx, DebiansFashionMnistIsReadWithItsOwnStatistics) {
  if (!fs::exists(kFashionMnistDir)) GTEST_SKIP() << kFashionMnistDir << " missing (dataset-fashion-mnist)";
  const ImageSet train = read_fashion_mnist_train(kFashionMnistDir);
  const ImageSet test = read_fashion_mnist_test(kFashionMnistDir);
  ASSERT_EQ(train.size(), 60000);
  ASSERT_EQ(test.size(), 10000);
  EXPECT_FALSE(train.synthetic);
  std::vector<int> per_class(10, 0);
  for (uint8_t l : train.labels) ++per_class[l];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], 6000) << c;
  double sum = 0, sum_sq = 0;
  for (uint8_t p : train.pixels) {
    const double v = p / 255.0;
    sum += v;
    sum_sq += v * v;
  }
  const double n = static_cast<double>(train.pixels.size());
  const double mean = sum / n;
  const double std = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, kFashionMnistFormat.mean[0], 1e-4);
  EXPECT_NEAR(std, kFashionMnistFormat.std[0], 1e-4);
}

}  // namespace
}  // namespace trainsim::data
