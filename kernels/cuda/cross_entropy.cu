// Softmax cross-entropy forward (probabilities and per-row loss: max, sum of exp in double,
// log-sum-exp, as the CPU) and backward ((p - onehot) * k, rounded once to the gradient's dtype).
//
// The forward takes one warp per row (issue 41: one thread per row was fine for Fashion-MNIST's
// 10 classes and hopeless for the GPT's 32768 rows of 50257): lane l reads columns l, l + 32, ...
// (coalesced), the max is exact in any order, and the sum of exp goes lane by lane in column
// order then through a fixed butterfly, the same order on every call, so reruns and graph
// replays agree bit for bit. The CPU sums a row in column order: the loss agrees with it to
// about 1e-16 relative (the GPU suite holds it to 1e-12) and each probability to 1 ulp.
// AMP_CUDA_DISABLE=warp-losses goes back to a thread per row, the CPU's order exactly.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/warp_rows.cuh"

namespace amp::cuda {

namespace {
__device__ double warpSumDouble(double v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullWarp, v, offset);
  return v;
}

__device__ void rowLossAndLabel(int code, const void* logits, const std::int32_t* labels,
                                std::int64_t r, std::int64_t c, std::int64_t base, double logSum,
                                double* rowLoss, int* badLabel) {
  const std::int32_t label = labels[r];
  if (label < 0 || label >= c) {
    atomicCAS(badLabel, 0, static_cast<int>(r) + 1);
    rowLoss[r] = 0;
    return;
  }
  rowLoss[r] = logSum - loadFloat(code, logits, base + label);
}
}  // namespace

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
  rowLossAndLabel(code, logits, labels, r, c, base, logSum, rowLoss, badLabel);
}

// kRowsPerBlock warps per block, a row each.
__global__ void crossEntropyForwardWarpKernel(int code, const void* logits, const std::int32_t* labels,
                                              std::int64_t m, std::int64_t c, float* probs,
                                              double* rowLoss, int* badLabel) {
  const std::int64_t r = blockIdx.x * std::int64_t(kRowsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= m) return;  // a whole warp: the shuffles below never miss a lane
  const std::int64_t base = r * c;
  float mx = -INFINITY;
  for (std::int64_t j = lane; j < c; j += 32) mx = fmaxf(mx, loadFloat(code, logits, base + j));
  mx = warpMax(mx);
  double sum = 0;
  for (std::int64_t j = lane; j < c; j += 32) sum += exp(double(loadFloat(code, logits, base + j)) - mx);
  const double logSum = log(warpSumDouble(sum)) + mx;
  for (std::int64_t j = lane; j < c; j += 32)
    probs[base + j] = float(exp(double(loadFloat(code, logits, base + j)) - logSum));
  if (lane == 0) rowLossAndLabel(code, logits, labels, r, c, base, logSum, rowLoss, badLabel);
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
                               int* badLabel, Stream s, bool warpPerRow) {
  if (m <= 0) return;
  if (warpPerRow)
    crossEntropyForwardWarpKernel<<<static_cast<unsigned>((m + kRowsPerBlock - 1) / kRowsPerBlock), kBlock, 0,
                                    s>>>(code, logits, labels, m, c, probs, rowLoss, badLabel);
  else
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
