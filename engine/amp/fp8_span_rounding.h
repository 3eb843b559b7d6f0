// The quantisers' inner loops over a contiguous span of values whose scale factors are given per
// value (fp8_block_quantize.cpp fills them from the block scales): rounding, statistics and codes
// in loops without a branch on the value, so GCC does 8 values at a time on AVX2. They give the
// same bits as the per-element path in fp8_quantize.cpp (Quantizer::cast / record / codeOf, which
// the histogram steps still take): rounding to nearest by MiniRounder's arithmetic, stochastic
// rounding by floatToMini's carry rule done on the fp32 bits, and anything that is inf or NaN
// after its scale handed back to MiniRounder itself, value by value.
//
// Why per-value factor arrays rather than one factor per block: a block is 16 or 32 values along
// a row, or one value in each of 16-128 rows when the blocks run down the columns (the weight
// gradient's operands). With the factors laid out along the row both cases are the same
// contiguous loop, and the arrays stay in L1 (a span is at most kSpan values).
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/amp/fp8_quantize.h"
#include "kernels/common/minifloat.h"
#include "kernels/common/mix64.h"

namespace amp::fp8span {

constexpr int kSpan = 256;

// The sums Quantizer::record keeps, for one part of a tensor.
struct Counts {
  std::int64_t nonzero = 0, underflow = 0, overflows = 0, nonFinite = 0;
  double signalSq = 0, errorSq = 0;
  // Into a tensor's statistics, with the number of values counted.
  void addTo(QuantStats& s, std::int64_t count) const {
    s.count += count;
    s.nonzero += nonzero;
    s.underflow += underflow;
    s.overflow += overflows;
    s.nonFinite += nonFinite;
    s.signalSq += signalSq;
    s.errorSq += errorSq;
  }
};

// A format's rounding constants, worked out once (MiniRounder's, plus what stochastic rounding
// on the bits needs).
struct SpanRounder {
  MiniRounder round;
  bool stochastic;
  std::uint64_t seed;
  std::uint32_t maxBits;      // fp32 bits of the format's max: a rounded magnitude above it overflowed
  int normalShift;            // 23 - manBits: the fp32 mantissa bits a normal value drops
  float subnormalQuantum;     // 2^(emin - manBits): the format's smallest subnormal
  float invSubnormalQuantum;  // its inverse, for codes of subnormals
  int bias;
  SpanRounder(MiniFormat f, Overflow rule, bool sr, std::uint64_t s)
      : round(f, rule), stochastic(sr), seed(s), maxBits(floatBits(round.maxv)), normalShift(23 - round.manBits),
        subnormalQuantum(bitsToFloat(static_cast<std::uint32_t>(round.emin - round.manBits + 127) << 23)),
        invSubnormalQuantum(bitsToFloat(static_cast<std::uint32_t>(127 - (round.emin - round.manBits)) << 23)),
        bias(miniLayout(f).bias) {}

  // The stochastic rounding's 32 random bits for the element at flat index i (Quantizer::cast's).
  static std::uint32_t randomBits(std::uint64_t seed, std::int64_t i) {
    return static_cast<std::uint32_t>(mix64(seed ^ (std::uint64_t(i) * 0x9E3779B97F4A7C15ull)) >> 32);
  }

  // rounded[j] = cast((x[j] * a[j]) * b[j]); clipped[j]: it overflowed. Returns true when some
  // scaled value was inf or NaN: those lanes are then rounded again by MiniRounder (rare).
  // first: the flat index of x[0] (stochastic rounding's random bits).
  bool roundSpan(const float* __restrict x, const float* __restrict a, const float* __restrict b, int n,
                 std::int64_t first, float* __restrict rounded, std::uint8_t* __restrict clipped) const {
    std::uint32_t special = 0;
    const int emin = round.emin, manBits = round.manBits;
    const float maxv = round.maxv, overflowValue = round.overflowValue;
    if (!stochastic) {
      for (int j = 0; j < n; ++j) {
        const std::uint32_t bits = floatBits((x[j] * a[j]) * b[j]);
        const std::uint32_t absx = bits & 0x7FFFFFFFu;
        int e = static_cast<int>(absx >> 23) - 127;
        e = e < emin ? emin : e;
        const float q = bitsToFloat(static_cast<std::uint32_t>(e - manBits + 127) << 23);
        const float invq = bitsToFloat(static_cast<std::uint32_t>(127 - (e - manBits)) << 23);
        float r = ((bitsToFloat(absx) * invq + 8388608.0f) - 8388608.0f) * q;
        const bool over = r > maxv;
        r = over ? overflowValue : r;
        rounded[j] = bitsToFloat(floatBits(r) | (bits & 0x80000000u));
        clipped[j] = over;
        special |= absx >= 0x7F800000u ? 1u : 0u;
      }
    } else {
      // floatToMini's stochastic rule: the top `shift` random bits added to the dropped bits, a
      // carry rounding up. For a normal value shift is fixed, so the add is on the fp32 bits
      // (a carry moves into the exponent, as it should); below the format's normals the shift
      // grows with the distance, up to 31 (past it: 0, as floatToMini gives).
      const int shiftN = normalShift;
      // Members in locals: the uint8_t stores may alias *this, which would reload them per value.
      const std::uint32_t keep = ~((1u << shiftN) - 1u), overflowBits = floatBits(overflowValue), maxB = maxBits;
      const float quantum = subnormalQuantum;
      const std::uint64_t seedBits = seed;
      for (int j = 0; j < n; ++j) {
        const std::uint32_t bits = floatBits((x[j] * a[j]) * b[j]);
        const std::uint32_t absx = bits & 0x7FFFFFFFu;
        const std::uint32_t rnd = randomBits(seedBits, first + j);
        const int e = static_cast<int>(absx >> 23) - 127;
        const std::uint32_t normal = (absx + (rnd >> (32 - shiftN))) & keep;
        const int shift = shiftN + (emin - e);
        const int sh = shift < 1 ? 1 : (shift > 31 ? 31 : shift);  // lanes outside use the other result
        const std::uint32_t significand = (absx & 0x7FFFFFu) | 0x800000u;
        std::uint32_t code = (significand + (rnd >> (32 - sh))) >> sh;
        code &= 0u - static_cast<std::uint32_t>(shift <= 31);  // a mask: a select would be split into branches
        // code < 2^23 as a float by the 2^23 trick (no int conversion: GCC keeps those scalar here).
        const float sub = (bitsToFloat(code | 0x4B000000u) - 8388608.0f) * quantum;
        const bool isNormal = e >= emin;
        const bool over = isNormal & (normal > maxB);
        // Merged by masks, not selected: GCC would compute `sub` only on the subnormal lanes'
        // branch, and a float operation under a condition stops its vectoriser (trapping math).
        const std::uint32_t normalMask = 0u - static_cast<std::uint32_t>(isNormal);
        const std::uint32_t overMask = 0u - static_cast<std::uint32_t>(over);
        std::uint32_t r = (normal & normalMask) | (floatBits(sub) & ~normalMask);
        r = (overflowBits & overMask) | (r & ~overMask);
        rounded[j] = bitsToFloat(r | (bits & 0x80000000u));
        clipped[j] = over;
        special |= absx >= 0x7F800000u ? 1u : 0u;
      }
    }
    return special != 0;
  }

  // The lanes roundSpan flagged: inf or NaN after the scale, by Quantizer::cast's own rules.
  void roundSpecials(const float* x, const float* a, const float* b, int n, std::int64_t first, float* rounded,
                     std::uint8_t* clipped) const {
    for (int j = 0; j < n; ++j) {
      const float sv = (x[j] * a[j]) * b[j];
      if (std::isfinite(sv)) continue;
      bool over = false;
      if (!stochastic) {
        rounded[j] = round(sv, &over);
      } else {
        const MiniFormat f = round.format;
        rounded[j] = miniToFloat(floatToMini(sv, f, round.rule, true, randomBits(seed, first + j), &over), f);
      }
      clipped[j] = over;
    }
  }

  // codes[j] of values already in the format (miniCodeOfExact without its branches; a value
  // that is inf or NaN gets its code from miniCodeOfExact afterwards).
  void codesOf(const float* __restrict rounded, int n, std::uint8_t* __restrict codes) const {
    // Members in locals: the uint8_t stores may alias *this, which would reload them per value.
    const int emin = round.emin, manBits = round.manBits, signAt = miniBits(round.format) - 1, bias_ = bias;
    std::uint32_t special = 0;
    for (int j = 0; j < n; ++j) {
      const std::uint32_t x = floatBits(rounded[j]), absx = x & 0x7FFFFFFFu;
      const int e = static_cast<int>(absx >> 23) - 127;
      const std::uint32_t sign = (x >> 31) << signAt;
      const std::uint32_t normal =
          (static_cast<std::uint32_t>(e + bias_) << manBits) | ((absx & 0x7FFFFFu) >> (23 - manBits));
      // A subnormal's integer mantissa: its fp32 significand shifted down to the format's
      // quantum, in integers (a float multiply under a condition is a branch to GCC under
      // trapping math); 0 for 0, whose shift passes 31.
      const int shift = 23 - manBits + emin - e;
      const std::uint32_t sub = ((absx & 0x7FFFFFu) | 0x800000u) >> (shift < 0 ? 0 : (shift > 31 ? 31 : shift));
      codes[j] = static_cast<std::uint8_t>(sign | (e < emin ? sub : normal));
      special |= absx >= 0x7F800000u ? 1u : 0u;
    }
    if (special)
      for (int j = 0; j < n; ++j)
        if (!std::isfinite(rounded[j])) codes[j] = static_cast<std::uint8_t>(miniCodeOfExact(rounded[j], round.format));
  }
};

// Quantizer::record's rules over a span, without a branch on the value (a skipped term adds +0.0,
// which leaves a sum's bits as they were); the sums in lanes, in a fixed order for a given build.
inline void countSpan(const float* x, const float* q, const std::uint8_t* clipped, int n, Counts& c) {
  // 32-bit counters (a span is at most kSpan values): eight lanes a vector instead of four.
  std::int32_t nonzero = 0, underflow = 0, overflows = 0, nonFinite = 0;
  double signalSq = 0, errorSq = 0;
#pragma omp simd reduction(+ : nonzero, underflow, overflows, nonFinite, signalSq, errorSq)
  for (int j = 0; j < n; ++j) {
    const float v = x[j];
    const bool finite = std::isfinite(v);
    nonFinite += !finite;
    overflows += finite & (clipped[j] != 0);
    nonzero += finite & (v != 0);
    underflow += finite & (v != 0) & (q[j] == 0);
    // A pair left out adds +0.0: its operands masked to zero bits, not selected (GCC turns a
    // select feeding a float operation into a branch under trapping math: a scalar loop).
    const std::uint32_t keep = 0u - static_cast<std::uint32_t>(finite & std::isfinite(q[j]));
    const double vd = double(bitsToFloat(floatBits(v) & keep)), qd = double(bitsToFloat(floatBits(q[j]) & keep));
    const double d = qd - vd;
    signalSq += vd * vd;
    errorSq += d * d;
  }
  c.nonzero += nonzero;
  c.underflow += underflow;
  c.overflows += overflows;
  c.nonFinite += nonFinite;
  c.signalSq += signalSq;
  c.errorSq += errorSq;
}

}  // namespace amp::fp8span
