// Shared by the .cu files: launch geometry, dtype-coded loads and stores through the same
// bit-exact conversions as the CPU (kernels/common/float16.h), and a block-wide double sum.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/float16.h"

namespace amp::cuda {

constexpr int kBlock = 256;

// Enough blocks to cover n once with grid-stride loops, capped (the loops do the rest).
inline unsigned gridFor(std::int64_t n, std::int64_t cap = 65535) {
  std::int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks < cap ? blocks : cap);
}

__device__ inline float loadFloat(int code, const void* p, std::int64_t i) {
  if (code == 0) return static_cast<const float*>(p)[i];
  const std::uint16_t bits = static_cast<const std::uint16_t*>(p)[i];
  return code == 1 ? halfBitsToFloat(bits) : bf16BitsToFloat(bits);
}

__device__ inline void storeFloat(int code, void* p, std::int64_t i, float v) {
  if (code == 0) static_cast<float*>(p)[i] = v;
  else if (code == 1) static_cast<std::uint16_t*>(p)[i] = floatToHalfBits(v);
  else static_cast<std::uint16_t*>(p)[i] = floatToBf16Bits(v);
}

// The value a store of v into dtype `code` keeps, widened back (what the tensor then holds).
__device__ inline float storedValue(int code, float v) {
  return code == 0 ? v : code == 1 ? roundToHalf(v) : roundToBf16(v);
}

// Sum of one double per thread over the block; the result is valid in thread 0.
__device__ inline double blockSum(double v) {
  __shared__ double partial[kBlock / 32];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  double total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kBlock / 32; ++w) total += partial[w];
  __syncthreads();  // partial may be reused by a following call
  return total;
}

__device__ inline unsigned long long blockSumCount(unsigned long long v) {
  __shared__ unsigned long long partialCount[kBlock / 32];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partialCount[warp] = v;
  __syncthreads();
  unsigned long long total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kBlock / 32; ++w) total += partialCount[w];
  __syncthreads();
  return total;
}

}  // namespace amp::cuda
