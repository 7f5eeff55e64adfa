// DDP gradient buckets (measure/runs/ddp_reducer.h): the assignment PyTorch's reducer settles on,
// checked by hand on small cases, against c10d's own compute_bucket_assignment_by_size, and on
// ResNet-18 CIFAR.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <tuple>
#include <vector>

#include "models/resnet.h"
#include "runs/ddp_reducer.h"

// From torch/csrc/distributed/c10d/reducer.hpp (same signature in LibTorch 1.13 and 2.x), declared
// here because that header includes distributed-autograd headers some LibTorch packages (Debian's)
// do not ship. The function itself is exported by libtorch_cpu.
namespace c10d {
class Logger;
TORCH_API std::tuple<std::vector<std::vector<size_t>>, std::vector<size_t>>
compute_bucket_assignment_by_size(const std::vector<at::Tensor>& tensors,
                                  const std::vector<size_t>& bucket_size,
                                  const std::vector<bool>& expect_sparse_gradient,
                                  const std::vector<int64_t>& tensor_indices,
                                  const c10::optional<std::weak_ptr<c10d::Logger>>& logger);
}  // namespace c10d

namespace trainsim::measure {
namespace {

using Buckets = std::vector<std::vector<size_t>>;

std::vector<int64_t> parameter_bytes(torch::nn::Module& module) {
  std::vector<int64_t> bytes;
  for (const auto& p : module.parameters()) {
    bytes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
  }
  return bytes;
}

int64_t bucket_size(const std::vector<int64_t>& bytes, const std::vector<size_t>& bucket) {
  int64_t sum = 0;
  for (size_t i : bucket) sum += bytes[i];
  return sum;
}

TEST(GradientBuckets, ReverseOrderFirstCapThenCap) {
  // Tensors 0..5 of 4, 4, 8, 2, 6, 10 bytes, taken in reverse: 5 (10), 4 (6), 3 (2), 2 (8), ...
  // first cap 12: 10 < 12, 10 + 6 = 16 >= 12 -> {5, 4};
  // cap 9: 2 < 9, 2 + 8 = 10 >= 9 -> {3, 2}; 4 < 9, 4 + 4 = 8 < 9 -> open {1, 0} closes at the end.
  const Buckets got = assign_gradient_buckets({4, 4, 8, 2, 6, 10}, 12, 9);
  EXPECT_EQ(got, (Buckets{{5, 4}, {3, 2}, {1, 0}}));
}

TEST(GradientBuckets, ReachingTheCapExactlyCloses) {
  // 4 + 4 = 8 >= 8 closes the first bucket; 8 >= 8 alone closes the second; 1 is left over.
  EXPECT_EQ(assign_gradient_buckets({1, 8, 4, 4}, 8, 8), (Buckets{{3, 2}, {1}, {0}}));
}

TEST(GradientBuckets, OneTensorLargerThanTheCapIsItsOwnBucket) {
  EXPECT_EQ(assign_gradient_buckets({100}, 1, 1), (Buckets{{0}}));
  EXPECT_EQ(assign_gradient_buckets({}, 1, 1), Buckets{});
}

TEST(GradientBuckets, ResNet18CifarHasThreeBuckets) {
  models::ResNet18 net("resnet18-cifar");
  const auto bytes = parameter_bytes(*net);
  ASSERT_EQ(bytes.size(), 62u);
  const Buckets got = assign_gradient_buckets(bytes, kFirstBucketBytes, kBucketBytes);
  // Reverse registration order, fp32 (4 bytes per element):
  // bucket 0 (cap 1 MiB = 1,048,576): linear.bias 40, linear.weight 20,480, layer4.1.bn2.bias
  //   2,048, .weight 2,048 (24,616 so far), layer4.1.conv2.weight 512*512*9*4 = 9,437,184
  //   -> 9,461,800 >= 1 MiB: 5 tensors.
  // bucket 1 (cap 25 MiB = 26,214,400): layer4.1.bn1 (2 x 2,048) + conv1 9,437,184 = 9,441,280;
  //   layer4.0: shortcut bn 2 x 2,048 + shortcut conv 512*256*4 = 524,288, bn2 2 x 2,048,
  //   conv2 9,437,184, bn1 2 x 2,048, conv1 512*256*9*4 = 4,718,592 (9 tensors, 14,692,352)
  //   -> 24,133,632; layer3.1.bn2 2 x 1,024 + conv2 256*256*9*4 = 2,359,296 -> 26,494,976
  //   >= 25 MiB: 3 + 9 + 3 = 15 tensors.
  // bucket 2: the other 62 - 5 - 15 = 42 tensors, 44,695,848 - 9,461,800 - 26,494,976 =
  //   8,739,072 bytes (< 25 MiB, closed at the end).
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].size(), 5u);
  EXPECT_EQ(got[1].size(), 15u);
  EXPECT_EQ(got[2].size(), 42u);
  EXPECT_EQ(bucket_size(bytes, got[0]), 9461800);
  EXPECT_EQ(bucket_size(bytes, got[1]), 26494976);
  EXPECT_EQ(bucket_size(bytes, got[2]), 8739072);
  EXPECT_EQ(std::accumulate(bytes.begin(), bytes.end(), int64_t{0}), 44695848);
}

TEST(GradientBuckets, MatchesC10dRebuiltAssignment) {
  // PyTorch's Reducer::rebuild_buckets calls compute_bucket_assignment_by_size with the
  // parameters in gradient-ready order and caps {first bucket, bucket_cap}; here that order is
  // the reverse registration order.
  models::ResNet18 net("resnet18-cifar");
  const auto params = net->parameters();
  std::vector<at::Tensor> ready_order(params.rbegin(), params.rend());
  std::vector<int64_t> ready_indices(params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    ready_indices[k] = static_cast<int64_t>(params.size() - 1 - k);
  }
  const auto c10d_result = c10d::compute_bucket_assignment_by_size(
      ready_order, {static_cast<size_t>(kFirstBucketBytes), static_cast<size_t>(kBucketBytes)},
      /*expect_sparse_gradient=*/{}, ready_indices, /*logger=*/{});
  const auto& c10d_buckets = std::get<0>(c10d_result);
  const Buckets ours = assign_gradient_buckets(parameter_bytes(*net), kFirstBucketBytes,
                                               kBucketBytes);
  ASSERT_EQ(ours.size(), c10d_buckets.size());
  for (size_t b = 0; b < ours.size(); ++b) {
    EXPECT_EQ(ours[b], c10d_buckets[b]) << "bucket " << b;
  }
}

}  // namespace
}  // namespace trainsim::measure
