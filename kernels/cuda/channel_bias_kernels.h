// Per-channel bias of convolutions: the add after cuDNN's forward (which has no bias for every
// algorithm) and the bias gradient. Raw device pointers, dtype codes as amp::DType (0 fp32,
// 1 fp16, 2 bf16) and the caller's stream; the caller checks cudaGetLastError(). y and dy are
// NCHW, or NHWC with nhwc (kernels/common/image_layout.h): the same sums in the same order.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"  // Stream

namespace amp::cuda {

// y (n, k, hw) in place: y = round(float(y) + float(bias[k])) to y's dtype. For a 16-bit y that
// already holds a rounded convolution this is a second rounding, as PyTorch's cuDNN path has.
void launchChannelBiasAdd(int yCode, void* y, int biasCode, const void* bias, std::int64_t n,
                          std::int64_t k, std::int64_t hw, bool nhwc, Stream s);

// db (k) = sum over n and hw of dy (n, k, hw), in a fixed order (fp32 per thread, then a double
// sum across the block: no atomics, so reruns agree bit for bit), rounded once to db's dtype.
void launchChannelBiasGrad(int dyCode, const void* dy, std::int64_t n, std::int64_t k,
                           std::int64_t hw, bool nhwc, int dbCode, void* db, Stream s);

}  // namespace amp::cuda
