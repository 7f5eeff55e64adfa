// The LibTorch ResNet-18 (models/resnet.h) against its analytic description (models/describe.h).
#include <gtest/gtest.h>

#include <stdexcept>

#include "models/describe.h"
#include "models/resnet.h"

namespace trainsim::models {
namespace {

int64_t bytes_of(const torch::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

int64_t numel_sum(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

// Full-model names of stage i's parameters: a block's own names are relative to the block.
std::vector<std::pair<std::string, int64_t>> stage_params(ResNet18Impl& net, size_t i) {
  const bool block = net.stage_name(i) != "stem" && net.stage_name(i) != "head";
  const std::string prefix = block ? net.stage_name(i) + "." : "";
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& p : net.stage_module(i).named_parameters()) {
    out.emplace_back(prefix + p.key(), bytes_of(p.value()));
  }
  return out;
}

class ResnetVariant : public ::testing::TestWithParam<std::string> {};

TEST(ResNet18, CifarParameterCount) {
  ResNet18 net(kResnet18Cifar);
  // 11,173,962 parameters in 62 tensors (pytorch-cifar; see models_describe_test for the sums).
  EXPECT_EQ(numel_sum(net->parameters()), 11173962);
  EXPECT_EQ(net->parameters().size(), 62u);
}

TEST(ResNet18, ImagenetParameterCount) {
  ResNet18 net(kResnet18Imagenet);
  // torchvision resnet18(num_classes=10): the 7x7 stem adds 64*3*(49-9) = 7,680 -> 11,181,642.
  EXPECT_EQ(numel_sum(net->parameters()), 11181642);
  EXPECT_EQ(net->parameters().size(), 62u);
}

TEST(ResNet18, UnknownVariantThrows) {
  EXPECT_THROW(ResNet18("resnet34"), std::invalid_argument);
}

TEST_P(ResnetVariant, StagesMatchTheDescription) {
  ResNet18 net(GetParam());
  const ModelProfile desc = describe_model(GetParam());
  ASSERT_EQ(net->num_stages(), desc.layers.size());

  std::vector<std::pair<std::string, int64_t>> chained;
  int64_t stage_buffer_bytes = 0;
  for (size_t i = 0; i < net->num_stages(); ++i) {
    const LayerProfile& layer = desc.layers[i];
    EXPECT_EQ(net->stage_name(i), layer.name);
    const auto params = stage_params(*net, i);
    ASSERT_EQ(params.size(), layer.params.size()) << layer.name;
    for (size_t p = 0; p < params.size(); ++p) {
      EXPECT_EQ(params[p].first, layer.params[p].name) << layer.name;
      EXPECT_EQ(params[p].second, layer.params[p].bytes) << layer.params[p].name;
    }
    chained.insert(chained.end(), params.begin(), params.end());

    int64_t buffers = 0;
    for (const auto& b : net->stage_module(i).buffers()) buffers += bytes_of(b);
    EXPECT_EQ(buffers, layer.buffer_bytes) << layer.name;
    stage_buffer_bytes += buffers;
  }

  // The stages partition the model: same names, same order, same bytes.
  const auto all = net->named_parameters();
  ASSERT_EQ(chained.size(), all.size());
  int64_t model_bytes = 0;
  for (size_t p = 0; p < all.size(); ++p) {
    EXPECT_EQ(chained[p].first, all[p].key());
    model_bytes += bytes_of(all[p].value());
  }
  EXPECT_EQ(desc.param_bytes(), model_bytes);
  EXPECT_EQ(desc.parameters * 4, model_bytes);

  int64_t model_buffer_bytes = 0;
  for (const auto& b : net->buffers()) model_buffer_bytes += bytes_of(b);
  EXPECT_EQ(stage_buffer_bytes, model_buffer_bytes);
}

TEST_P(ResnetVariant, StageOutputsMatchDescribedShapesAndChainToForward) {
  torch::manual_seed(1);
  ResNet18 net(GetParam());
  net->eval();
  torch::NoGradGuard no_grad;
  const ModelProfile desc = describe_model(GetParam());
  const auto input = torch::randn({2, 3, 32, 32});

  auto x = input;
  for (size_t i = 0; i < net->num_stages(); ++i) {
    x = net->forward_stage(i, x);
    std::vector<int64_t> expected = {2};
    expected.insert(expected.end(), desc.layers[i].output_shape.begin(),
                    desc.layers[i].output_shape.end());
    EXPECT_EQ(x.sizes().vec(), expected) << desc.layers[i].name;
  }
  EXPECT_TRUE(torch::equal(x, net->forward(input)));
}

// DataParallel builds its replicas with clone(); the copy must run its own (copied) weights.
TEST_P(ResnetVariant, CloneRunsItsOwnCopyOfTheWeights) {
  torch::manual_seed(2);
  ResNet18 net(GetParam());
  net->eval();
  torch::NoGradGuard no_grad;
  auto copy = std::dynamic_pointer_cast<ResNet18Impl>(net->clone());
  ASSERT_TRUE(copy);
  copy->eval();
  const auto input = torch::randn({2, 3, 32, 32});
  EXPECT_TRUE(torch::allclose(copy->forward(input), net->forward(input)));

  // The copy's stage modules are the copy's registered modules, not the original's.
  const auto original_params = net->named_parameters();
  const auto copy_params = copy->named_parameters();
  for (size_t i = 0; i < copy->num_stages(); ++i) {
    const std::string prefix =
        (i == 0 || i + 1 == copy->num_stages()) ? "" : copy->stage_name(i) + ".";
    for (const auto& p : copy->stage_module(i).named_parameters()) {
      EXPECT_TRUE(p.value().is_same(copy_params[prefix + p.key()])) << prefix + p.key();
      EXPECT_FALSE(p.value().is_same(original_params[prefix + p.key()])) << prefix + p.key();
    }
  }

  // Zeroing the copy's layer4.1 conv2 changes the copy's output only.
  const auto before = net->forward(input);
  copy_params["layer4.1.conv2.weight"].zero_();
  EXPECT_TRUE(torch::equal(net->forward(input), before));
  EXPECT_FALSE(torch::allclose(copy->forward(input), before));
}

INSTANTIATE_TEST_SUITE_P(Layouts, ResnetVariant,
                         ::testing::Values(std::string(kResnet18Cifar),
                                           std::string(kResnet18Imagenet)));

}  // namespace
}  // namespace trainsim::models
