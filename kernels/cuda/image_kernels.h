// Launchers for channels-last images on the GPU (engine/core/tensor.h, MemoryFormat), in the
// style of cuda_kernels.h: raw device pointers, dtype codes as amp::DType, the caller's stream;
// no CUDA headers needed to call them. The index math is kernels/common/image_layout.h, shared
// with the CPU. The other image ops take their layout as a parameter of their own launchers
// (pool_norm_kernels.h, channel_bias_kernels.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"  // Stream

namespace amp::cuda {

// dst = src with the layout changed (image_transpose.cu): toNhwc moves (n, c, hw) to (n, hw, c),
// otherwise (n, hw, c) to (n, c, hw). Bytes only, so exact for any dtype of elementBytes 1, 2
// or 4 (a weight's (K, C, R, S) -> (K, R, S, C) is the same move with n = K). No overlap.
void launchTransposeImage(bool toNhwc, std::size_t elementBytes, const void* src, void* dst,
                          std::int64_t n, std::int64_t c, std::int64_t hw, Stream s);

// Global average pooling of an NHWC x (residual.cu): y (n * c) = each channel's plane summed in
// fp32 in position order (h * W + w, the NCHW kernel's order, so the same bits) / planeSize;
// the backward spreads dy / planeSize over an NHWC dx. As launchGlobalAvgPool* otherwise.
void launchGlobalAvgPoolForwardNhwc(int xCode, const void* x, int yCode, void* y, std::int64_t n,
                                    std::int64_t c, std::int64_t planeSize, Stream s);
void launchGlobalAvgPoolBackwardNhwc(int dyCode, const void* dy, int dxCode, void* dx,
                                     std::int64_t n, std::int64_t c, std::int64_t planeSize,
                                     Stream s);

}  // namespace amp::cuda
