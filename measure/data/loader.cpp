#include "data/loader.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "data/splitmix64.h"

namespace trainsim::data {
namespace {

// normalized[c][v] = (v / 255 - mean[c]) / std[c]: ToTensor then Normalize, per channel and byte.
using NormalizeTable = std::array<std::array<float, 256>, 3>;

NormalizeTable normalize_table(const ImageFormat& format) {
  NormalizeTable t{};
  for (int c = 0; c < format.channels; ++c) {
    for (int v = 0; v < 256; ++v) t[c][v] = (static_cast<float>(v) / 255.0f - format.mean[c]) / format.std[c];
  }
  return t;
}

void augment_with(const NormalizeTable& table, const ImageFormat& format, const uint8_t* src, float* dst, int dy,
                  int dx, bool flip) {
  const int side = format.side;
  const int pad = format.crop_padding;
  if (dy < 0 || dy > 2 * pad || dx < 0 || dx > 2 * pad) {
    throw std::invalid_argument("augment_image: crop offset (" + std::to_string(dy) + ", " +
                                std::to_string(dx) + ") outside [0, " + std::to_string(2 * pad) + "]");
  }
  const int plane = side * side;
  for (int c = 0; c < format.channels; ++c) {
    const uint8_t* in = src + c * plane;
    float* out = dst + c * plane;
    const float zero = table[c][0];  // zero padding, normalised like a black pixel
    for (int y = 0; y < side; ++y) {
      // Output (y, x) = crop (y, flip ? side - 1 - x : x) = padded (y + dy, x' + dx)
      //              = source (y + dy - pad, x' + dx - pad), or 0 outside the source.
      const int sy = y + dy - pad;
      for (int x = 0; x < side; ++x) {
        const int sx = (flip ? side - 1 - x : x) + dx - pad;
        const bool inside = sy >= 0 && sy < side && sx >= 0 && sx < side;
        out[y * side + x] = inside ? table[c][in[sy * side + sx]] : zero;
      }
    }
  }
}

void normalize_with(const NormalizeTable& table, const ImageFormat& format, const uint8_t* src, float* dst) {
  const int64_t plane = static_cast<int64_t>(format.side) * format.side;
  for (int c = 0; c < format.channels; ++c) {
    for (int64_t i = 0; i < plane; ++i) dst[c * plane + i] = table[c][src[c * plane + i]];
  }
}

}  // namespace

void augment_image(const ImageFormat& format, const uint8_t* src, float* dst, int dy, int dx, bool flip) {
  augment_with(normalize_table(format), format, src, dst, dy, dx, flip);
}

void normalize_image(const ImageFormat& format, const uint8_t* src, float* dst) {
  normalize_with(normalize_table(format), format, src, dst);
}

// Concurrency: worker w builds batches w, w + W, w + 2W, ... of the current epoch. A worker may
// start batch k only while k < delivered + 2W (the prefetch window: at most 2W batches built or
// being built ahead of the consumer). Finished batches wait in `ready` until next() takes them in
// order. Every wait also wakes on `stop`, so start_epoch and the destructor never block on a full
// window: they set stop, wake everyone and join (a worker finishes at most the batch in hand).
struct DataLoader::Impl {
  const ImageSet& set;
  LoaderOptions options;
  bool pin = false;

  std::vector<int64_t> order;  // sample indices of the current epoch, samples_per_epoch() long
  int64_t epoch = 0;
  int64_t num_batches = 0;
  bool started = false;

  std::mutex mutex;
  std::condition_variable batch_ready;   // workers -> consumer
  std::condition_variable window_moved;  // consumer -> workers
  std::map<int64_t, Batch> ready;
  int64_t delivered = 0;  // batches handed out by next() this epoch
  bool stop = false;
  std::exception_ptr error;
  std::vector<std::thread> workers;

  const NormalizeTable table;

  Impl(const ImageSet& s, LoaderOptions o) : set(s), options(o), table(normalize_table(s.format)) {}

  int64_t samples() const {
    return options.limit > 0 ? std::min(options.limit, set.size()) : set.size();
  }

  // Seeded Fisher-Yates over all samples, then the first samples() of it.
  void make_order() {
    order.resize(static_cast<size_t>(set.size()));
    std::iota(order.begin(), order.end(), int64_t{0});
    if (options.shuffle) {
      uint64_t state = mix_seed(options.seed, static_cast<uint64_t>(epoch));
      for (int64_t i = set.size() - 1; i > 0; --i) {
        const auto j = static_cast<int64_t>(uniform_below(state, static_cast<uint64_t>(i + 1)));
        std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
      }
    }
    order.resize(static_cast<size_t>(samples()));
  }

  // Batch k of the current epoch. Its augmentation draws come from its own stream seeded by
  // (seed, epoch, k), so the result does not depend on which thread builds it.
  Batch build(int64_t k) const {
    const int64_t first = k * options.batch_size;
    const int64_t b = std::min(options.batch_size, samples() - first);
    auto float_options = torch::TensorOptions().dtype(torch::kFloat32);
    auto long_options = torch::TensorOptions().dtype(torch::kInt64);
    if (pin) {
      float_options = float_options.pinned_memory(true);
      long_options = long_options.pinned_memory(true);
    }
    Batch batch;
    batch.index = k;
    const ImageFormat& format = set.format;
    batch.images = torch::empty({b, format.channels, format.side, format.side}, float_options);
    batch.labels = torch::empty({b}, long_options);
    float* images = batch.images.data_ptr<float>();
    int64_t* labels = batch.labels.data_ptr<int64_t>();
    uint64_t state = mix_seed(mix_seed(options.seed, static_cast<uint64_t>(epoch)),
                              static_cast<uint64_t>(k));
    for (int64_t i = 0; i < b; ++i) {
      const int64_t sample = order[static_cast<size_t>(first + i)];
      float* dst = images + i * format.pixels();
      if (options.augment) {
        const auto crops = static_cast<uint64_t>(2 * format.crop_padding + 1);
        const int dy = static_cast<int>(uniform_below(state, crops));
        const int dx = static_cast<int>(uniform_below(state, crops));
        const bool flip = uniform_below(state, 2) == 1;  // p = 0.5
        augment_with(table, format, set.image(sample), dst, dy, dx, flip);
      } else {
        normalize_with(table, format, set.image(sample), dst);
      }
      labels[i] = set.labels[static_cast<size_t>(sample)];
    }
    return batch;
  }

  void worker_loop(int w) {
    const int64_t window = 2 * static_cast<int64_t>(options.workers);
    for (int64_t k = w; k < num_batches; k += options.workers) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        window_moved.wait(lock, [&] { return stop || k < delivered + window; });
        if (stop) return;
      }
      try {
        Batch batch = build(k);
        std::lock_guard<std::mutex> lock(mutex);
        ready.emplace(k, std::move(batch));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        batch_ready.notify_all();
        return;
      }
      batch_ready.notify_all();
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    window_moved.notify_all();
    batch_ready.notify_all();
    for (auto& t : workers) t.join();
    workers.clear();
  }

  void start(int64_t e) {
    stop_workers();
    epoch = e;
    make_order();
    num_batches = (samples() + options.batch_size - 1) / options.batch_size;  // ceil(n / b)
    ready.clear();
    delivered = 0;
    stop = false;
    error = nullptr;
    started = true;
    for (int w = 0; w < options.workers; ++w) workers.emplace_back([this, w] { worker_loop(w); });
  }

  std::optional<Batch> next() {
    if (!started) start(0);
    if (options.workers == 0) {
      if (delivered >= num_batches) return std::nullopt;
      return build(delivered++);
    }
    std::unique_lock<std::mutex> lock(mutex);
    if (delivered >= num_batches) return std::nullopt;
    const int64_t k = delivered;
    batch_ready.wait(lock, [&] { return error || ready.count(k) > 0; });
    if (error) std::rethrow_exception(error);
    auto node = ready.extract(k);
    ++delivered;
    lock.unlock();
    window_moved.notify_all();
    return std::move(node.mapped());
  }
};

DataLoader::DataLoader(const ImageSet& set, LoaderOptions options) {
  if (options.batch_size < 1) {
    throw std::invalid_argument("DataLoader: batch_size must be >= 1, got " +
                                std::to_string(options.batch_size));
  }
  if (options.workers < 0) {
    throw std::invalid_argument("DataLoader: workers must be >= 0, got " +
                                std::to_string(options.workers));
  }
  if (options.limit < 0) {
    throw std::invalid_argument("DataLoader: limit must be >= 0, got " +
                                std::to_string(options.limit));
  }
  impl_ = std::make_unique<Impl>(set, options);
  // Pinned memory needs a CUDA runtime; without one the option is ignored.
  impl_->pin = options.pin_memory && torch::cuda::is_available();
}

DataLoader::~DataLoader() { impl_->stop_workers(); }

void DataLoader::start_epoch(int64_t epoch) { impl_->start(epoch); }

std::optional<Batch> DataLoader::next() { return impl_->next(); }

int64_t DataLoader::batches_per_epoch() const {
  return (impl_->samples() + impl_->options.batch_size - 1) / impl_->options.batch_size;
}

int64_t DataLoader::samples_per_epoch() const { return impl_->samples(); }

}  // namespace trainsim::data
