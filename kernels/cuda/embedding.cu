// Token and position embeddings (backend.h: embeddingForward, embeddingBackward).
//
// Forward: y row m = wte[tokens[m]] + wpe[m % T], a gather and one fp32 add per element,
// rounded once, four elements per thread where the width allows.
//
// Backward: backend.h fixes the order of every sum (fp32, increasing row m), which the CPU's
// one pass over the rows gives for free and which a GPU's usual scatter with atomics would
// lose. So the rows are first sorted by token with CUB's radix sort, which is stable: within a
// token's bucket the rows stay in increasing m. Then a warp per (token, 32 columns) finds its
// bucket by binary search and adds its rows in bucket order, a lane per column, 32 rows' loads
// in flight at a time (the adds stay in order). That is O(M C) work in all, whatever the
// vocabulary, where a pass per token over all rows would be O(V M C). dwpe needs no sort: a
// thread per (position, column) adds its B rows in increasing b.
#include <cub/device/device_radix_sort.cuh>

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/transformer_kernels.h"
#include "kernels/cuda/vector_io.cuh"
#include "kernels/cuda/warp_rows.cuh"

namespace amp::cuda {

namespace {

template <int W>
__global__ void embeddingForwardKernel(EmbeddingShape s, const std::int32_t* tokens, FloatIn wte,
                                       FloatIn wpe, FloatOut y) {
  const std::int64_t quads = s.rows * s.width / W;
  for (std::int64_t q = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; q < quads;
       q += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = q * W, m = i / s.width, col = i - m * s.width;
    const std::int32_t token = tokens[m];
    Lanes<W> out;
    if (token >= 0 && token < s.vocab) {
      const Lanes<W> e = loadLanes<W>(wte.code, wte.data, token * s.width + col);
      const Lanes<W> p = loadLanes<W>(wpe.code, wpe.data, (m % s.t) * s.width + col);
      for (int k = 0; k < W; ++k) out.v[k] = e.v[k] + p.v[k];
    } else {
      for (int k = 0; k < W; ++k) out.v[k] = NAN;
    }
    storeLanes<W>(y.code, y.data, i, out);
  }
}

// The sort's input: each row's token as its key (V for a token out of range: a bucket of its
// own that nothing reads) and the row indices 0 .. M-1 as its values.
__global__ void sortKeysKernel(const std::int32_t* tokens, std::int64_t rows, std::int64_t vocab,
                               unsigned* keys, std::int32_t* rowIds) {
  for (std::int64_t m = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; m < rows;
       m += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int32_t token = tokens[m];
    keys[m] = token >= 0 && token < vocab ? static_cast<unsigned>(token)
                                          : static_cast<unsigned>(vocab);
    rowIds[m] = static_cast<std::int32_t>(m);
  }
}

// The first index of sorted keys[0, n) whose key is >= v.
__device__ inline std::int64_t lowerBound(const unsigned* keys, std::int64_t n, std::int64_t v) {
  std::int64_t lo = 0, hi = n;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (std::int64_t(keys[mid]) < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

constexpr int kRowsInFlight = 32;  // one row index per lane, then a load of each row per lane

__global__ void __launch_bounds__(kBlock)
    tokenGradKernel(EmbeddingShape s, FloatIn dy, const unsigned* keys,
                    const std::int32_t* sortedRows, FloatOut dwte) {
  const int lane = threadIdx.x % 32;
  const std::int64_t chunks = (s.width + 31) / 32;
  for (std::int64_t w = firstRowOfWarp(); w < s.vocab * chunks; w += rowStride()) {
    const std::int64_t v = w / chunks, col = (w - v * chunks) * 32 + lane;
    const std::int64_t lo = lowerBound(keys, s.rows, v), hi = lowerBound(keys, s.rows, v + 1);
    float sum = 0.f;
    for (std::int64_t k0 = lo; k0 < hi; k0 += kRowsInFlight) {
      const int count = hi - k0 < kRowsInFlight ? static_cast<int>(hi - k0) : kRowsInFlight;
      const std::int32_t mine = lane < count ? sortedRows[k0 + lane] : 0;
      float values[kRowsInFlight];
#pragma unroll
      for (int r = 0; r < kRowsInFlight; ++r) {
        const std::int64_t m = __shfl_sync(kFullWarp, mine, r);
        values[r] = r < count && col < s.width ? loadFloat(dy.code, dy.data, m * s.width + col) : 0.f;
      }
#pragma unroll
      for (int r = 0; r < kRowsInFlight; ++r)
        if (r < count) sum += values[r];
    }
    if (col < s.width) storeFloat(dwte.code, dwte.data, v * s.width + col, sum);
  }
}

__global__ void positionGradKernel(EmbeddingShape s, FloatIn dy, FloatOut dwpe) {
  const std::int64_t total = s.positions * s.width, batch = s.rows / s.t;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t t = e / s.width, col = e - t * s.width;
    float sum = 0.f;
    if (t < s.t) {
#pragma unroll 8
      for (std::int64_t b = 0; b < batch; ++b)
        sum += loadFloat(dy.code, dy.data, (b * s.t + t) * s.width + col);
    }
    storeFloat(dwpe.code, dwpe.data, e, sum);
  }
}

// Keys 0 .. V (V: out of range) need this many low bits sorted.
int keyBits(std::int64_t vocab) {
  int bits = 1;
  while ((std::int64_t(1) << bits) <= vocab) ++bits;
  return bits;
}

std::size_t sortTempBytes(const EmbeddingShape& s) {
  std::size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const unsigned*>(nullptr),
                                  static_cast<unsigned*>(nullptr),
                                  static_cast<const std::int32_t*>(nullptr),
                                  static_cast<std::int32_t*>(nullptr), static_cast<int>(s.rows),
                                  0, keyBits(s.vocab));
  return bytes;
}

// The workspace: keys and row indices before and after the sort, then CUB's scratch; each
// piece starts on a 256-byte boundary.
std::int64_t rounded(std::int64_t bytes) { return (bytes + 255) / 256 * 256; }

struct SortBuffers {
  unsigned *keysIn, *keysOut;
  std::int32_t *rowsIn, *rowsOut;
  void* temp;
  std::size_t tempBytes;
};

SortBuffers sortBuffers(const EmbeddingShape& s, void* workspace) {
  auto* base = static_cast<char*>(workspace);
  const std::int64_t piece = rounded(s.rows * 4);
  return {reinterpret_cast<unsigned*>(base), reinterpret_cast<unsigned*>(base + piece),
          reinterpret_cast<std::int32_t*>(base + 2 * piece),
          reinterpret_cast<std::int32_t*>(base + 3 * piece), base + 4 * piece, sortTempBytes(s)};
}

}  // namespace

void launchEmbeddingForward(const EmbeddingShape& s, const std::int32_t* tokens, FloatIn wte,
                            FloatIn wpe, FloatOut y, Stream st) {
  if (s.rows <= 0 || s.width <= 0) return;
  if (s.width % 4 == 0 && quadAligned({wte.data, wpe.data, y.data}))
    embeddingForwardKernel<4><<<gridFor(s.rows * s.width / 4), kBlock, 0, st>>>(s, tokens, wte,
                                                                                 wpe, y);
  else
    embeddingForwardKernel<1><<<gridFor(s.rows * s.width), kBlock, 0, st>>>(s, tokens, wte, wpe,
                                                                            y);
}

std::int64_t embeddingBackwardWorkspaceBytes(const EmbeddingShape& s) {
  if (s.rows <= 0) return 0;
  return 4 * rounded(s.rows * 4) + static_cast<std::int64_t>(sortTempBytes(s));
}

void launchEmbeddingBackward(const EmbeddingShape& s, FloatIn dy, const std::int32_t* tokens,
                             FloatOut dwte, FloatOut dwpe, void* workspace,
                             std::int64_t workspaceBytes, Stream st) {
  if (s.width <= 0) return;
  const unsigned* keys = nullptr;
  const std::int32_t* sortedRows = nullptr;
  if (s.rows > 0) {
    if (workspaceBytes < embeddingBackwardWorkspaceBytes(s))
      throw std::invalid_argument("embedding backward: workspace too small");
    const SortBuffers b = sortBuffers(s, workspace);
    sortKeysKernel<<<gridFor(s.rows), kBlock, 0, st>>>(tokens, s.rows, s.vocab, b.keysIn,
                                                        b.rowsIn);
    std::size_t tempBytes = b.tempBytes;
    const cudaError_t sorted = cub::DeviceRadixSort::SortPairs(
        b.temp, tempBytes, b.keysIn, b.keysOut, b.rowsIn, b.rowsOut, static_cast<int>(s.rows), 0,
        keyBits(s.vocab), st);
    if (sorted != cudaSuccess)
      throw std::runtime_error(std::string("embedding backward: sorting the tokens failed: ") +
                               cudaGetErrorString(sorted));
    keys = b.keysOut;
    sortedRows = b.rowsOut;
  }
  const std::int64_t tokenWarps = s.vocab * ((s.width + 31) / 32);
  if (tokenWarps > 0)
    tokenGradKernel<<<gridForRows(tokenWarps), kBlock, 0, st>>>(s, dy, keys, sortedRows, dwte);
  if (s.positions > 0)
    positionGradKernel<<<gridFor(s.positions * s.width), kBlock, 0, st>>>(s, dy, dwpe);
}

}  // namespace amp::cuda
