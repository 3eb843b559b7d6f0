// Bit-exact conversions between fp32 and the two 16-bit formats (IEEE binary16 "fp16" and
// bfloat16 "bf16"): round to nearest, ties to even; overflow to +-inf; subnormals kept (never
// flushed); NaN stays a quiet NaN with its sign and top payload bits (as F16C hardware does).
// Integer arithmetic only, so results do not depend on the FPU's rounding or flush modes and the
// same code runs on the host and, under nvcc, on the device.
//
// On the device the fp16 conversions are the hardware's (cvt.rn.f16.f32 and back: the same
// round to nearest even, overflow to inf and subnormals, one instruction each): the branchy
// integer form made every fp16 kernel several times slower than its bf16 twin (an H200 spent
// 222 us on an fp16 bias gradient that took 60 us in bf16). The one difference is a NaN's
// payload (the hardware writes the canonical 0x7fff / 0x7fffffff), and any NaN may look like any
// other here (tests/gpu/gpu_test_support.h). Build with -DAMP_CUDA_SOFTWARE_HALF=ON to run the
// integer form on the device too.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/common/host_device.h"

#if defined(__CUDACC__) && !defined(AMP_CUDA_SOFTWARE_HALF)
#include <cuda_fp16.h>
#define AMP_DEVICE_HALF_CONVERSIONS 1
#endif

namespace amp {

AMP_HD inline std::uint32_t floatBits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

AMP_HD inline float bitsToFloat(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The integer forms (the host's always; see the top of the file for the device's).
AMP_HD inline std::uint16_t floatToHalfBitsInteger(float f) {
  const std::uint32_t x = floatBits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) {  // inf or NaN
    if (absx == 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
    return static_cast<std::uint16_t>(sign | 0x7E00u | ((absx >> 13) & 0x03FFu));
  }
  const int exp = static_cast<int>(absx >> 23) - 127;  // unbiased fp32 exponent
  if (exp >= 16) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65536: inf
  if (exp >= -14) {
    // Normal fp16 range: keep 10 of 23 mantissa bits, round the 13 dropped ones to even. A
    // carry out of the mantissa correctly bumps the exponent (and 65520.. becomes inf).
    std::uint32_t h = ((static_cast<std::uint32_t>(exp + 15)) << 10) | ((absx >> 13) & 0x3FFu);
    const std::uint32_t rest = absx & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  if (exp < -25) return static_cast<std::uint16_t>(sign);  // below half of 2^-24: to zero
  // Subnormal fp16 (value = m * 2^-24): shift the full significand right and round to even.
  const std::uint32_t mant = (absx & 0x7FFFFFu) | 0x800000u;  // 24-bit significand
  const int shift = -exp - 1;                                   // 14..24
  std::uint32_t h = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

AMP_HD inline float halfBitsToFloatInteger(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1Fu)  // inf, or NaN made quiet (bit 22) as F16C does
    return bitsToFloat(sign | 0x7F800000u | (mant ? 0x400000u | (mant << 13) : 0u));
  if (exp != 0) return bitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bitsToFloat(sign);  // +-0
  // Subnormal half: normalise into an fp32 normal.
  std::uint32_t e = 113;  // exponent field of 2^-14
  while (!(mant & 0x400u)) {
    mant <<= 1;
    --e;
  }
  return bitsToFloat(sign | (e << 23) | ((mant & 0x3FFu) << 13));
}

AMP_HD inline std::uint16_t floatToHalfBits(float f) {
#if defined(AMP_DEVICE_HALF_CONVERSIONS) && defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  return floatToHalfBitsInteger(f);
#endif
}

AMP_HD inline float halfBitsToFloat(std::uint16_t h) {
#if defined(AMP_DEVICE_HALF_CONVERSIONS) && defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  return halfBitsToFloatInteger(h);
#endif
}

AMP_HD inline std::uint16_t floatToBf16Bits(float f) {
  const std::uint32_t x = floatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)  // NaN: keep sign and top payload, force quiet
    return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  // Round to nearest even on the dropped 16 bits; carries propagate into the exponent, so
  // values past bf16's max round to inf and subnormals round within the subnormal range.
  const std::uint32_t lsb = (x >> 16) & 1u;
  return static_cast<std::uint16_t>((x + 0x7FFFu + lsb) >> 16);
}

AMP_HD inline float bf16BitsToFloat(std::uint16_t b) {
  return bitsToFloat(static_cast<std::uint32_t>(b) << 16);
}

AMP_HD inline float roundToHalf(float f) { return halfBitsToFloat(floatToHalfBits(f)); }
AMP_HD inline float roundToBf16(float f) { return bf16BitsToFloat(floatToBf16Bits(f)); }

}  // namespace amp
