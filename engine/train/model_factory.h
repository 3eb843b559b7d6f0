// Builds the models a config names: the PyTorch AMP recipe's MLP, an MLP classifier, a small
// CNN, a residual network (resnet_builder.h). Layer order and indices match the PyTorch reference scripts, so parameter names match
// their state_dict keys.
#pragma once

#include <memory>

#include "engine/config/run_config.h"
#include "engine/nn/sequential.h"

namespace amp {

// sampleShape: per-sample input shape; outputs: classes or regression width.
std::unique_ptr<Sequential> buildModel(const ModelConfig& m, const Shape& sampleShape,
                                       std::int64_t outputs);

}  // namespace amp
