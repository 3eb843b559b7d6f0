// What the block-scaled GEMMs of sm_100 (cublaslt_fp8_gemm.cpp, MXFP8 and NVFP4) need besides
// the quantiser's own output: the block scales in cuBLASLt's tiles, and a K-contiguous copy of
// an E2M1 operand that lies the other way (the fp8 bytes use launchTransposeBytes).
//   - tiles: the destination zeroed (the padding of partial tiles must read as zero scales,
//     never as stale bytes), then one thread per scale writes it where
//     kernels/common/block_scale_tiles.h says: the CPU test checks that function, and the GPU
//     suite checks these bytes against tileBlockScales on the host.
//   - nibbles: one thread per destination byte gathers its two values from the source's nibbles
//     (kernels/common/quantized_layout.h's packing: the even element in the low nibble), so the
//     copy is exact and a free high nibble (an odd count) stays zero.
#include "kernels/common/block_scale_tiles.h"
#include "kernels/cuda/fp8_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

namespace {

__global__ void tileBlockScalesKernel(const std::uint8_t* scales, QuantLayout L, std::uint8_t* dst) {
  const std::int64_t n = L.blockCount();
  for (std::int64_t b = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; b < n;
       b += std::int64_t(gridDim.x) * blockDim.x)
    dst[tiledScaleOffset(L, b)] = scales[b];
}

__global__ void transposeNibblesKernel(const std::uint8_t* src, std::int64_t rows, std::int64_t cols,
                                       std::uint8_t* dst) {
  const std::int64_t n = rows * cols, bytes = (n + 1) / 2;
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < bytes;
       j += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint32_t v[2] = {0, 0};
    for (int h = 0; h < 2; ++h) {
      const std::int64_t e = 2 * j + h;  // element (c, r) of dst (cols x rows) is (r, c) of src
      if (e < n) v[h] = loadQuantCode(src, (e % rows) * cols + e / rows, MiniFormat::E2M1);
    }
    dst[j] = packE2m1(v[0], v[1]);
  }
}

}  // namespace

void launchTileBlockScales(const std::uint8_t* scales, const QuantLayout& layout, std::uint8_t* dst, Stream s) {
  const std::int64_t bytes = blockScaleTilesOf(layout).bytes();
  if (bytes <= 0) return;
  cudaMemsetAsync(dst, 0, std::size_t(bytes), s);
  const std::int64_t n = layout.blockCount();
  if (n > 0) tileBlockScalesKernel<<<gridFor(n), kBlock, 0, s>>>(scales, layout, dst);
}

void launchTransposeNibbles(const std::uint8_t* src, std::int64_t rows, std::int64_t cols, std::uint8_t* dst,
                            Stream s) {
  if (rows <= 0 || cols <= 0) return;
  transposeNibblesKernel<<<gridFor((rows * cols + 1) / 2), kBlock, 0, s>>>(src, rows, cols, dst);
}

}  // namespace amp::cuda
