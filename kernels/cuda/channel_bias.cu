// Per-channel bias of NCHW convolutions (see channel_bias_kernels.h).
#include "kernels/common/image_layout.h"
#include "kernels/cuda/channel_bias_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

namespace {

// Rounds a double once to the dtype `code` and stores it. fp32: the hardware's RNE. 16-bit:
// going through an RNE float first could round twice (a tie created by the first rounding then
// breaks to even); rounding to float toward zero and setting the last bit when inexact ("round
// to odd") keeps the information the second rounding needs, because float has more than two bits
// beyond fp16's and bf16's precision, so the one RNE step to 16 bits is then exact-rounded.
__device__ void storeRoundedOnce(int code, void* p, std::int64_t i, double v) {
  if (code == 0) {
    static_cast<float*>(p)[i] = static_cast<float>(v);
    return;
  }
  float f = __double2float_rz(v);
  if (static_cast<double>(f) != v && f == f)
    f = bitsToFloat(floatBits(f) | 1u);  // inexact (and not NaN): make it odd
  storeFloat(code, p, i, f);
}

// Index: 32 bits where the tensor allows (the channel of each element is a division and a
// remainder, which in 64 bits are long software sequences on the GPU; issue 41), else 64.
template <class Index>
__global__ void channelBiasAddKernel(int yCode, void* y, int biasCode, const void* bias, Index k,
                                     Index hw, Index total, bool nhwc) {
  const Index step = Index(gridDim.x) * blockDim.x;
  for (Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const Index channel = channelAt(nhwc, i, k, hw);
    storeFloat(yCode, y, i, loadFloat(yCode, y, i) + loadFloat(biasCode, bias, channel));
  }
}

// One block per channel. Thread t adds, in fp32, the elements t, t + 256, ... of the channel's
// n * hw values (walking image by image, so a warp reads consecutive addresses); the block then
// adds its 256 partial sums in double in a fixed tree. Every step's order is fixed by the shape
// alone, so the result does not depend on scheduling, nor on the layout (NHWC reads the same
// values in the same order, k elements apart).
template <class Index>
__global__ void channelBiasGradKernel(int dyCode, const void* dy, Index n, Index k, Index hw,
                                      bool nhwc, int dbCode, void* db) {
  const Index channel = blockIdx.x;
  const Index count = n * hw;
  float partial = 0.f;
  for (Index j = threadIdx.x; j < count; j += blockDim.x) {
    const Index image = j / hw, at = j - image * hw;
    partial += loadFloat(dyCode, dy, imageOffset(nhwc, image, channel, at, k, hw));
  }
  const double total = blockSum(static_cast<double>(partial));
  if (threadIdx.x == 0) storeRoundedOnce(dbCode, db, channel, total);
}

// Every index of an (n, k, hw) tensor fits in 31 bits.
bool fitsIn32Bits(std::int64_t total) { return total < (std::int64_t(1) << 31); }

}  // namespace

void launchChannelBiasAdd(int yCode, void* y, int biasCode, const void* bias, std::int64_t n,
                          std::int64_t k, std::int64_t hw, bool nhwc, Stream s) {
  const std::int64_t total = n * k * hw;
  if (total <= 0) return;
  if (fitsIn32Bits(total))
    channelBiasAddKernel<std::uint32_t><<<gridFor(total), kBlock, 0, s>>>(
        yCode, y, biasCode, bias, std::uint32_t(k), std::uint32_t(hw), std::uint32_t(total), nhwc);
  else
    channelBiasAddKernel<std::int64_t><<<gridFor(total), kBlock, 0, s>>>(yCode, y, biasCode, bias, k, hw,
                                                                         total, nhwc);
}

void launchChannelBiasGrad(int dyCode, const void* dy, std::int64_t n, std::int64_t k,
                           std::int64_t hw, bool nhwc, int dbCode, void* db, Stream s) {
  // blockSum assumes kBlock threads. k blocks: grid.x allows 2^31 - 1, far beyond any channel
  // count a 32-bit cuDNN convolution can have.
  if (k <= 0) return;
  if (fitsIn32Bits(n * k * hw))
    channelBiasGradKernel<std::uint32_t><<<static_cast<unsigned>(k), kBlock, 0, s>>>(
        dyCode, dy, std::uint32_t(n), std::uint32_t(k), std::uint32_t(hw), nhwc, dbCode, db);
  else
    channelBiasGradKernel<std::int64_t><<<static_cast<unsigned>(k), kBlock, 0, s>>>(dyCode, dy, n, k, hw, nhwc,
                                                                                    dbCode, db);
}

}  // namespace amp::cuda
