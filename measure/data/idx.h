#pragma once
// IDX files, the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/): a
// big-endian header (magic 0x00000803 and three sizes for unsigned-byte images: count, rows,
// columns; 0x00000801 and one size for labels), then the bytes, row-major. Read gzip-compressed
// (as Debian's dataset-fashion-mnist ships them) or plain. Torch-free; zlib.

#include <cstdint>
#include <string>

#include "data/image_set.h"

namespace trainsim::data {

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
// Where Debian's dataset-fashion-mnist package puts the files (scripts/setup.sh installs it).
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// The images of `images_path` with the labels of `labels_path`, as a set of `format` (one
// channel; its side must be the files' rows and columns). Throws DataError naming the file for a
// missing or unreadable file, a corrupt gzip stream, a wrong magic, images of another size, a
// file shorter or longer than its header says, image and label counts that differ, an empty set
// and a label outside 0..9 (naming its record, counted from 0).
ImageSet read_idx_images(const std::string& images_path, const std::string& labels_path, const ImageFormat& format);

// A Fashion-MNIST folder: train-images-idx3-ubyte and train-labels-idx1-ubyte (60,000 images),
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (10,000), each plain or with ".gz" (the plain
// file wins when both exist). synthetic = is_synthetic_dir(dir) (cifar.h's marker file).
ImageSet read_fashion_mnist_train(const std::string& dir);
ImageSet read_fashion_mnist_test(const std::string& dir);

// Writes `set` (one channel) as an IDX image file and an IDX label file, gzip-compressed when
// `gzip`. Throws DataError for a set of several channels or a file that cannot be written. Tests
// generate their input with it.
void write_idx_images(const ImageSet& set, const std::string& images_path, const std::string& labels_path, bool gzip);

}  // namespace trainsim::data
