// Bit-exact conversions between fp32 and the 8-, 6- and 4-bit floating-point formats of fp8 and
// block-scaled training: E4M3 ("fn": no inf, one NaN pattern per sign, max 448), E5M2 (IEEE-like:
// inf and NaN, max 57344), E3M2 and E2M3 (OCP MX fp6, all codes finite), E2M1 (OCP MX fp4 / NVFP4
// values: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}), and the scale format E8M0 (a power of two, 0xFF = NaN).
//
// Rounding is to nearest, ties to even, on the fp32 bits (integer arithmetic only, as float16.h:
// the same bits on every CPU and, under nvcc, on the device), or stochastic: the dropped bits are
// compared with random bits, so a value rounds up with probability (distance to the lower code) /
// (code spacing) — the expectation is the input. Overflow has two rules because the references
// differ (README "fp8 formats"): Saturate gives +-max for every finite overflow and for +-inf
// (PyTorch's float8_e4m3fn cast, Transformer Engine's kernels); NonSaturating gives inf where the
// format has one (PyTorch's float8_e5m2 cast) and NaN where it has none (E4M3, as PyTorch before
// saturation). The fp6/fp4 formats have neither inf nor NaN: they always saturate, and a NaN input
// gives code 0 with the sign kept (their block scale carries the NaN: see block_scaling.h).
// Subnormals are kept, never flushed; fp32 inputs below half the smallest subnormal give +-0.
#pragma once

#include <cstdint>

#include "kernels/common/float16.h"
#include "kernels/common/host_device.h"

namespace amp {

enum class MiniFormat : std::uint8_t { E4M3, E5M2, E3M2, E2M3, E2M1 };
enum class Overflow : std::uint8_t { Saturate, NonSaturating };

// A format's layout. maxCode is the largest finite magnitude code; specials: 0 = every code is
// finite, 1 = "fn" (only S.1111.111 is NaN), 2 = IEEE (all-ones exponent: inf / NaN).
struct MiniLayout {
  int expBits, manBits, bias;
  std::uint32_t maxCode;
  int specials;
};

AMP_HD constexpr MiniLayout miniLayout(MiniFormat f) {
  switch (f) {
    case MiniFormat::E4M3: return {4, 3, 7, 0x7Eu, 1};
    case MiniFormat::E5M2: return {5, 2, 15, 0x7Bu, 2};
    case MiniFormat::E3M2: return {3, 2, 3, 0x1Fu, 0};
    case MiniFormat::E2M3: return {2, 3, 1, 0x1Fu, 0};
    case MiniFormat::E2M1: return {2, 1, 1, 0x7u, 0};
  }
  return {4, 3, 7, 0x7Eu, 1};
}

AMP_HD constexpr int miniBits(MiniFormat f) {
  return 1 + miniLayout(f).expBits + miniLayout(f).manBits;
}

// Decodes a code (sign in bit miniBits - 1) exactly into fp32.
AMP_HD inline float miniToFloat(std::uint32_t code, MiniFormat f) {
  const MiniLayout L = miniLayout(f);
  const int width = L.expBits + L.manBits;
  const std::uint32_t sign = ((code >> width) & 1u) << 31;
  const std::uint32_t mag = code & ((1u << width) - 1u);
  const std::uint32_t e = mag >> L.manBits, m = mag & ((1u << L.manBits) - 1u);
  const std::uint32_t allOnes = (1u << L.expBits) - 1u;
  if (L.specials == 1 && mag == ((1u << width) - 1u)) return bitsToFloat(sign | 0x7FC00000u);
  if (L.specials == 2 && e == allOnes) return bitsToFloat(sign | (m ? 0x7FC00000u : 0x7F800000u));
  if (e != 0)  // normal: (1 + m / 2^man) * 2^(e - bias), rebiased into fp32's exponent
    return bitsToFloat(sign | ((e - L.bias + 127u) << 23) | (m << (23 - L.manBits)));
  // subnormal: m * 2^(1 - bias - man); m < 2^man converts exactly, the power of two is exact
  const float v = static_cast<float>(m) * bitsToFloat(static_cast<std::uint32_t>(1 - L.bias - L.manBits + 127) << 23);
  return bitsToFloat(floatBits(v) | sign);
}

// Encodes fp32 into format f. random: 32 uniformly random bits for stochastic rounding (its top
// bits are compared with the dropped ones), used only when stochastic is true. overflowed (optional): set when a finite or infinite input fell outside the
// format's range (saturated or made inf/NaN) — the statistics count it.
AMP_HD inline std::uint32_t floatToMini(float value, MiniFormat f, Overflow rule, bool stochastic = false,
                                        std::uint32_t random = 0, bool* overflowed = nullptr) {
  const MiniLayout L = miniLayout(f);
  const int width = L.expBits + L.manBits;
  const std::uint32_t x = floatBits(value);
  const std::uint32_t sign = (x >> 31) << width;
  const std::uint32_t absx = x & 0x7FFFFFFFu;
  const std::uint32_t nanCode = L.specials == 2 ? (0x7Fu >> (7 - width)) : ((1u << width) - 1u);
  const std::uint32_t infCode = ((1u << L.expBits) - 1u) << L.manBits;  // IEEE formats only
  auto overflow = [&]() -> std::uint32_t {
    if (overflowed) *overflowed = true;
    if (rule == Overflow::Saturate || L.specials == 0) return sign | L.maxCode;
    return sign | (L.specials == 2 ? infCode : nanCode);
  };
  if (absx > 0x7F800000u) return L.specials == 0 ? sign : sign | nanCode;  // NaN
  if (absx == 0x7F800000u) return overflow();                              // +-inf
  const int emin = 1 - L.bias;                       // unbiased exponent of the smallest normal
  const int exp = static_cast<int>(absx >> 23) - 127;
  // The code before rounding (value truncated to the format's spacing) and the dropped bits.
  std::uint32_t code, rest, half;
  int shift;
  if (absx < 0x00800000u) return sign;  // fp32 subnormal: far below every format's half-subnormal
  const std::uint32_t significand = (absx & 0x7FFFFFu) | 0x800000u;  // 24 bits
  if (exp >= emin) {
    shift = 23 - L.manBits;
    if (exp - emin > 30) return overflow();  // keeps the shifted exponent field in 32 bits
    code = (static_cast<std::uint32_t>(exp - emin + 1) << L.manBits) | ((absx & 0x7FFFFFu) >> shift);
  } else {
    // Subnormal code: value / 2^(emin - man) = significand * 2^(exp - 23 - emin + man).
    shift = 23 - L.manBits + (emin - exp);
    if (shift > 24) {
      // Below half the smallest subnormal (or exactly half when shift is 25 and the significand
      // is 2^23): round to nearest gives 0; stochastic rounding may still give the smallest.
      if (!stochastic || shift > 31) return sign;
      const std::uint32_t dropped = significand;  // < 2^24 <= 2^(shift - 1)
      return sign | ((dropped + (random >> (32 - shift))) >> shift);
    }
    code = significand >> shift;
  }
  const std::uint32_t mask = (1u << shift) - 1u;
  rest = (exp >= emin ? absx : significand) & mask;
  half = 1u << (shift - 1);
  if (stochastic) {
    // The random number's top `shift` bits against the dropped bits: a carry out rounds up.
    if (rest + (random >> (32 - shift)) > mask) ++code;
  } else if (rest > half || (rest == half && (code & 1u))) {
    ++code;  // a carry out of the mantissa moves into the exponent field, as it should
  }
  if (code > L.maxCode) return overflow();
  return sign | code;
}

AMP_HD inline float roundToMini(float value, MiniFormat f, Overflow rule) {
  return miniToFloat(floatToMini(value, f, rule), f);
}

// The same value as roundToMini (round to nearest even), by arithmetic instead of bit fields:
// the format's spacing at the value's binade is a power of two q, so value / q is exact, rounds to
// the nearest even integer by the 2^23 addition (the FPU's default rounding; this project never
// contracts or reorders floating-point expressions), and times q is exact again. The format's
// constants are worked out once (the constructor), so the loops over whole tensors run a few
// branch-light instructions per value: the quantisers' hot path. overflowed as floatToMini's.
// Tests check it against floatToMini on every boundary case and 2^22 random fp32 patterns.
struct MiniRounder {
  MiniFormat format;
  Overflow rule;
  int emin, manBits;
  float maxv, overflowValue;  // what a value past the range becomes (its magnitude)
  AMP_HD MiniRounder(MiniFormat f, Overflow r) : format(f), rule(r) {
    const MiniLayout L = miniLayout(f);
    emin = 1 - L.bias;
    manBits = L.manBits;
    maxv = miniToFloat(L.maxCode, f);
    overflowValue = r == Overflow::Saturate || L.specials == 0 ? maxv
                    : bitsToFloat(L.specials == 2 ? 0x7F800000u : 0x7FC00000u);
  }
  AMP_HD float operator()(float value, bool* overflowed = nullptr) const {
    const std::uint32_t x = floatBits(value);
    const std::uint32_t absx = x & 0x7FFFFFFFu, sign = x & 0x80000000u;
    if (absx >= 0x7F800000u) return miniToFloat(floatToMini(value, format, rule, false, 0, overflowed), format);
    int e = static_cast<int>(absx >> 23) - 127;
    if (e < emin) e = emin;
    const float q = bitsToFloat(static_cast<std::uint32_t>(e - manBits + 127) << 23);
    const float invq = bitsToFloat(static_cast<std::uint32_t>(127 - (e - manBits)) << 23);
    const float t = bitsToFloat(absx) * invq;  // < 2^(man + 1): an integer part of at most 4 bits
    float r = ((t + 8388608.0f) - 8388608.0f) * q;
    if (r > maxv) {
      if (overflowed) *overflowed = true;
      r = overflowValue;
    }
    return bitsToFloat(floatBits(r) | sign);
  }
};

// The code of a value already in the format (what MiniRounder returned, or the overflow rule's
// max / inf / NaN): its fields moved into place, no rounding to do, so the quantisers write codes
// for a few instructions a value. Equal to floatToMini for every such value (tests: every code).
AMP_HD inline std::uint32_t miniCodeOfExact(float r, MiniFormat f) {
  const MiniLayout L = miniLayout(f);
  const std::uint32_t x = floatBits(r), absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) return floatToMini(r, f, Overflow::NonSaturating);  // inf / NaN codes
  const std::uint32_t sign = (x >> 31) << (L.expBits + L.manBits);
  const int emin = 1 - L.bias;
  const int e = static_cast<int>(absx >> 23) - 127;
  if (absx == 0) return sign;
  if (e < emin)  // a subnormal: |r| / 2^(emin - manBits) is its integer mantissa
    return sign | static_cast<std::uint32_t>(
                      bitsToFloat(absx) * bitsToFloat(static_cast<std::uint32_t>(127 - (emin - L.manBits)) << 23));
  return sign | (static_cast<std::uint32_t>(e + L.bias) << L.manBits) | ((absx & 0x7FFFFFu) >> (23 - L.manBits));
}

AMP_HD inline float roundToMiniFast(float value, MiniFormat f, Overflow rule, bool* overflowed = nullptr) {
  return MiniRounder(f, rule)(value, overflowed);
}

// The largest finite value and the smallest subnormal of a format.
AMP_HD inline float miniMax(MiniFormat f) { return miniToFloat(miniLayout(f).maxCode, f); }
AMP_HD inline float miniMinSubnormal(MiniFormat f) { return miniToFloat(1u, f); }
// floor(log2(max)): the "emax" of the OCP MX spec (8 for E4M3, 15 for E5M2, 2 for E2M1).
AMP_HD inline int miniEmax(MiniFormat f) {
  return static_cast<int>((floatBits(miniMax(f)) >> 23) & 0xFFu) - 127;
}

// ---- E8M0: the MX scale, 2^(code - 127); 0xFF is NaN --------------------------------------
constexpr std::uint8_t kE8m0Nan = 0xFF;

AMP_HD inline float e8m0ToFloat(std::uint8_t code) {
  if (code == kE8m0Nan) return bitsToFloat(0x7FC00000u);
  if (code == 0) return bitsToFloat(0x00400000u);  // 2^-127: an fp32 subnormal
  return bitsToFloat(static_cast<std::uint32_t>(code) << 23);
}

// A power-of-two exponent clamped into E8M0's range [-127, 127].
AMP_HD inline std::uint8_t e8m0FromExponent(int e) {
  if (e < -127) e = -127;
  if (e > 127) e = 127;
  return static_cast<std::uint8_t>(e + 127);
}

// fp32 to E8M0 as PyTorch's float8_e8m0fnu cast: the sign ignored, the exponent rounded up when
// the significand's first fraction bit is set (1.5 -> 2, 1.4999 -> 1: half up on the significand),
// NaN and inf to 0xFF, past 2^127 rounded up to NaN; fp32 subnormals give 2^-127 (code 0) up to
// 2^-127 itself and 2^-126 above it. Used by `convert` and the format inspector; the recipes pick
// their exponents in block_scaling.h.
AMP_HD inline std::uint8_t floatToE8m0(float v) {
  const std::uint32_t a = floatBits(v) & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return kE8m0Nan;
  const std::uint32_t e = a >> 23, m = a & 0x7FFFFFu;
  if (e == 0) return m > 0x400000u ? 1 : 0;
  return static_cast<std::uint8_t>((m & 0x400000u) ? e + 1 : e);  // 0xFE + 1 is 0xFF: NaN
}

}  // namespace amp
