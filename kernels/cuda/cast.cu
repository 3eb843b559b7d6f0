// Casts between fp32, fp16 and bf16 (RNE, overflow to inf, subnormals kept, NaN quiet) with the
// CPU's conversion code, so both backends produce the same bits; and the round trip through a
// 16-bit format that an fp32 GEMM output takes to equal a 16-bit GEMM output.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/vector_io.cuh"

namespace amp::cuda {

namespace {
struct CastBody {
  int srcCode, dstCode;
  const void* src;
  void* dst;
  template <int W>
  __device__ void run(std::int64_t i) {
    storeLanes<W>(dstCode, dst, i, loadLanes<W>(srcCode, src, i));
  }
};

struct RoundThroughBody {
  float* data;
  int throughCode;
  template <int W>
  __device__ void run(std::int64_t i) {
    Lanes<W> x = loadLanes<W>(0, data, i);
    for (int k = 0; k < W; ++k) x.v[k] = storedValue(throughCode, x.v[k]);
    storeLanes<W>(0, data, i, x);
  }
};

// Four elements per thread where the pointers allow it: a quarter of the threads.
unsigned gridForLanes(std::int64_t n) { return gridFor((n + 3) / 4); }
}  // namespace

__global__ void castKernel(int srcCode, const void* src, int dstCode, void* dst, std::int64_t n) {
  CastBody body{srcCode, dstCode, src, dst};
  forEachLanes(n, vectorAligned(src, dst), body);
}

__global__ void roundThroughKernel(float* data, std::int64_t n, int throughCode) {
  RoundThroughBody body{data, throughCode};
  forEachLanes(n, vectorAligned(data), body);
}

void launchCast(int srcCode, const void* src, int dstCode, void* dst, std::int64_t n, Stream s) {
  if (n > 0) castKernel<<<gridForLanes(n), kBlock, 0, s>>>(srcCode, src, dstCode, dst, n);
}

void launchRoundThrough(float* data, std::int64_t n, int throughCode, Stream s) {
  if (n > 0) roundThroughKernel<<<gridForLanes(n), kBlock, 0, s>>>(data, n, throughCode);
}

}  // namespace amp::cuda
