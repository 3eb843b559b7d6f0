// Loads and stores of W neighbouring elements (W = 1 or 4), and the loop that walks an array
// four elements at a time. Why: the elementwise and optimizer kernels only move bytes, and one
// 4-byte (or 2-byte) access per thread leaves the H200's memory system far from busy: a 16-byte
// fp32 or 8-byte fp16/bf16 access moves four elements per instruction. The values are those of
// the element-by-element code (each element converted as loadFloat/storeFloat do); only the
// order in which a thread meets its elements changes, which matters for nothing but the order
// of double-precision norm sums.
#pragma once

#include <cstdint>

#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

template <int W>
struct Lanes {
  float v[W];
};

// Can every pointer take 16-byte accesses at element indices that are multiples of 4? (The
// allocator's blocks are 256-byte aligned; a view into the middle of one may not be.) Null
// pointers (absent state) do not count.
__device__ inline bool vectorAligned(const void* a, const void* b = nullptr,
                                     const void* c = nullptr, const void* d = nullptr) {
  const auto bits = reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) |
                    reinterpret_cast<std::uintptr_t>(c) | reinterpret_cast<std::uintptr_t>(d);
  return (bits & 15u) == 0;
}

__device__ inline float widen(int code, std::uint16_t bits) {
  return code == 1 ? halfBitsToFloat(bits) : bf16BitsToFloat(bits);
}

__device__ inline std::uint16_t narrow(int code, float v) {
  return code == 1 ? floatToHalfBits(v) : floatToBf16Bits(v);
}

// Elements i .. i + W - 1 of a dtype-coded array (i a multiple of W when W is 4).
template <int W>
__device__ inline Lanes<W> loadLanes(int code, const void* p, std::int64_t i) {
  Lanes<W> r;
  if constexpr (W == 1) {
    r.v[0] = loadFloat(code, p, i);
  } else {
    static_assert(W == 4, "1 or 4 lanes");
    if (code == 0) {
      const float4 x = static_cast<const float4*>(p)[i / 4];
      r.v[0] = x.x, r.v[1] = x.y, r.v[2] = x.z, r.v[3] = x.w;
    } else {
      const ushort4 h = static_cast<const ushort4*>(p)[i / 4];
      r.v[0] = widen(code, h.x), r.v[1] = widen(code, h.y);
      r.v[2] = widen(code, h.z), r.v[3] = widen(code, h.w);
    }
  }
  return r;
}

template <int W>
__device__ inline void storeLanes(int code, void* p, std::int64_t i, const Lanes<W>& r) {
  if constexpr (W == 1) {
    storeFloat(code, p, i, r.v[0]);
  } else {
    if (code == 0) {
      static_cast<float4*>(p)[i / 4] = make_float4(r.v[0], r.v[1], r.v[2], r.v[3]);
    } else {
      static_cast<ushort4*>(p)[i / 4] =
          make_ushort4(narrow(code, r.v[0]), narrow(code, r.v[1]), narrow(code, r.v[2]),
                       narrow(code, r.v[3]));
    }
  }
}

// Calls body.template run<4>(i) for i = 0, 4, 8, ... below n rounded down to a multiple of 4
// (when `aligned`), then body.template run<1>(i) for the rest, over a grid-stride loop along x.
template <class Body>
__device__ inline void forEachLanes(std::int64_t n, bool aligned, Body& body) {
  const std::int64_t first = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t quads = aligned ? n / 4 : 0;
  for (std::int64_t q = first; q < quads; q += stride) body.template run<4>(4 * q);
  for (std::int64_t i = 4 * quads + first; i < n; i += stride) body.template run<1>(i);
}

}  // namespace amp::cuda
