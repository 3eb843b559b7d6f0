// The data-parallel average's last step on the device (kernels/common/rank_average.h): the fp32
// sum over the ranks divided by their number and rounded once into the gradient (fp32 in place,
// or a 16-bit gradient from its fp32 copy).
#include "kernels/common/rank_average.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void rankAverageKernel(const float* sum, std::int64_t n, float ranks, int dstCode, void* dst) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    storeFloat(dstCode, dst, i, rankAverage(sum[i], ranks));  // storeFloat rounds to dstCode
}

void launchRankAverage(const float* sum, std::int64_t n, float ranks, int dstCode, void* dst, Stream s) {
  if (n > 0) rankAverageKernel<<<gridFor(n), kBlock, 0, s>>>(sum, n, ranks, dstCode, dst);
}

}  // namespace amp::cuda
