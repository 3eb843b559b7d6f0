// db (n) = column sums of dy (m, n) in the blocked order of kernels/common/bias_grad_order.h
// (the CPU's too, so the sums agree bit for bit): fp32 sums, rounded once to db's dtype.
//
// A CUDA block owns 32 columns and has 8 warps. Each warp is one row of the tile at a time:
// its 32 lanes read 32 neighbouring columns of one row (64 or 128 contiguous bytes), and warp
// w sums row block 8s + w of super-chunk s. The 8 block sums land in shared memory and lane j
// of warp 0 adds them to column j's total in block order. So every element is read once, the
// loads of a row block are independent (they pipeline), and n / 32 blocks share the work
// (4096 columns: 128 blocks).
#include "kernels/common/bias_grad_order.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

namespace {
constexpr int kColumnsPerBlock = 32;
constexpr int kWarps = 8;
}  // namespace

__global__ void biasGradKernel(int dyCode, const void* dy, std::int64_t m, std::int64_t n,
                               int dbCode, void* db) {
  __shared__ float part[kWarps][kColumnsPerBlock];
  const int lane = threadIdx.x % kColumnsPerBlock, warp = threadIdx.x / kColumnsPerBlock;
  const std::int64_t j = std::int64_t(blockIdx.x) * kColumnsPerBlock + lane;
  const std::int64_t blocks = biasGradRowBlocks(m);
  float total = 0.f;
  for (std::int64_t first = 0; first < blocks; first += kWarps) {
    const std::int64_t b = first + warp;
    float sum = 0.f;
    if (b < blocks && j < n) {
      const std::int64_t r0 = b * kBiasGradRowBlock;
      const std::int64_t r1 = r0 + kBiasGradRowBlock < m ? r0 + kBiasGradRowBlock : m;
      for (std::int64_t r = r0; r < r1; ++r) sum += loadFloat(dyCode, dy, r * n + j);
    }
    part[warp][lane] = sum;
    __syncthreads();
    if (warp == 0) {
      const std::int64_t here = blocks - first < kWarps ? blocks - first : kWarps;
      for (int w = 0; w < here; ++w) total += part[w][lane];
    }
    __syncthreads();
  }
  if (warp == 0 && j < n) storeFloat(dbCode, db, j, total);
}

void launchBiasGrad(int dyCode, const void* dy, std::int64_t m, std::int64_t n, int dbCode,
                    void* db, Stream s) {
  if (n <= 0) return;
  const std::int64_t grid = (n + kColumnsPerBlock - 1) / kColumnsPerBlock;
  biasGradKernel<<<static_cast<unsigned>(grid), kColumnsPerBlock * kWarps, 0, s>>>(
      dyCode, dy, m, n, dbCode, db);
}

}  // namespace amp::cuda
