// dst += src in fp32 (src widened, the sum rounded once to dst's dtype): gradient accumulation.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void accumulateKernel(int dstCode, void* dst, int srcCode, const void* src,
                                 std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    storeFloat(dstCode, dst, i, loadFloat(dstCode, dst, i) + loadFloat(srcCode, src, i));
}

void launchAccumulate(int dstCode, void* dst, int srcCode, const void* src, std::int64_t n,
                      Stream s) {
  if (n > 0) accumulateKernel<<<gridFor(n), kBlock, 0, s>>>(dstCode, dst, srcCode, src, n);
}

}  // namespace amp::cuda
