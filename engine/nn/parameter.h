// A trainable tensor with its gradient, named like PyTorch's nn.Sequential state_dict.
#pragma once

#include <string>

#include "engine/core/tensor.h"

namespace amp {

struct Parameter {
  std::string name;  // "0.weight", "2.bias"
  Tensor value;      // fp32 (master), or fp16 in pure-fp16 mode
  Tensor grad;       // undefined until backward produces one (zero_grad sets it to None)
};

}  // namespace amp
