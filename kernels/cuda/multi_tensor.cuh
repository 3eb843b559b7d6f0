// Geometry of the multi-tensor launches: grid row y walks tensor rowBase + y of the table with a
// grid-stride loop along x, so one launch covers every parameter (PyTorch's multi_tensor_apply
// packs chunks instead; a row per tensor is simpler and our models have a few dozen tensors).
#pragma once

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

// grid.y is limited to 65535 rows: longer tables are launched in chunks of at most that many
// tensors, each launch told the table index of its first row (rowBase).
constexpr int kMaxGridRows = 65535;

// Calls launch(grid, rowBase) once per chunk of at most kMaxGridRows tensors, in table order.
template <class Launch>
inline void forEachRowChunk(int count, std::int64_t maxN, Launch&& launch) {
  for (int base = 0; base < count; base += kMaxGridRows) {
    const int rows = count - base < kMaxGridRows ? count - base : kMaxGridRows;
    launch(dim3(gridFor(maxN, 1024), static_cast<unsigned>(rows)), base);
  }
}

// The table index of the calling block's tensor.
__device__ inline int tensorIndex(int rowBase) { return rowBase + static_cast<int>(blockIdx.y); }

// Whether the calling block has no element of its tensor (n elements): the grid is as wide as
// the table's largest tensor needs, so most blocks of a small tensor's row have none. Such a
// block returns before its block reductions and atomics: they would add +0.0 to sums of squares
// that start at +0.0 and only grow, which changes no bit (issue 41: the GPT's 148 tensors ran
// thousands of empty blocks, each with a double atomicAdd on one address). Uniform in the
// block (it depends on blockIdx only), so no thread is left waiting at a barrier.
__device__ inline bool blockOwnsNoElement(std::int64_t n) {
  return blockIdx.x * std::int64_t(blockDim.x) >= n;
}

// The optimizer kernels' last act: the block's gradient sum of squares and lost-update count
// reduced across its threads, then added to the step's statistics by thread 0. Every thread of
// the block must call it (it holds the block reductions).
__device__ inline void addBlockStepStats(DeviceStepStats* stats, double sumSq,
                                         unsigned long long lost) {
  const double blockSumSq = blockSum(sumSq);
  const unsigned long long blockLost = blockSumCount(lost);
  if (threadIdx.x != 0) return;
  atomicAdd(&stats->stepGradSumOfSquares, blockSumSq);
  if (blockLost) atomicAdd(&stats->lost, blockLost);
}

#define AMP_FOR_EACH_ELEMENT(i, n)                                                          \
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (n);      \
       i += std::int64_t(gridDim.x) * blockDim.x)

}  // namespace amp::cuda
