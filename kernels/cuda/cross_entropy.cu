// Softmax cross-entropy forward (probabilities and per-row loss, in the CPU's order: max, sum of
// exp in double, log-sum-exp) and backward ((p - onehot) * k, rounded once to the gradient's
// dtype). One thread per row: the class counts here are small (10 for Fashion-MNIST).
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void crossEntropyForwardKernel(int code, const void* logits, const std::int32_t* labels,
                                          std::int64_t m, std::int64_t c, float* probs,
                                          double* rowLoss, int* badLabel) {
  const std::int64_t r = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (r >= m) return;
  const std::int64_t base = r * c;
  float mx = loadFloat(code, logits, base);
  for (std::int64_t j = 1; j < c; ++j) mx = fmaxf(mx, loadFloat(code, logits, base + j));
  double sum = 0;
  for (std::int64_t j = 0; j < c; ++j) sum += exp(double(loadFloat(code, logits, base + j)) - mx);
  const double logSum = log(sum) + mx;
  for (std::int64_t j = 0; j < c; ++j)
    probs[base + j] = float(exp(double(loadFloat(code, logits, base + j)) - logSum));
  const std::int32_t label = labels[r];
  if (label < 0 || label >= c) {
    atomicCAS(badLabel, 0, static_cast<int>(r) + 1);
    rowLoss[r] = 0;
    return;
  }
  rowLoss[r] = logSum - loadFloat(code, logits, base + label);
}

__global__ void crossEntropyBackwardKernel(const float* probs, const std::int32_t* labels,
                                           std::int64_t m, std::int64_t c, float kValue,
                                           const float* kOnDevice, int gCode, void* dlogits) {
  const float k = kOnDevice ? *kOnDevice : kValue;
  const std::int64_t total = m * c;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / c, j = i % c;
    storeFloat(gCode, dlogits, i, (probs[i] - (j == labels[r] ? 1.f : 0.f)) * k);
  }
}

void launchCrossEntropyForward(int code, const void* logits, const std::int32_t* labels,
                               std::int64_t m, std::int64_t c, float* probs, double* rowLoss,
                               int* badLabel, Stream s) {
  if (m > 0)
    crossEntropyForwardKernel<<<static_cast<unsigned>((m + kBlock - 1) / kBlock), kBlock, 0, s>>>(
        code, logits, labels, m, c, probs, rowLoss, badLabel);
}

void launchCrossEntropyBackward(const float* probs, const std::int32_t* labels, std::int64_t m,
                                std::int64_t c, float k, int gCode, void* dlogits, Stream s,
                                const float* kOnDevice) {
  if (m * c > 0)
    crossEntropyBackwardKernel<<<gridFor(m * c), kBlock, 0, s>>>(probs, labels, m, c, k,
                                                                 kOnDevice, gCode, dlogits);
}

}  // namespace amp::cuda
