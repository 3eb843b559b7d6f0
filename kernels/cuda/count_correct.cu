// Rows whose argmax (the first maximum, as torch.argmax) equals the label. One thread per row.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void countCorrectKernel(int code, const void* logits, const std::int32_t* labels,
                                   std::int64_t m, std::int64_t c, unsigned long long* count) {
  const std::int64_t r = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  unsigned long long correct = 0;
  if (r < m) {
    std::int64_t best = 0;
    float bestV = loadFloat(code, logits, r * c);
    for (std::int64_t j = 1; j < c; ++j) {
      const float v = loadFloat(code, logits, r * c + j);
      if (v > bestV) {
        bestV = v;
        best = j;
      }
    }
    correct = best == labels[r];
  }
  const unsigned long long block = blockSumCount(correct);
  if (threadIdx.x == 0 && block) atomicAdd(count, block);
}

void launchCountCorrect(int code, const void* logits, const std::int32_t* labels, std::int64_t m,
                        std::int64_t c, unsigned long long* count, Stream s) {
  if (m > 0)
    countCorrectKernel<<<static_cast<unsigned>((m + kBlock - 1) / kBlock), kBlock, 0, s>>>(
        code, logits, labels, m, c, count);
}

}  // namespace amp::cuda
