// Storage tags for the three float dtypes, so CPU loops are written once and instantiated per
// storage type (no per-element switch): Tag::Storage is what sits in memory, load() widens it
// exactly to fp32 and store() rounds fp32 to it (RNE).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "kernels/common/float16.h"

namespace amp::cpu {

struct F32Tag {
  using Storage = float;
  static float load(float v) { return v; }
  static float store(float f) { return f; }
};
struct F16Tag {
  using Storage = std::uint16_t;
  static float load(std::uint16_t h) { return halfBitsToFloat(h); }
  static std::uint16_t store(float f) { return floatToHalfBits(f); }
};
struct Bf16Tag {
  using Storage = std::uint16_t;
  static float load(std::uint16_t b) { return bf16BitsToFloat(b); }
  static std::uint16_t store(float f) { return floatToBf16Bits(f); }
};

// Calls fn(Tag{}) for a float dtype code (0 = fp32, 1 = fp16, 2 = bf16, as amp::DType).
template <class Fn>
decltype(auto) dispatchFloatCode(int code, Fn&& fn) {
  switch (code) {
    case 0: return std::forward<Fn>(fn)(F32Tag{});
    case 1: return std::forward<Fn>(fn)(F16Tag{});
    case 2: return std::forward<Fn>(fn)(Bf16Tag{});
  }
  throw std::invalid_argument("operation needs a floating-point tensor");
}

}  // namespace amp::cpu
