#include "data/idx.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <type_traits>
#include <vector>

#include "data/cifar.h"
#include "format/atomic_write.h"

namespace trainsim::data {
namespace {

namespace fs = std::filesystem;

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// The whole file, decompressed if it is gzip (zlib reads a plain file as it is).
std::vector<uint8_t> read_bytes(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw DataError(path + ": is a directory, not an IDX file");
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) throw DataError(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  constexpr unsigned kChunk = 1u << 20;
  for (;;) {
    const size_t at = bytes.size();
    bytes.resize(at + kChunk);
    const int n = gzread(file.get(), bytes.data() + at, kChunk);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      throw DataError(path + ": cannot read: " + (code == Z_ERRNO ? std::strerror(errno) : message));
    }
    bytes.resize(at + static_cast<size_t>(n));
    if (n == 0) break;
  }
  return bytes;
}

uint32_t big_endian(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | uint32_t{b[at + 3]};
}

std::string hex(uint32_t v) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

// Checks the magic and the header's length; returns the sizes (dimensions) it declares.
std::vector<uint32_t> header(const std::string& path, const std::vector<uint8_t>& bytes, uint32_t magic,
                             const char* what) {
  const size_t dims = magic & 0xff;
  const size_t header_bytes = 4 * (1 + dims);
  if (bytes.size() < 4) {
    throw DataError(path + ": truncated: " + std::to_string(bytes.size()) + " bytes, not even an IDX magic number");
  }
  if (big_endian(bytes, 0) != magic) {
    throw DataError(path + ": wrong magic " + hex(big_endian(bytes, 0)) + " (an IDX " + what + " file starts with " +
                    hex(magic) + ")");
  }
  if (bytes.size() < header_bytes) {
    throw DataError(path + ": truncated: " + std::to_string(bytes.size()) + " bytes, the header alone is " +
                    std::to_string(header_bytes));
  }
  std::vector<uint32_t> sizes;
  for (size_t d = 0; d < dims; ++d) sizes.push_back(big_endian(bytes, 4 * (1 + d)));
  return sizes;
}

void check_length(const std::string& path, const std::vector<uint8_t>& bytes, size_t header_bytes, uint64_t count,
                  uint64_t record_bytes, const char* records) {
  const uint64_t expected = header_bytes + count * record_bytes;
  if (bytes.size() < expected) {
    throw DataError(path + ": truncated: the header says " + std::to_string(count) + " " + records + " (" +
                    std::to_string(expected) + " bytes), the file holds " + std::to_string(bytes.size()) + " (" +
                    records + " " + std::to_string((bytes.size() - header_bytes) / record_bytes) + " on are missing)");
  }
  if (bytes.size() > expected) {
    throw DataError(path + ": " + std::to_string(bytes.size() - expected) + " bytes after the " +
                    std::to_string(count) + " " + records + " its header declares");
  }
}

// `stem` plain if it exists, else `stem`.gz; the error names both.
std::string find_file(const std::string& dir, const std::string& stem) {
  std::error_code ec;
  const fs::path plain = fs::path(dir) / stem;
  if (fs::exists(plain, ec)) return plain.string();
  const fs::path gz = fs::path(dir) / (stem + ".gz");
  if (fs::exists(gz, ec)) return gz.string();
  throw DataError(plain.string() + "[.gz]: missing (a Fashion-MNIST folder holds train-images-idx3-ubyte, "
                  "train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, plain or .gz)");
}

ImageSet read_split(const std::string& dir, const std::string& prefix) {
  ImageSet set = read_idx_images(find_file(dir, prefix + "-images-idx3-ubyte"),
                                 find_file(dir, prefix + "-labels-idx1-ubyte"), kFashionMnistFormat);
  set.synthetic = is_synthetic_dir(dir);
  return set;
}

void put_big_endian(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

std::string gzip_bytes(const std::string& path, const std::string& plain) {
  z_stream z{};
  constexpr int kGzipWindowBits = 15 + 16;  // 16: a gzip header and trailer instead of zlib's
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw DataError(path + ": cannot start gzip compression");
  }
  std::string out(deflateBound(&z, plain.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw DataError(path + ": gzip compression failed");
  return out;
}

void write_bytes(const std::string& path, const std::string& plain, bool gzip) {
  try {
    write_file_atomic(path, gzip ? gzip_bytes(path, plain) : plain);
  } catch (const WriteError& e) {
    throw DataError(e.what());
  }
}

}  // namespace

ImageSet read_idx_images(const std::string& images_path, const std::string& labels_path, const ImageFormat& format) {
  if (format.channels != 1) {
    throw DataError(images_path + ": IDX images have one channel, " + format.name + " has " +
                    std::to_string(format.channels));
  }
  const std::vector<uint8_t> images = read_bytes(images_path);
  const std::vector<uint32_t> dims = header(images_path, images, kIdxImagesMagic, "image");
  const uint64_t count = dims[0];
  if (dims[1] != static_cast<uint32_t>(format.side) || dims[2] != static_cast<uint32_t>(format.side)) {
    throw DataError(images_path + ": images are " + std::to_string(dims[1]) + "x" + std::to_string(dims[2]) + ", " +
                    format.name + "'s are " + std::to_string(format.side) + "x" + std::to_string(format.side));
  }
  const auto pixels = static_cast<uint64_t>(format.pixels());
  check_length(images_path, images, 16, count, pixels, "images");
  if (count == 0) throw DataError(images_path + ": no images");

  const std::vector<uint8_t> labels = read_bytes(labels_path);
  const uint64_t label_count = header(labels_path, labels, kIdxLabelsMagic, "label")[0];
  check_length(labels_path, labels, 8, label_count, 1, "labels");
  if (label_count != count) {
    throw DataError(labels_path + ": " + std::to_string(label_count) + " labels, but " + images_path + " holds " +
                    std::to_string(count) + " images");
  }

  ImageSet set;
  set.format = format;
  set.labels.assign(labels.begin() + 8, labels.end());
  for (size_t r = 0; r < set.labels.size(); ++r) {
    if (set.labels[r] >= kNumClasses) {
      throw DataError(labels_path + ": record " + std::to_string(r) + ": label " + std::to_string(set.labels[r]) +
                      " out of range 0.." + std::to_string(kNumClasses - 1));
    }
  }
  set.pixels.assign(images.begin() + 16, images.end());
  return set;
}

ImageSet read_fashion_mnist_train(const std::string& dir) { return read_split(dir, "train"); }
ImageSet read_fashion_mnist_test(const std::string& dir) { return read_split(dir, "t10k"); }

void write_idx_images(const ImageSet& set, const std::string& images_path, const std::string& labels_path, bool gzip) {
  if (set.format.channels != 1) {
    throw DataError(images_path + ": cannot write " + std::to_string(set.format.channels) +
                    "-channel images as IDX (one channel)");
  }
  std::string images;
  put_big_endian(images, kIdxImagesMagic);
  put_big_endian(images, static_cast<uint32_t>(set.size()));
  put_big_endian(images, static_cast<uint32_t>(set.format.side));
  put_big_endian(images, static_cast<uint32_t>(set.format.side));
  images.append(set.pixels.begin(), set.pixels.end());
  std::string labels;
  put_big_endian(labels, kIdxLabelsMagic);
  put_big_endian(labels, static_cast<uint32_t>(set.size()));
  labels.append(set.labels.begin(), set.labels.end());
  write_bytes(images_path, images, gzip);
  write_bytes(labels_path, labels, gzip);
}

}  // namespace trainsim::data
