// c (m, n) fp32 += bias (n) widened to fp32: the bias of a GEMM whose fp32 output has no
// cuBLASLt bias epilogue for the bias's dtype. One fp32 add, as the epilogue would do.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void biasAddKernel(int biasCode, const void* bias, float* c, std::int64_t m,
                              std::int64_t n) {
  const std::int64_t total = m * n;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x)
    c[i] += loadFloat(biasCode, bias, i % n);
}

void launchBiasAdd(int biasCode, const void* bias, float* c, std::int64_t m, std::int64_t n,
                   Stream s) {
  if (m * n > 0) biasAddKernel<<<gridFor(m * n), kBlock, 0, s>>>(biasCode, bias, c, m, n);
}

}  // namespace amp::cuda
