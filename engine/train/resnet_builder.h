// Residual networks for image classification (model.name = resnet): the CIFAR ResNets of He et
// al. (depth 6n+2: ResNet-20/32/44/56/110, 3 stages of n basic blocks, 16/32/64 channels) and the
// ImageNet layouts ResNet-18/34 (4 stages, 64/128/256/512 channels), width settable, with a 3x3
// stem for small images or the ImageNet stem (7x7/2 conv, 3x3/2 max-pool) for large ones. Layer
// names follow the PyTorch peer (../shared/peers/pytorch_resnet.py): stem.0 (conv), stem.1 (bn),
// layers.N (blocks, numbered across stages), pool, fc; its state_dict keys are ours.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/config/run_config.h"
#include "engine/nn/sequential.h"

namespace amp {

struct ResNetLayout {
  std::vector<int> blocksPerStage;  // {3, 3, 3} for ResNet-20, {2, 2, 2, 2} for ResNet-18
  std::int64_t baseWidth = 16;      // channels of stage 1; each later stage doubles them
  bool imagenetStem = false;
  std::string name;                 // "ResNet-20 (3 stages x 3 blocks, 16/32/64 channels, 3x3 stem)"
};

// The layout a config asks for on samples of `sample` (C, H, W); throws ConfigError naming the
// key for a depth that is neither 6n+2 nor 18/34.
ResNetLayout resnetLayout(const ModelConfig& m, const Shape& sample);

// The network: stem, blocks, global average pooling, a Linear to `classes`.
std::unique_ptr<Sequential> buildResNet(const ModelConfig& m, const Shape& sample,
                                        std::int64_t classes);

}  // namespace amp
