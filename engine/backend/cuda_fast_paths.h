// Switches for the CUDA backend's fast paths, so that each can be turned off when a result is
// in doubt: AMP_CUDA_DISABLE is a comma-separated list of path names ("all" for every one).
//   deferred-grad-rounding  a 16-bit dW's rounding folded into the unscale / optimizer read
//                           (kernels/common/deferred_rounding.h) instead of a pass of its own
//   optimizer-weight-copies the SGD/Adam kernels write each fp32 master's 16-bit copy as they
//                           update it (Parameter::lowCopy), so forwards need no weight casts
//   nccl                    data-parallel ranks with a GPU each all-reduce with NCCL on the
//                           device (cuda_backend_nccl.cpp) instead of through host memory and MPI
//   channels-last           image activations kept NHWC (MemoryFormat::ChannelsLast), so cuDNN's
//                           tensor-core convolutions need no NCHW<->NHWC transposes; off, every
//                           activation is NCHW as on the CPU (the same numbers either way, up to
//                           the algorithm cuDNN picks for a convolution)
//   cuda-graphs             a steady training step recorded once as a CUDA graph and replayed
//                           (cuda_step_graph.cpp, engine/train/trainer_graph.cpp); off, every
//                           step launches its kernels one by one (the same numbers either way)
//   warp-losses             the cross-entropy forward with a warp per row and the step's row
//                           losses added by a block in a fixed blocked order
//                           (kernels/common/row_sum_order.h); off, a thread per row and one
//                           thread adding in row order (the CPU's orders; slow at the GPT's
//                           32768 rows of 50257 classes)
//   wide-bias-grad          a bias gradient of few columns over many rows in two passes
//                           (kernels/cuda/bias_grad.cu: row-block sums on a 2-D grid, then
//                           their totals), the same order and bits as the one-pass kernel
//   coalesced-batch-norm    channels-last batch norm's per-channel sums by blocks of the 8 or
//                           16 channels side by side at each position (32-byte reads; the
//                           same sums in the same order); off, a block per channel
//   fp8-quantize            amax, quantize and dequantize of fp8 / block-scaled operands by our
//                           kernels (kernels/cuda/fp8_quantize.cu); off, Backend's host
//                           reference over copies (the same bits either way)
//   fp8-gemm                per-tensor fp8 GEMMs on the fp8 tensor cores (cuBLASLt, sm_89+);
//                           off, every quantised GEMM decoded to fp32 for the fp32 GEMM
//   fp8-block-gemm          MXFP8 / NVFP4 GEMMs on the block-scaled tensor cores (cuBLASLt
//                           VEC32_UE8M0 / VEC16_UE4M3, sm_100+, scales tiled by
//                           kernels/cuda/fp8_block_scales.cu); off, those decoded to fp32 for the
//                           fp32 GEMM (fp8-gemm off turns this off too)
// Read once per process. Unknown names are ignored, so a script written for a later build
// still runs.
#pragma once

#include <cstdlib>
#include <string>

namespace amp::cudabk {

inline bool fastPathEnabled(const char* name) {
  // Appended piece by piece (GCC 12's -Wrestrict misfires on "," + std::string(...) chains).
  const auto framed = [](const char* text) {
    std::string s = ",";
    s += text;
    s += ",";
    return s;
  };
  static const std::string disabled = [&framed] {
    const char* v = std::getenv("AMP_CUDA_DISABLE");
    return framed(v ? v : "");
  }();
  return disabled.find(",all,") == std::string::npos && disabled.find(framed(name)) == std::string::npos;
}

}  // namespace amp::cudabk
