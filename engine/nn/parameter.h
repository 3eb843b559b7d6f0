// A trainable tensor with its gradient, named like PyTorch's nn.Sequential state_dict.
#pragma once

#include <string>

#include "engine/core/tensor.h"

namespace amp {

struct Parameter {
  std::string name;  // "0.weight", "2.bias"
  Tensor value;      // fp32 (master), or fp16 in pure-fp16 mode
  Tensor grad;       // undefined until backward produces one (zero_grad sets it to None)
  // An fp32 .grad of a 16-bit weight gradient whose rounding through this 16-bit dtype was left
  // to the step's first pass over the gradients (Backend::defersGradRounding): .grad then holds
  // the GEMM's fp32 result, and settleGrad (layer.h) rounds it before any other reader sees it.
  // F32: nothing pending.
  DType gradRoundThrough = DType::F32;
};

}  // namespace amp
