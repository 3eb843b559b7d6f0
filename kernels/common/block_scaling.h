// The scales of fp8 and block-scaled training, per element or per block, shared by the CPU loops
// and (under nvcc) the CUDA kernels so both pick the same scale bit for bit.
//
//   per tensor (Transformer Engine's delayed and current scaling): scale = (max / amax) / 2^margin
//     in fp32; the operand is cast(x * scale) and the GEMM multiplies by 1 / scale afterwards.
//   MX (OCP Microscaling, MXFP8 / MXFP4): one E8M0 power of two per block of 32 along the
//     reduction dimension; the element is cast(x / 2^e). The shared exponent e:
//       Floor      floor(log2(amax)) - emax          (the OCP spec; amax / 2^e in [2^emax, 2^(emax+1)),
//                                                     so E4M3 clips values between 448 and 512)
//       Ceil       ceil(log2(amax)) - emax           (never clips; up to a binade of range unused)
//       RoundUp    ceil(log2(amax / max))            (Transformer Engine, the "MXFP8 recipes" paper:
//                                                     the smallest power of two that fits amax)
//   blockwise (DeepSeek-V3): fp32 scale max / amax per 1x128 or 128x128 block, or its power of
//     two rounded down (so amax * scale <= max still holds);
//   NVFP4: an fp32 scale per tensor, S = (448 * 6) / amax, and an E4M3 scale per block of 16,
//     cast(amax_block / 6 * S); the element is cast_E2M1(x * S / s_block) and the value is
//     e2m1 * s_block / S.
// A zero or non-finite amax never makes a scale: per-tensor recipes keep the previous one (the
// caller's), blocks of zeros take the smallest scale (their values stay 0), a non-finite block
// amax gives a NaN scale (E8M0 0xFF), so the block decodes to NaN as the hardware's would.
#pragma once

#include <cstdint>

#include "kernels/common/minifloat.h"

namespace amp {

enum class MxRounding : std::uint8_t { Floor, Ceil, RoundUp };

// floor(log2(a)) of a positive finite fp32 (subnormals included), exactly.
AMP_HD inline int floorLog2(float a) {
  const std::uint32_t b = floatBits(a) & 0x7FFFFFFFu;
  if (b >= 0x00800000u) return static_cast<int>(b >> 23) - 127;
  int e = -127;  // a subnormal: 2^-149 * mantissa
  for (std::uint32_t m = b; m < 0x00400000u; m <<= 1) --e;
  return e;
}

AMP_HD inline bool isPowerOfTwo(float a) {
  const std::uint32_t b = floatBits(a) & 0x7FFFFFFFu;
  if (b >= 0x00800000u) return (b & 0x7FFFFFu) == 0;
  return b != 0 && (b & (b - 1)) == 0;
}

// The E8M0 code of a block's shared exponent. amax: the block's largest magnitude.
AMP_HD inline std::uint8_t mxScaleCode(float amax, MiniFormat element, MxRounding rounding) {
  const std::uint32_t b = floatBits(amax) & 0x7FFFFFFFu;
  if (b >= 0x7F800000u) return kE8m0Nan;
  if (b == 0) return e8m0FromExponent(-127);
  const int emax = miniEmax(element);
  const int fl = floorLog2(amax);
  switch (rounding) {
    case MxRounding::Floor: return e8m0FromExponent(fl - emax);
    case MxRounding::Ceil: return e8m0FromExponent((isPowerOfTwo(amax) ? fl : fl + 1) - emax);
    case MxRounding::RoundUp: {
      // The smallest e with amax / 2^e <= max: amax / 2^e has the significand of amax, so it fits
      // at e = fl - emax when amax's significand is at most max's, else one binade higher.
      const std::uint32_t sigA = (b >= 0x00800000u ? (b & 0x7FFFFFu) : 0u);
      const std::uint32_t sigMax = floatBits(miniMax(element)) & 0x7FFFFFu;
      if (b < 0x00800000u) return e8m0FromExponent(fl - emax + (isPowerOfTwo(amax) ? 0 : 1));
      return e8m0FromExponent(sigA <= sigMax ? fl - emax : fl - emax + 1);
    }
  }
  return kE8m0Nan;
}

// x / 2^e for an E8M0 code, exactly (a power-of-two multiply; NaN for the NaN code). The
// division is a multiplication by 2^-e, done in two steps where 2^-e is not an fp32 normal.
AMP_HD inline float divideByE8m0(float x, std::uint8_t code) {
  if (code == kE8m0Nan) return bitsToFloat(0x7FC00000u);
  const int e = static_cast<int>(code) - 127;
  const int half = e / 2;
  return (x * bitsToFloat(static_cast<std::uint32_t>(127 - half) << 23)) *
         bitsToFloat(static_cast<std::uint32_t>(127 - (e - half)) << 23);
}

AMP_HD inline float multiplyByE8m0(float x, std::uint8_t code) {
  if (code == kE8m0Nan) return bitsToFloat(0x7FC00000u);
  const int e = static_cast<int>(code) - 127;
  const int half = e / 2;
  return (x * bitsToFloat(static_cast<std::uint32_t>(127 + half) << 23)) *
         bitsToFloat(static_cast<std::uint32_t>(127 + (e - half)) << 23);
}

// Per-tensor scale from an amax: (max / amax) / 2^margin, or `previous` where amax is zero or
// not finite (Transformer Engine keeps the last scale rather than making an inf or a zero one).
AMP_HD inline float perTensorScale(float amax, float formatMax, int margin, float previous) {
  const std::uint32_t b = floatBits(amax) & 0x7FFFFFFFu;
  if (b == 0 || b >= 0x7F800000u) return previous;
  float s = formatMax / amax;
  if (margin != 0) s = s / bitsToFloat(static_cast<std::uint32_t>(127 + margin) << 23);
  // An amax so small that max / amax overflows fp32 keeps the previous scale as well.
  if ((floatBits(s) & 0x7FFFFFFFu) >= 0x7F800000u || s == 0.0f) return previous;
  return s;
}

// DeepSeek-V3's block scale: max / amax, or its power of two rounded down (power-of-two scales:
// exact to apply, and amax * scale still fits). Zero or non-finite amax: 1 (zeros stay zeros; a
// NaN stays NaN through the multiply).
AMP_HD inline float blockwiseScale(float amax, float formatMax, bool powerOfTwo) {
  const std::uint32_t b = floatBits(amax) & 0x7FFFFFFFu;
  if (b == 0 || b >= 0x7F800000u) return 1.0f;
  float s = formatMax / amax;
  if ((floatBits(s) & 0x7FFFFFFFu) >= 0x7F800000u) s = bitsToFloat(0x7F7FFFFFu);
  if (powerOfTwo) {
    const int e = floorLog2(s);
    s = e >= -126 ? bitsToFloat(static_cast<std::uint32_t>(e + 127) << 23) : bitsToFloat(1u << (e + 149));
  }
  return s;
}

// NVFP4's per-tensor encode scale (448 * 6) / amax; 1 where amax is zero or not finite.
AMP_HD inline float nvfp4TensorScale(float amax) {
  const std::uint32_t b = floatBits(amax) & 0x7FFFFFFFu;
  if (b == 0 || b >= 0x7F800000u) return 1.0f;
  const float s = (448.0f * 6.0f) / amax;
  return (floatBits(s) & 0x7FFFFFFFu) >= 0x7F800000u ? bitsToFloat(0x7F7FFFFFu) : s;
}

// NVFP4's block scale as its E4M3 code: cast(amax_block / 6 * S), saturating. A non-finite
// block amax gives E4M3's NaN.
AMP_HD inline std::uint32_t nvfp4BlockScaleCode(float blockAmax, float tensorScale) {
  return floatToMini((blockAmax / 6.0f) * tensorScale, MiniFormat::E4M3, Overflow::Saturate);
}

// ---- the 16x16 Hadamard transform of NVFP4's weight-gradient GEMM ---------------------------
// H16 / 4 (orthonormal), with a random sign per row (the "random" Hadamard transform): applied to
// both operands along the reduction dimension, it cancels in the product (H^T H = I) while
// spreading an outlier over 16 values, so one block's scale no longer has to cover it. In place
// on 16 values; the butterfly's order of additions is fixed, so every backend gets the same bits.
AMP_HD inline void hadamard16(float* v, std::uint16_t signs) {
  for (int i = 0; i < 16; ++i)
    if ((signs >> i) & 1u) v[i] = -v[i];
  for (int len = 1; len < 16; len <<= 1)
    for (int i = 0; i < 16; i += 2 * len)
      for (int j = i; j < i + len; ++j) {
        const float a = v[j], b = v[j + len];
        v[j] = a + b;
        v[j + len] = a - b;
      }
  for (int i = 0; i < 16; ++i) v[i] *= 0.25f;
}

}  // namespace amp
