// Exponent histogram of t * multiplier with the CPU's binning (exponent_bins.h): a power-of-two
// multiplier bins from the bits, any other multiplies in double first. Counts are exact, so they
// equal the CPU's. Per-block counts in shared memory, then one atomic add per bin and block.
#include "kernels/common/exponent_bins.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

static_assert(kHistogramSlots == kHistBins + 4, "histogram slots: bins + 4 range counts");

__global__ void histogramKernel(int code, const void* data, std::int64_t n, double multiplier,
                                bool powerOfTwo, int shift, unsigned long long* counts) {
  __shared__ unsigned long long local[kHistogramSlots];
  for (int i = threadIdx.x; i < kHistogramSlots; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float v = loadFloat(code, data, i);
    const ScaledBin b = powerOfTwo ? binScaledByPowerOfTwo(v, shift) : binDouble(double(v) * multiplier);
    atomicAdd(&local[b.bin], 1ull);
    if (b.underflow) atomicAdd(&local[kHistBins + 0], 1ull);
    if (b.subnormal) atomicAdd(&local[kHistBins + 1], 1ull);
    if (b.overflow) atomicAdd(&local[kHistBins + 2], 1ull);
    if (b.nonFinite) atomicAdd(&local[kHistBins + 3], 1ull);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kHistogramSlots; i += blockDim.x)
    if (local[i]) atomicAdd(&counts[i], local[i]);
}

void launchHistogram(int code, const void* data, std::int64_t n, double multiplier,
                     bool powerOfTwo, int shift, unsigned long long* counts, Stream s) {
  if (n > 0)
    histogramKernel<<<gridFor(n, 512), kBlock, 0, s>>>(code, data, n, multiplier, powerOfTwo,
                                                      shift, counts);
}

}  // namespace amp::cuda
