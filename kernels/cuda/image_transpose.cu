// NCHW <-> NHWC transposes (image_kernels.h): each image is a (rows x cols) matrix moved through
// 32 x 32 tiles in shared memory, so that both the reads and the writes of a warp are
// consecutive addresses (a naive gather would read or write with a stride of C or H * W).
// The tile's row of 33 avoids shared-memory bank conflicts on the transposed read.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/image_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

namespace {

constexpr int kTile = 32, kTileRows = 8;  // 32 x 8 threads move a 32 x 32 tile
constexpr std::int64_t kMaxGrid = 65535;

template <class T>
__global__ void __launch_bounds__(kTile * kTileRows)
    transposeKernel(const T* src, T* dst, std::int64_t count, std::int64_t rows,
                    std::int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];
  const std::int64_t tilesDown = (rows + kTile - 1) / kTile;
  for (std::int64_t m = blockIdx.z; m < count; m += gridDim.z) {
    const T* in = src + m * rows * cols;
    T* out = dst + m * rows * cols;
    for (std::int64_t ty = blockIdx.y; ty < tilesDown; ty += gridDim.y) {
      const std::int64_t r0 = ty * kTile, c0 = std::int64_t(blockIdx.x) * kTile;
      for (int j = threadIdx.y; j < kTile; j += kTileRows) {
        const std::int64_t r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[r * cols + c];
      }
      __syncthreads();
      for (int j = threadIdx.y; j < kTile; j += kTileRows) {
        const std::int64_t c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols) out[c * rows + r] = tile[threadIdx.x][j];
      }
      __syncthreads();  // the tile is refilled by the next round
    }
  }
}

template <class T>
void launch(const void* src, void* dst, std::int64_t count, std::int64_t rows, std::int64_t cols,
            Stream s) {
  const std::int64_t across = (cols + kTile - 1) / kTile, down = (rows + kTile - 1) / kTile;
  if (across > (std::int64_t(1) << 31) - 1)
    throw std::invalid_argument("transpose: " + std::to_string(cols) + " columns are too many");
  const dim3 grid(static_cast<unsigned>(across), static_cast<unsigned>(down < kMaxGrid ? down : kMaxGrid),
                  static_cast<unsigned>(count < kMaxGrid ? count : kMaxGrid));
  transposeKernel<T><<<grid, dim3(kTile, kTileRows), 0, s>>>(static_cast<const T*>(src),
                                                             static_cast<T*>(dst), count, rows, cols);
}

}  // namespace

void launchTransposeImage(bool toNhwc, std::size_t elementBytes, const void* src, void* dst,
                          std::int64_t n, std::int64_t c, std::int64_t hw, Stream s) {
  if (n <= 0 || c <= 0 || hw <= 0) return;
  // One channel or one position per image: both layouts are the same bytes (a model's
  // single-channel input, a 1x1 map), so a copy does it.
  if (c == 1 || hw == 1) {
    const cudaError_t e = cudaMemcpyAsync(dst, src, std::size_t(n * c * hw) * elementBytes,
                                          cudaMemcpyDeviceToDevice, s);
    if (e != cudaSuccess)
      throw std::runtime_error(std::string("transpose (a copy): ") + cudaGetErrorString(e));
    return;
  }
  // NCHW -> NHWC transposes each image's (c x hw) matrix; NHWC -> NCHW its (hw x c) one.
  const std::int64_t rows = toNhwc ? c : hw, cols = toNhwc ? hw : c;
  switch (elementBytes) {
    case 1: return launch<std::uint8_t>(src, dst, n, rows, cols, s);
    case 2: return launch<std::uint16_t>(src, dst, n, rows, cols, s);
    case 4: return launch<std::uint32_t>(src, dst, n, rows, cols, s);
  }
  throw std::invalid_argument("transpose: elements of " + std::to_string(elementBytes) +
                              " bytes are not supported");
}

}  // namespace amp::cuda
