// db (n) = column sums of dy (m, n) in the blocked order of kernels/common/bias_grad_order.h
// (the CPU's too, so the sums agree bit for bit): fp32 sums, rounded once to db's dtype.
//
// A CUDA block owns 32 columns and has 8 warps. Each warp is one row of the tile at a time:
// its 32 lanes read 32 neighbouring columns of one row (64 or 128 contiguous bytes), and warp
// w sums row block 8s + w of super-chunk s. The 8 block sums land in shared memory and lane j
// of warp 0 adds them to column j's total in block order. So every element is read once, the
// loads of a row block are independent (they pipeline), and n / 32 blocks share the work
// (4096 columns: 128 blocks). Few columns over many rows take the two passes below instead.
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

// The same order on many more blocks (issue 41: the GPT's 768 or 3072 columns gave the kernel
// above 24 or 96 blocks for 32768 rows, on 132 SMs). Pass 1: every row block's column sums, each
// from 0 in row order, by a 2-D grid (32 columns x 8 row blocks per CUDA block) into
// partials[b][j]. Pass 2: a thread per column adds its row-block sums from 0 in block order.
// Both the sums and their order are bias_grad_order.h's, so the bits are the CPU's.
__global__ void biasGradRowBlocksKernel(int dyCode, const void* dy, std::int64_t m, std::int64_t n,
                                        float* partials) {
  const int lane = threadIdx.x % kColumnsPerBlock, warp = threadIdx.x / kColumnsPerBlock;
  const std::int64_t j = std::int64_t(blockIdx.x) * kColumnsPerBlock + lane;
  const std::int64_t b = std::int64_t(blockIdx.y) * kWarps + warp;
  if (b >= biasGradRowBlocks(m) || j >= n) return;
  const std::int64_t r0 = b * kBiasGradRowBlock;
  const std::int64_t r1 = r0 + kBiasGradRowBlock < m ? r0 + kBiasGradRowBlock : m;
  float sum = 0.f;
  for (std::int64_t r = r0; r < r1; ++r) sum += loadFloat(dyCode, dy, r * n + j);
  partials[b * n + j] = sum;
}

__global__ void biasGradTotalsKernel(const float* partials, std::int64_t blocks, std::int64_t n,
                                     int dbCode, void* db) {
  const std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  float total = 0.f;
  for (std::int64_t b = 0; b < blocks; ++b) total += partials[b * n + j];
  storeFloat(dbCode, db, j, total);
}

std::size_t biasGradPartialFloats(std::int64_t m, std::int64_t n) {
  const std::int64_t blocks = biasGradRowBlocks(m);
  // One CUDA block of the kernel above per 32 columns already fills the device, or the rows
  // are few: no partials needed.
  if (blocks <= kWarps || (n + kColumnsPerBlock - 1) / kColumnsPerBlock >= 264) return 0;
  return static_cast<std::size_t>(blocks * n);
}

void launchBiasGrad(int dyCode, const void* dy, std::int64_t m, std::int64_t n, int dbCode,
                    void* db, Stream s, float* partials) {
  if (n <= 0) return;
  const std::int64_t grid = (n + kColumnsPerBlock - 1) / kColumnsPerBlock;
  const std::int64_t blocks = biasGradRowBlocks(m);
  const std::int64_t rowGroups = (blocks + kWarps - 1) / kWarps;
  if (partials && biasGradPartialFloats(m, n) > 0 && rowGroups <= 65535) {
    biasGradRowBlocksKernel<<<dim3(static_cast<unsigned>(grid), static_cast<unsigned>(rowGroups)),
                              kColumnsPerBlock * kWarps, 0, s>>>(dyCode, dy, m, n, partials);
    biasGradTotalsKernel<<<static_cast<unsigned>((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(
        partials, blocks, n, dbCode, db);
    return;
  }
  biasGradKernel<<<static_cast<unsigned>(grid), kColumnsPerBlock * kWarps, 0, s>>>(
      dyCode, dy, m, n, dbCode, db);
}

}  // namespace amp::cuda
