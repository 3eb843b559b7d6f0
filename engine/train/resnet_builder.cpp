#include "engine/train/resnet_builder.h"

#include "engine/config/config_schema.h"
#include "engine/nn/activation_layer.h"
#include "engine/nn/batch_norm.h"
#include "engine/nn/conv2d.h"
#include "engine/nn/global_avg_pool.h"
#include "engine/nn/linear.h"
#include "engine/nn/max_pool2d.h"
#include "engine/nn/residual_block.h"

namespace amp {

namespace {
// Inputs up to this size keep the 3x3 stem in auto mode: the ImageNet stem would shrink a 32x32
// image to 8x8 before the first block (why the CIFAR variants exist).
constexpr std::int64_t kLargestCifarStemInput = 64;
}  // namespace

ResNetLayout resnetLayout(const ModelConfig& m, const Shape& sample) {
  if (sample.size() != 3)
    throw ConfigError("model.name: resnet needs image data (C,H,W); this data set's samples are " +
                      shapeString(sample));
  ResNetLayout l;
  std::string channels;
  if (m.depth == 18 || m.depth == 34) {
    l.blocksPerStage = m.depth == 18 ? std::vector<int>{2, 2, 2, 2} : std::vector<int>{3, 4, 6, 3};
    l.baseWidth = m.baseWidth > 0 ? m.baseWidth : 64;
    const bool large = sample[1] > kLargestCifarStemInput || sample[2] > kLargestCifarStemInput;
    l.imagenetStem = m.stem == "imagenet" || (m.stem == "auto" && large);
  } else if (m.depth >= 8 && (m.depth - 2) % 6 == 0 && m.depth <= 1202) {
    const int n = (m.depth - 2) / 6;
    l.blocksPerStage = {n, n, n};
    l.baseWidth = m.baseWidth > 0 ? m.baseWidth : 16;
    l.imagenetStem = m.stem == "imagenet";
  } else {
    throw ConfigError("model.depth: expected 6n+2 from 8 to 1202 (20, 32, 44, 56, 110: the CIFAR "
                      "ResNets) or 18 or 34 (the ImageNet layouts), got " + std::to_string(m.depth));
  }
  for (std::size_t s = 0; s < l.blocksPerStage.size(); ++s) {
    if (s) channels += '/';
    channels += std::to_string(l.baseWidth << s);
  }
  const std::size_t stages = l.blocksPerStage.size();
  l.name = "ResNet-" + std::to_string(m.depth) + " (" + std::to_string(stages) + " stages x " +
           (m.depth == 34 ? std::string("3/4/6/3") : std::to_string(l.blocksPerStage[0])) +
           " blocks, " + channels + " channels, " +
           (l.imagenetStem ? "7x7/2 stem + max-pool" : "3x3 stem") + ")";
  return l;
}

std::unique_ptr<Sequential> buildResNet(const ModelConfig& m, const Shape& sample,
                                        std::int64_t classes) {
  const ResNetLayout l = resnetLayout(m, sample);
  auto net = std::make_unique<Sequential>();
  std::int64_t c = l.baseWidth;
  if (l.imagenetStem) {
    net->add(std::make_unique<Conv2d>(sample[0], c, 7, 3, 2, /*bias=*/false), "stem.0");
    net->add(std::make_unique<BatchNorm>(c), "stem.1");
    net->add(std::make_unique<ActivationLayer>(Activation::ReLU), "stem.2");
    net->add(std::make_unique<MaxPool2d>(3, 2, 1), "stem.3");
  } else {
    net->add(std::make_unique<Conv2d>(sample[0], c, 3, 1, 1, /*bias=*/false), "stem.0");
    net->add(std::make_unique<BatchNorm>(c), "stem.1");
    net->add(std::make_unique<ActivationLayer>(Activation::ReLU), "stem.2");
  }
  int block = 0;
  for (std::size_t s = 0; s < l.blocksPerStage.size(); ++s) {
    const std::int64_t out = l.baseWidth << s;
    for (int i = 0; i < l.blocksPerStage[s]; ++i) {
      const std::int64_t stride = (s > 0 && i == 0) ? 2 : 1;
      net->add(std::make_unique<ResidualBlock>(c, out, stride), "layers." + std::to_string(block++));
      c = out;
    }
  }
  net->add(std::make_unique<GlobalAvgPool>(), "pool");
  net->add(std::make_unique<Linear>(c, classes), "fc");
  return net;
}

}  // namespace amp
