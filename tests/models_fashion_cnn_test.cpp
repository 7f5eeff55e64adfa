// The LibTorch Fashion-MNIST CNN (models/fashion_cnn.h) against its description, and make_model
// (models/staged.h) for every model describe_model knows.
#include <gtest/gtest.h>

#include <stdexcept>

#include "models/describe.h"
#include "models/fashion_cnn.h"
#include "models/staged.h"

namespace trainsim::models {
namespace {

int64_t bytes_of(const torch::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

// Both heads: fashion-cnn's fc on the flattened map, fashion-cnn-gap's on its global average.
struct Variant {
  const char* name;
  bool pooled_head;
  int64_t parameters;
};
// conv1 288 + bn1 64 + conv2 18,432 + bn2 128 + fc 31,360 + 10 = 50,282; pooled: fc 640 + 10.
const Variant kVariants[] = {{kFashionCnn, false, 50282}, {kFashionCnnGap, true, 19562}};

class FashionCnnHeads : public ::testing::TestWithParam<Variant> {};

TEST_P(FashionCnnHeads, ParametersAndBuffersAreTheDescriptions) {
  FashionCnnImpl net(10, GetParam().pooled_head);
  const ModelProfile desc = describe_model(GetParam().name);
  int64_t count = 0;
  for (const auto& p : net.parameters()) count += p.numel();
  EXPECT_EQ(count, GetParam().parameters);
  EXPECT_EQ(desc.parameters, GetParam().parameters);

  std::vector<std::pair<std::string, int64_t>> described;
  int64_t buffer_bytes = 0;
  for (const auto& layer : desc.layers) {
    for (const auto& p : layer.params) described.emplace_back(p.name, p.bytes);
    buffer_bytes += layer.buffer_bytes;
  }
  const auto named = net.named_parameters();
  ASSERT_EQ(named.size(), described.size());
  for (size_t i = 0; i < named.size(); ++i) {
    EXPECT_EQ(named[i].key(), described[i].first);
    EXPECT_EQ(bytes_of(named[i].value()), described[i].second) << described[i].first;
  }
  int64_t buffers = 0;
  for (const auto& b : net.buffers()) buffers += bytes_of(b);
  EXPECT_EQ(buffers, buffer_bytes);
  EXPECT_EQ(desc.input_bytes_per_sample, 1 * 28 * 28 * 4);
  EXPECT_EQ(model_input(GetParam().name).channels, 1);
  EXPECT_EQ(model_input(GetParam().name).side, 28);
}

TEST_P(FashionCnnHeads, StageOutputsMatchDescribedShapesAndChainToForward) {
  torch::manual_seed(1);
  FashionCnnImpl net(10, GetParam().pooled_head);
  net.eval();
  torch::NoGradGuard no_grad;
  const ModelProfile desc = describe_model(GetParam().name);
  ASSERT_EQ(net.num_stages(), desc.layers.size());
  const auto input = torch::randn({3, 1, 28, 28});
  auto x = input;
  for (size_t i = 0; i < net.num_stages(); ++i) {
    EXPECT_EQ(net.stage_name(i), desc.layers[i].name);
    x = net.forward_stage(i, x);
    std::vector<int64_t> expected = {3};
    expected.insert(expected.end(), desc.layers[i].output_shape.begin(), desc.layers[i].output_shape.end());
    EXPECT_EQ(x.sizes().vec(), expected) << desc.layers[i].name;
  }
  EXPECT_TRUE(torch::equal(x, net.forward(input)));
  EXPECT_THROW(net.forward_stage(3, input), std::out_of_range);
}

INSTANTIATE_TEST_SUITE_P(BothHeads, FashionCnnHeads, ::testing::ValuesIn(kVariants),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return std::string(info.param.pooled_head ? "PooledHead" : "FlattenedHead");
                         });

// The pooled head is what the module computes: fc on the channel means of block2's output.
TEST(FashionCnnGap, HeadIsFcOnTheChannelMeans) {
  torch::manual_seed(2);
  FashionCnnImpl net(10, /*pooled_head=*/true);
  net.eval();
  torch::NoGradGuard no_grad;
  const auto features = torch::randn({2, 64, 7, 7});
  const auto means = features.mean({2, 3});
  EXPECT_TRUE(torch::allclose(net.forward_stage(2, features), torch::matmul(means, net.fc->weight.t()) + net.fc->bias));
}

TEST(MakeModel, EveryKnownModelRunsItsInput) {
  for (const auto& name : known_models()) {
    torch::manual_seed(0);
    const auto model = make_model(name);
    ASSERT_NE(model, nullptr) << name;
    model->module().eval();
    torch::NoGradGuard no_grad;
    const InputShape in = model_input(name);
    EXPECT_EQ(model->forward(torch::randn({2, in.channels, in.side, in.side})).sizes().vec(),
              (std::vector<int64_t>{2, 10}))
        << name;
    EXPECT_EQ(model->num_stages(), describe_model(name).layers.size()) << name;
  }
  EXPECT_THROW(make_model("resnet50"), std::invalid_argument);
  EXPECT_THROW(model_input("resnet50"), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::models
