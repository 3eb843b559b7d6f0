// Geometry of the multi-tensor launches: grid row y walks tensor y of the table with a
// grid-stride loop along x, so one launch covers every parameter (PyTorch's multi_tensor_apply
// packs chunks instead; a row per tensor is simpler and our models have a few dozen tensors).
#pragma once

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

inline dim3 multiTensorGrid(int count, std::int64_t maxN) {
  return dim3(gridFor(maxN, 1024), static_cast<unsigned>(count));
}

#define AMP_FOR_EACH_ELEMENT(i, n)                                                          \
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (n);      \
       i += std::int64_t(gridDim.x) * blockDim.x)

}  // namespace amp::cuda
