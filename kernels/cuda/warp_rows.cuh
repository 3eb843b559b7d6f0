// One warp per row, for the row-wise transformer kernels (layer norm, causal softmax). A row's
// elements are dealt to the lanes in chunks of W neighbours (W = 4 when the row length allows
// 16- or 8-byte accesses, else 1): chunk j of lane l starts at column (32 j + l) W, so each
// chunk-wide step of the warp reads one contiguous stretch of the row.
//
// Why a warp per row: the rows are short (a GPT's width, 128 to 1024; a context, 128 to 1024)
// and many, so a warp owns a whole row, its reductions are shuffles (no shared memory, no
// block-wide barrier) and every row is independent. Why WarpRow: each kernel makes two or three
// passes over its row (sum, then deviations, then output); the first kCached chunks of a lane
// (a row of up to 32 * W * kCached values) stay in registers between passes, so the row is read
// from memory once; longer rows re-read the rest in each pass (correct, just slower).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/vector_io.cuh"

namespace amp::cuda {

constexpr unsigned kFullWarp = 0xFFFFFFFFu;
constexpr int kRowsPerBlock = kBlock / 32;

// Every lane gets the warp's sum (a fixed butterfly: the same order on every call and lane).
__device__ inline float warpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullWarp, v, offset);
  return v;
}

__device__ inline float warpMax(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
}

template <int W>
__device__ inline std::int64_t chunkColumn(int chunk, int lane) {
  return (std::int64_t(chunk) * 32 + lane) * W;
}

// Chunks per lane that cover `length` columns (the same for every lane: warp-uniform loops).
template <int W>
__device__ inline int chunksFor(std::int64_t length) {
  return static_cast<int>((length + 32 * W - 1) / (32 * W));
}

// The row's warp and the grid's rows: warp `first` of the grid takes rows first, first + stride...
__device__ inline std::int64_t firstRowOfWarp() {
  return std::int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
}
__device__ inline std::int64_t rowStride() { return std::int64_t(gridDim.x) * kRowsPerBlock; }

inline unsigned gridForRows(std::int64_t rows) {
  const std::int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks < (1 << 20) ? blocks : (1 << 20));
}

// A lane's share of one row, Repr per chunk (what the passes need of it, e.g. the widened
// values). fetch(j) makes chunk j's Repr from memory; visit(repr, j) is one pass's work on it.
template <class Repr, int kCached>
struct WarpRow {
  Repr cache[kCached];
  int chunks;

  template <class Fetch>
  __device__ void load(int chunkCount, Fetch&& fetch) {
    chunks = chunkCount;
#pragma unroll
    for (int j = 0; j < kCached; ++j)
      if (j < chunks) cache[j] = fetch(j);
  }

  template <class Fetch, class Visit>
  __device__ void forEach(Fetch&& fetch, Visit&& visit) {
#pragma unroll
    for (int j = 0; j < kCached; ++j)
      if (j < chunks) visit(cache[j], j);
    for (int j = kCached; j < chunks; ++j) {
      Repr r = fetch(j);
      visit(r, j);
    }
  }
};

// Whether every pointer allows W = 4 accesses of its dtype at multiples of 4 elements.
inline bool quadAligned(std::initializer_list<const void*> ps) {
  for (const void* p : ps)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return true;
}

}  // namespace amp::cuda
