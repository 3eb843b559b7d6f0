// Launchers of the max-pooling and batch-norm kernels (max_pool.cu, batch_norm.cu), in the style
// of cuda_kernels.h: raw device pointers, dtype codes as amp::DType (0 fp32, 1 fp16, 2 bf16), the
// caller's stream; no CUDA headers needed to call them. Launchers only enqueue work (several
// kernels for batch norm, all on `s`, nothing waits on the host); the caller validates shapes
// first and checks cudaGetLastError() afterwards.
//
// Both ops reproduce the CPU backend (engine/backend/cpu_backend_conv.cpp) exactly where its
// order of operations is fixed: pooling bit for bit; batch norm with the same fp32/double
// formulas, its per-channel sums in double in an order fixed by the shape alone (deterministic,
// no atomics), so it differs from the CPU only by the CPU's fp32 lane sums.
//
// Both take NCHW or NHWC (channels-last) tensors, every tensor of one call in one layout
// (kernels/common/image_layout.h). A layout changes where each element lies, never the order in
// which a window, a channel's sum or an output visits the elements: NHWC results equal NCHW
// results bit for bit.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"  // Stream

namespace amp::cuda {

// ---- max pooling (square window, -inf padding up to half the window) ------------------------
struct PoolDims {
  std::int64_t planes = 0;  // n * c
  std::int64_t h = 0, w = 0, outH = 0, outW = 0;
  std::int64_t kernel = 0, stride = 0, padding = 0;
  std::int64_t channels = 1;  // c: where an NHWC plane's values lie
  bool channelsLast = false;  // x, y, argmax, dy and dx NHWC
};

// y[p, i, j] = the window's maximum (row-major scan, strict '>' so the first maximum wins ties,
// a NaN taken whenever seen), stored in y's dtype; argmax = its index h * w + col within the
// plane. Padding positions are never taken (the scan covers the window's inside positions only).
// Windows must fit the padded input (h, w + 2 * padding >= kernel).
void launchMaxPoolForward(const PoolDims& d, int xCode, const void* x, int yCode, void* y,
                          std::int32_t* argmax, Stream s);

// dx (planes, h, w): for each input, 0.f plus the dy of every output whose argmax names it, in
// ascending output order, rounded once to dx's dtype (the CPU's scatter order, as a gather).
// argmax must come from launchMaxPoolForward with the same dims.
void launchMaxPoolBackward(const PoolDims& d, int dyCode, const void* dy,
                           const std::int32_t* argmax, int dxCode, void* dx, Stream s);

// ---- batch normalisation: x viewed as (n, c, hw) -------------------------------------------
struct BatchNormDims {
  std::int64_t n = 0, c = 0, hw = 0;
  bool channelsLast = false;  // x, y, dy and dx stored (n, hw, c)
  // NHWC sums by blocks of the channels side by side (batch_norm.cu; the same bits); off, a
  // block per channel reading values c apart (AMP_CUDA_DISABLE=coalesced-batch-norm).
  bool groupNhwcSums = true;
  std::int64_t count() const { return n * hw; }  // values per channel
};

// A per-channel tensor (c elements): gamma, beta, running or saved statistics, their gradients.
// fp32, or fp16/bf16 in the pure 16-bit modes; read and written through its dtype code.
struct ChannelIn {
  int code = 0;
  const void* data = nullptr;
};
struct ChannelOut {
  int code = 0;
  void* data = nullptr;
};

// Device scratch the three batch-norm launchers need (per-block partial sums in double and a few
// fp32 values per channel); the caller allocates it and keeps it until the work has run (the
// backend's stream-ordered allocator makes freeing right after the launch safe).
std::int64_t batchNormWorkspaceBytes(const BatchNormDims& d);

// Training forward (requires d.count() >= 2): per channel mean = float(sum / m), biased
// variance from squared fp32 deviations, invStd, the running statistics updated in place with
// `momentum` (unbiased variance), then y = x * scale + shift in fp32, rounded once to yCode.
void launchBatchNormTrain(const BatchNormDims& d, int xCode, const void* x, int yCode, void* y,
                          ChannelIn gamma, ChannelIn beta, ChannelOut runningMean,
                          ChannelOut runningVar, ChannelOut saveMean, ChannelOut saveInvStd,
                          float momentum, float eps, void* workspace, Stream s);

// Eval forward: scale and shift from the running statistics, y = x * scale + shift.
void launchBatchNormEval(const BatchNormDims& d, int xCode, const void* x, int yCode, void* y,
                         ChannelIn gamma, ChannelIn beta, ChannelIn runningMean,
                         ChannelIn runningVar, float eps, void* workspace, Stream s);

// Backward: dgamma = sum(dy * xhat), dbeta = sum(dy) per channel; dx = gamma * invStd *
// (dy - mean(dy) - xhat * mean(dy * xhat)) in fp32, rounded once to dxCode.
void launchBatchNormBackward(const BatchNormDims& d, int xCode, const void* x, int dyCode,
                             const void* dy, int dxCode, void* dx, ChannelIn gamma,
                             ChannelIn saveMean, ChannelIn saveInvStd, ChannelOut dgamma,
                             ChannelOut dbeta, void* workspace, Stream s);

}  // namespace amp::cuda
