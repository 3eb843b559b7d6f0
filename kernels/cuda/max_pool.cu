// Max pooling (NCHW, square window, optional -inf padding): forward with the winner's index, and
// the backward as a gather. Both agree bit for bit with the CPU backend (cpu_backend_conv.cpp):
// pooling only moves input values, and the backward adds the same fp32 values in the same order.
// NHWC tensors (dims.channelsLast) are walked through the same windows in the same order, each
// value read where the layout puts it (kernels/common/image_layout.h): the same bits, and argmax
// keeps its meaning (the index h * W + w within the plane).
#include "kernels/common/image_layout.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pool_norm_kernels.h"

namespace amp::cuda {

namespace {

// The dims in the index type the kernels compute with: 32-bit unsigned whenever the input fits
// (its divisions and remainders cost a fraction of 64-bit ones, which would otherwise dominate
// this memory-bound op), 64-bit beyond.
template <class Index>
struct PoolIndexDims {
  Index planes, h, w, outH, outW, kernel, stride, padding, channels;
  bool nhwc;
};

template <class Index>
PoolIndexDims<Index> indexDims(const PoolDims& d) {
  return {Index(d.planes), Index(d.h),      Index(d.w),       Index(d.outH),
          Index(d.outW),   Index(d.kernel), Index(d.stride),  Index(d.padding),
          Index(d.channels > 0 ? d.channels : 1), d.channelsLast};
}

bool fitsIn32Bits(const PoolDims& d) {
  // Every index a kernel forms is below planes * h * w (outputs are fewer than inputs), and a
  // grid-stride step (< 2^24) added to one stays below 2^32.
  return d.planes * d.h * d.w < (std::int64_t(1) << 31);
}

// One thread per output. K, S > 0 fix the common 2x2 / stride 2 window at compile time (the
// window loops then unroll); 0 reads them from the dims.
template <class Index, int K, int S>
__global__ void __launch_bounds__(kBlock)
    maxPoolForwardKernel(PoolIndexDims<Index> d, int xCode, const void* x, int yCode, void* y,
                         std::int32_t* argmax) {
  const Index kernel = K > 0 ? Index(K) : d.kernel, stride = S > 0 ? Index(S) : d.stride;
  const Index total = d.planes * d.outH * d.outW;
  const Index step = Index(gridDim.x) * kBlock;
  for (Index o = Index(blockIdx.x) * kBlock + threadIdx.x; o < total; o += step) {
    const PoolOutput<Index> out = poolOutputAt(d.nhwc, o, d.channels, d.outH, d.outW);
    const Index plane = out.plane, planeSize = d.h * d.w;
    const Index corner = out.row * stride * d.w + out.col * stride;  // window's top-left
    // The CPU's rule, literally: start below every value at the window's first element, scan
    // row-major, take a value that is strictly greater (ties keep the first maximum) or NaN
    // (so a NaN always wins, the last one seen if several).
    float best = -__int_as_float(0x7F800000);  // -inf
    Index at = corner;
    for (Index a = 0; a < kernel; ++a)
      for (Index b = 0; b < kernel; ++b) {
        const Index q = corner + a * d.w + b;
        const float v = loadFloat(xCode, x, planeOffset(d.nhwc, plane, q, d.channels, planeSize));
        if (v > best || v != v) {
          best = v;
          at = q;
        }
      }
    storeFloat(yCode, y, o, best);  // an input value: exact when y has x's dtype
    argmax[o] = static_cast<std::int32_t>(at);
  }
}

// A padded window (the ImageNet stem's 3x3 / stride 2 / padding 1): the CPU's rule over the
// window's positions inside the input only, from -inf at the first of them, so padding is never
// chosen. Signed 64-bit positions (a window may start above or left of the plane); rare and
// small, so no specialisations.
__global__ void __launch_bounds__(kBlock)
    maxPoolPaddedForwardKernel(PoolIndexDims<std::uint64_t> d, int xCode, const void* x,
                               int yCode, void* y, std::int32_t* argmax) {
  const auto h = std::int64_t(d.h), w = std::int64_t(d.w), pad = std::int64_t(d.padding);
  const auto kernel = std::int64_t(d.kernel), stride = std::int64_t(d.stride);
  const auto total = std::int64_t(d.planes * d.outH * d.outW);
  const auto channels = std::int64_t(d.channels);
  for (std::int64_t o = blockIdx.x * std::int64_t(kBlock) + threadIdx.x; o < total;
       o += std::int64_t(gridDim.x) * kBlock) {
    const PoolOutput<std::int64_t> out =
        poolOutputAt(d.nhwc, o, channels, std::int64_t(d.outH), std::int64_t(d.outW));
    const std::int64_t row = out.row, col = out.col, plane = out.plane;
    const std::int64_t r0 = max(std::int64_t(0), row * stride - pad);
    const std::int64_t r1 = min(h, row * stride - pad + kernel);
    const std::int64_t c0 = max(std::int64_t(0), col * stride - pad);
    const std::int64_t c1 = min(w, col * stride - pad + kernel);
    float best = -__int_as_float(0x7F800000);  // -inf
    std::int64_t at = r0 * w + c0;
    for (std::int64_t r = r0; r < r1; ++r)
      for (std::int64_t c = c0; c < c1; ++c) {
        const float v = loadFloat(xCode, x, planeOffset(d.nhwc, plane, r * w + c, channels, h * w));
        if (v > best || v != v) {
          best = v;
          at = r * w + c;
        }
      }
    storeFloat(yCode, y, o, best);
    argmax[o] = static_cast<std::int32_t>(at);
  }
}

// One thread per input element, gathering from the windows that contain it. The CPU scatters
// acc[argmax[o]] += dy[o] for o = 0, 1, ... from acc = 0.f; an element receives exactly the dy
// of the outputs whose argmax names it, and those lie in windows that contain it (a forward's
// argmax is always inside its window). Walking those windows by ascending window row, then
// column, is ascending o: the same fp32 additions in the same order, so the same bits (0.f
// first, so a lone -0 gradient gives +0 as on the CPU). No atomics, nothing racy.
template <class Index, int K, int S>
__global__ void __launch_bounds__(kBlock)
    maxPoolBackwardKernel(PoolIndexDims<Index> d, int dyCode, const void* dy,
                          const std::int32_t* argmax, int dxCode, void* dx) {
  const Index kernel = K > 0 ? Index(K) : d.kernel, stride = S > 0 ? Index(S) : d.stride;
  const Index total = d.planes * d.h * d.w;
  const Index step = Index(gridDim.x) * kBlock;
  for (Index e = Index(blockIdx.x) * kBlock + threadIdx.x; e < total; e += step) {
    // Positions in the padded plane (padding rows and columns come first), where window i covers
    // rows [i * stride, i * stride + kernel); `self` is the unpadded index argmax holds.
    Index plane = 0, position = 0;
    planeAndPositionAt(d.nhwc, e, d.channels, d.h * d.w, plane, position);
    const Index row0 = position / d.w, col0 = position - row0 * d.w;
    const Index row = row0 + d.padding, col = col0 + d.padding;
    // Window i covers rows [i * stride, i * stride + kernel): it holds `row` for
    // ceil((row - kernel + 1) / stride) <= i <= row / stride, within [0, outH). Same for columns.
    const Index firstI = row < kernel ? 0 : (row - kernel + stride) / stride;
    const Index lastI = row / stride < d.outH - 1 ? row / stride : d.outH - 1;
    const Index firstJ = col < kernel ? 0 : (col - kernel + stride) / stride;
    const Index lastJ = col / stride < d.outW - 1 ? col / stride : d.outW - 1;
    const auto self = static_cast<std::int32_t>(row0 * d.w + col0);
    const Index outPlaneSize = d.outH * d.outW;
    float sum = 0.f;
    for (Index i = firstI; i <= lastI; ++i)
      for (Index j = firstJ; j <= lastJ; ++j) {
        const Index o = planeOffset(d.nhwc, plane, i * d.outW + j, d.channels, outPlaneSize);
        if (argmax[o] == self) sum += loadFloat(dyCode, dy, o);
      }
    storeFloat(dxCode, dx, e, sum);
  }
}

template <class Index>
void forward(const PoolDims& d, int xCode, const void* x, int yCode, void* y,
             std::int32_t* argmax, Stream s) {
  const PoolIndexDims<Index> id = indexDims<Index>(d);
  const unsigned blocks = gridFor(d.planes * d.outH * d.outW);
  if (d.padding > 0)
    maxPoolPaddedForwardKernel<<<blocks, kBlock, 0, s>>>(indexDims<std::uint64_t>(d), xCode, x,
                                                         yCode, y, argmax);
  else if (d.kernel == 2 && d.stride == 2)
    maxPoolForwardKernel<Index, 2, 2><<<blocks, kBlock, 0, s>>>(id, xCode, x, yCode, y, argmax);
  else
    maxPoolForwardKernel<Index, 0, 0><<<blocks, kBlock, 0, s>>>(id, xCode, x, yCode, y, argmax);
}

template <class Index>
void backward(const PoolDims& d, int dyCode, const void* dy, const std::int32_t* argmax,
              int dxCode, void* dx, Stream s) {
  const PoolIndexDims<Index> id = indexDims<Index>(d);
  const unsigned blocks = gridFor(d.planes * d.h * d.w);
  if (d.kernel == 2 && d.stride == 2 && d.padding == 0)
    maxPoolBackwardKernel<Index, 2, 2><<<blocks, kBlock, 0, s>>>(id, dyCode, dy, argmax, dxCode,
                                                                 dx);
  else
    maxPoolBackwardKernel<Index, 0, 0><<<blocks, kBlock, 0, s>>>(id, dyCode, dy, argmax, dxCode,
                                                                 dx);
}

bool hasWork(const PoolDims& d) {
  return d.planes > 0 && d.outH > 0 && d.outW > 0 && d.kernel > 0 && d.stride > 0 &&
         d.padding >= 0 && 2 * d.padding <= d.kernel && d.h + 2 * d.padding >= d.kernel &&
         d.w + 2 * d.padding >= d.kernel;
}

}  // namespace

void launchMaxPoolForward(const PoolDims& d, int xCode, const void* x, int yCode, void* y,
                          std::int32_t* argmax, Stream s) {
  if (!hasWork(d)) return;
  if (fitsIn32Bits(d))
    forward<std::uint32_t>(d, xCode, x, yCode, y, argmax, s);
  else
    forward<std::uint64_t>(d, xCode, x, yCode, y, argmax, s);
}

void launchMaxPoolBackward(const PoolDims& d, int dyCode, const void* dy,
                           const std::int32_t* argmax, int dxCode, void* dx, Stream s) {
  if (!hasWork(d)) return;
  if (fitsIn32Bits(d))
    backward<std::uint32_t>(d, dyCode, dy, argmax, dxCode, dx, s);
  else
    backward<std::uint64_t>(d, dyCode, dy, argmax, dxCode, dx, s);
}

}  // namespace amp::cuda
