// Each image is a (rows x cols) matrix transposed in square tiles, so that both the reads and
// the writes stay within a few cache lines per tile; images (and tile rows of one large image)
// are spread over the OpenMP threads.
#include "kernels/cpu/image_transpose.h"

#include "kernels/cpu/parallel_grain.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace amp::cpu {

namespace {

constexpr std::int64_t kTile = 32;

// dst (cols x rows) = src (rows x cols)^T for `count` matrices one after the other.
template <class T>
void transposeMatrices(const T* src, T* dst, std::int64_t count, std::int64_t rows,
                       std::int64_t cols) {
  const std::int64_t tileRows = (rows + kTile - 1) / kTile;
  const std::int64_t work = count * tileRows;
  const int threads = loopThreads(work, kTile * cols);  // a job is kTile rows of a matrix
#pragma omp parallel for num_threads(threads) if (threads > 1)
  for (std::int64_t job = 0; job < work; ++job) {
    const std::int64_t m = job / tileRows, r0 = job % tileRows * kTile;
    const T* in = src + m * rows * cols;
    T* out = dst + m * rows * cols;
    const std::int64_t r1 = std::min(rows, r0 + kTile);
    for (std::int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const std::int64_t c1 = std::min(cols, c0 + kTile);
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) out[c * rows + r] = in[r * cols + c];
    }
  }
}

}  // namespace

void transposeImage(bool toNhwc, std::size_t elementBytes, const void* src, void* dst,
                    std::int64_t n, std::int64_t c, std::int64_t hw) {
  if (elementBytes != 1 && elementBytes != 2 && elementBytes != 4)
    throw std::invalid_argument("transpose: elements of " + std::to_string(elementBytes) +
                                " bytes are not supported");
  if (n <= 0 || c <= 0 || hw <= 0) return;
  // NCHW -> NHWC transposes each image's (c x hw) matrix; NHWC -> NCHW its (hw x c) one.
  const std::int64_t rows = toNhwc ? c : hw, cols = toNhwc ? hw : c;
  if (rows == 1 || cols == 1) {  // one channel or one pixel: both layouts are the same bytes
    std::memcpy(dst, src, static_cast<std::size_t>(n * c * hw) * elementBytes);
    return;
  }
  switch (elementBytes) {
    case 1:
      return transposeMatrices(static_cast<const std::uint8_t*>(src), static_cast<std::uint8_t*>(dst),
                               n, rows, cols);
    case 2:
      return transposeMatrices(static_cast<const std::uint16_t*>(src),
                               static_cast<std::uint16_t*>(dst), n, rows, cols);
    case 4:
      return transposeMatrices(static_cast<const std::uint32_t*>(src),
                               static_cast<std::uint32_t*>(dst), n, rows, cols);
  }
}

}  // namespace amp::cpu
