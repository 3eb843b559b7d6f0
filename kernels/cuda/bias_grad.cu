// db (n) = column sums of dy (m, n), accumulated in fp32 in row order (the CPU's order, so the
// sums agree bit for bit), rounded once to db's dtype. One thread per column: coalesced reads
// along a row; bias vectors are small next to the GEMMs around them.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void biasGradKernel(int dyCode, const void* dy, std::int64_t m, std::int64_t n,
                               int dbCode, void* db) {
  const std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  float sum = 0.f;
  for (std::int64_t r = 0; r < m; ++r) sum += loadFloat(dyCode, dy, r * n + j);
  storeFloat(dbCode, db, j, sum);
}

void launchBiasGrad(int dyCode, const void* dy, std::int64_t m, std::int64_t n, int dbCode,
                    void* db, Stream s) {
  if (n > 0)
    biasGradKernel<<<static_cast<unsigned>((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(
        dyCode, dy, m, n, dbCode, db);
}

}  // namespace amp::cuda
