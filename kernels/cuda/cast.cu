// Casts between fp32, fp16 and bf16 (RNE, overflow to inf, subnormals kept, NaN quiet) with the
// CPU's conversion code, so both backends produce the same bits; and the round trip through a
// 16-bit format that an fp32 GEMM output takes to equal a 16-bit GEMM output.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void castKernel(int srcCode, const void* src, int dstCode, void* dst, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    storeFloat(dstCode, dst, i, loadFloat(srcCode, src, i));
}

__global__ void roundThroughKernel(float* data, std::int64_t n, int throughCode) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    data[i] = storedValue(throughCode, data[i]);
}

void launchCast(int srcCode, const void* src, int dstCode, void* dst, std::int64_t n, Stream s) {
  if (n > 0) castKernel<<<gridFor(n), kBlock, 0, s>>>(srcCode, src, dstCode, dst, n);
}

void launchRoundThrough(float* data, std::int64_t n, int throughCode, Stream s) {
  if (n > 0) roundThroughKernel<<<gridFor(n), kBlock, 0, s>>>(data, n, throughCode);
}

}  // namespace amp::cuda
