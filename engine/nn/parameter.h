// A trainable tensor with its gradient, named like PyTorch's nn.Sequential state_dict.
#pragma once

#include <string>
#include <vector>

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

  // The 16-bit copy of an fp32 master that autocast computed with, kept from step to step where
  // the backend asks for it (Backend::keepsWeightCopies): the optimizer's step writes it as it
  // writes the master (the same rounding a cast would do), so the next forward's cast is no
  // kernel at all. PyTorch re-casts every forward; the values are the same. A copy, once made,
  // is the master's rounding: the optimizer rewrites both or neither (a skipped step); whatever
  // else writes a master drops it (forgetWeightCopies), and a master replaced by another buffer
  // never matches `master`.
  struct WeightCopy {
    Tensor tensor;                 // F16 or BF16, the master's shape; undefined: none
    const void* master = nullptr;  // the master buffer it was made from (Tensor::id)
  };
  WeightCopy lowCopy;
};

// After anything but the optimizer wrote the masters (a checkpoint loaded, state moved in): the
// copies no longer follow them, and the next forward casts again.
inline void forgetWeightCopies(const std::vector<Parameter*>& params) {
  for (Parameter* p : params) p->lowCopy = {};
}

}  // namespace amp
