// fp32 <-> fp16/bf16 conversions: the scalar functions of kernels/common/float16.h against
// hand-written bit patterns, exhaustive round trips, 10^8 random floats against a second,
// differently written implementation (double arithmetic), and the vectorised array functions of
// kernels/cpu/convert.h against the scalar ones at every instruction-set level this CPU has.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>
#include <string>
#include <vector>

#include "kernels/common/float16.h"
#include "kernels/cpu/convert.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define AMP_TEST_X86 1
#endif

namespace amp {
namespace {

// ---- Second implementation: plain double arithmetic, no bit tricks -------------------------

struct RefFormat {
  int fractionBits;  // stored mantissa bits
  int minExponent;   // of the smallest normal
  int maxExponent;   // of the largest finite
  std::uint16_t expMask, quietBit;
};
constexpr RefFormat kRefHalf{10, -14, 15, 0x7C00, 0x0200};
constexpr RefFormat kRefBf16{7, -126, 127, 0x7F80, 0x0040};

// Exact powers of two 2^-160 .. 2^160 as doubles: multiplying by one is exact here (no
// overflow or underflow in double for any float input), and cheaper than std::ldexp.
struct Pow2Table {
  double v[321];
  Pow2Table() {
    for (int e = -160; e <= 160; ++e) v[e + 160] = std::ldexp(1.0, e);
  }
  double operator()(int e) const { return v[e + 160]; }
};
const Pow2Table pow2;

// The value x rounds to (finite or +-inf), x not NaN. A float converts to double exactly, so
// this rounds the float itself. Explicit range checks first: from half of the smallest
// subnormal down everything is zero (the tie at exactly half goes to even, zero), and from the
// midpoint between max finite and the next power of two up everything is inf (that tie goes to
// even too, which is inf). Between, scale so the last kept bit has weight 1, round to an integer
// with std::rint (FE_TONEAREST: ties to even; nearbyint without the inexact-flag bookkeeping),
// and scale back.
double referenceRound(double x, const RefFormat& f) {
  if (x == 0 || std::isinf(x)) return x;
  const double a = std::fabs(x);
  const double minSubnormal = pow2(f.minExponent - f.fractionBits);
  const double overflowMidpoint =
      pow2(f.maxExponent + 1) - pow2(f.maxExponent - f.fractionBits - 1);
  if (a <= minSubnormal / 2) return std::copysign(0.0, x);
  if (a >= overflowMidpoint) return std::copysign(HUGE_VAL, x);
  const int exponent = std::max(std::ilogb(a), f.minExponent);  // subnormals: fixed quantum
  const int quantum = exponent - f.fractionBits;
  return std::copysign(std::rint(a * pow2(-quantum)) * pow2(quantum), x);
}

// The value of a 16-bit pattern, decoded arithmetically (NaN for NaN patterns).
double referenceDecode(std::uint16_t bits, const RefFormat& f) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int field = (bits & f.expMask) >> f.fractionBits;
  const int fraction = bits & ((1 << f.fractionBits) - 1);
  const int maxField = f.expMask >> f.fractionBits;
  const int bias = 1 - f.minExponent;
  if (field == maxField) return fraction ? NAN : sign * HUGE_VAL;
  if (field == 0) return sign * fraction * pow2(f.minExponent - f.fractionBits);
  return sign * (fraction + (1 << f.fractionBits)) * pow2(field - bias - f.fractionBits);
}

// What float16.h promises for a NaN: quiet, sign and top payload bits kept.
std::uint16_t expectedNanBits(std::uint32_t x, const RefFormat& f) {
  const std::uint32_t payload = (x & 0x7FFFFFu) >> (23 - f.fractionBits);
  return static_cast<std::uint16_t>(((x >> 16) & 0x8000u) | f.expMask | f.quietBit | payload);
}

// Checks one float against the reference; returns false (and reports) on a mismatch.
template <typename Convert>
bool matchesReference(std::uint32_t x, const RefFormat& f, Convert convert) {
  const float in = bitsToFloat(x);
  const std::uint16_t got = convert(in);
  if (std::isnan(in)) {
    if (got == expectedNanBits(x, f)) return true;
  } else {
    const double want = referenceRound(in, f);
    const double have = referenceDecode(got, f);
    if (have == want && std::signbit(have) == std::signbit(want)) return true;
  }
  ADD_FAILURE() << std::hex << "input 0x" << x << " gave 0x" << got << " (reference "
                << referenceRound(in, f) << ")";
  return false;
}

struct SplitMix64 {  // small, fast, seeded: the same 10^8 floats on every run
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// ---- Hand-written expectations ---------------------------------------------------------------

float f32(std::uint32_t bits) { return bitsToFloat(bits); }

TEST(Float16, HalfEdgeCases) {
  struct Case {
    float in;
    std::uint16_t want;
    const char* why;
  };
  const Case cases[] = {
      {1.0f, 0x3C00, "one"},
      {1.0f + 0x1p-11f, 0x3C00, "tie at 1 -> even (down)"},
      {1.0f + 3 * 0x1p-11f, 0x3C02, "tie at 1+2^-10 -> even (up)"},
      {1.0f + 0x1p-11f + 0x1p-23f, 0x3C01, "just above the tie"},
      {1.0f + 0x1p-11f - 0x1p-23f, 0x3C00, "just below the tie"},
      {1024.5f, 0x6400, "tie at 2^10 -> even (down)"},
      {1025.5f, 0x6402, "tie at 2^10 -> even (up)"},
      {2049.0f, 0x6800, "tie at 2^11 -> even (down)"},
      {2051.0f, 0x6802, "tie at 2^11 -> even (up)"},
      {0x1p-14f * (1 + 0x1p-11f), 0x0400, "tie at min normal -> even"},
      {0x1p-14f * (1 + 3 * 0x1p-11f), 0x0402, "tie above min normal -> even (up)"},
      {65504.0f, 0x7BFF, "max finite"},
      {f32(0x477FEFFF), 0x7BFF, "65519.996: below the overflow threshold"},
      {65520.0f, 0x7C00, "65520: tie to even is inf"},
      {65536.0f, 0x7C00, "2^16"},
      {f32(0x7F7FFFFF), 0x7C00, "FLT_MAX"},
      {-65520.0f, 0xFC00, "negative overflow"},
      {0x1p-14f, 0x0400, "min normal"},
      {0x1p-24f, 0x0001, "min subnormal"},
      {0x1p-25f, 0x0000, "half the min subnormal: tie to even (zero)"},
      {f32(0x33000001), 0x0001, "just above 2^-25"},
      {3 * 0x1p-26f, 0x0001, "0.75 * 2^-24: nearest is the min subnormal"},
      {3 * 0x1p-25f, 0x0002, "1.5 * 2^-24: tie to even (up)"},
      {5 * 0x1p-25f, 0x0002, "2.5 * 2^-24: tie to even (down)"},
      {7 * 0x1p-25f, 0x0004, "3.5 * 2^-24: tie to even (up)"},
      {1022.5f * 0x1p-24f, 0x03FE, "halfway subnormal -> even (down)"},
      {1023.5f * 0x1p-24f, 0x0400, "halfway between max subnormal and min normal"},
      {0x1p-26f, 0x0000, "below half the min subnormal"},
      {-0x1p-26f, 0x8000, "underflow keeps the sign"},
      {f32(0x00000001), 0x0000, "fp32 subnormal"},
      {f32(0x80000001), 0x8000, "negative fp32 subnormal"},
      {0.0f, 0x0000, "+0"},
      {-0.0f, 0x8000, "-0"},
      {HUGE_VALF, 0x7C00, "+inf"},
      {-HUGE_VALF, 0xFC00, "-inf"},
      {f32(0x7FC00000), 0x7E00, "quiet NaN"},
      {f32(0x7F800001), 0x7E00, "signalling NaN, low payload: quieted"},
      {f32(0x7FA00000), 0x7F00, "signalling NaN, high payload kept"},
      {f32(0xFF800001), 0xFE00, "negative signalling NaN"},
  };
  for (const Case& c : cases)
    EXPECT_EQ(floatToHalfBits(c.in), c.want)
        << c.why << std::hex << " (input 0x" << floatBits(c.in) << ")";
}

TEST(Float16, Bf16EdgeCases) {
  struct Case {
    float in;
    std::uint16_t want;
    const char* why;
  };
  const Case cases[] = {
      {1.0f, 0x3F80, "one"},
      {1.0f + 0x1p-8f, 0x3F80, "tie at 1 -> even (down)"},
      {1.0f + 3 * 0x1p-8f, 0x3F82, "tie -> even (up)"},
      {1.0f + 0x1p-8f + 0x1p-23f, 0x3F81, "just above the tie"},
      {f32(0x47800000) /* 65536 */ + 256.0f, 0x4780, "tie at 2^16 -> even (down)"},
      {f32(0x7F7F0000), 0x7F7F, "max bf16 (3.3895314e38)"},
      {f32(0x7F7F7FFF), 0x7F7F, "just below the overflow tie"},
      {f32(0x7F7F8000), 0x7F80, "overflow tie rounds to inf"},
      {f32(0x7F7FFFFF), 0x7F80, "FLT_MAX rounds to inf"},
      {f32(0xFF7F8000), 0xFF80, "negative overflow"},
      {0x1p-126f, 0x0080, "min normal"},
      {f32(0x007FFFFF), 0x0080, "max fp32 subnormal rounds up to min normal"},
      {0x1p-133f, 0x0001, "min bf16 subnormal, kept"},
      {-0x1p-133f, 0x8001, "negative bf16 subnormal"},
      {f32(0x00008000), 0x0000, "2^-134: tie to even (zero)"},
      {f32(0x00008001), 0x0001, "just above 2^-134"},
      {f32(0x00018000), 0x0002, "1.5 * 2^-133: tie to even (up)"},
      {f32(0x00000001), 0x0000, "2^-149"},
      {f32(0x80000001), 0x8000, "-2^-149 keeps the sign"},
      {0.0f, 0x0000, "+0"},
      {-0.0f, 0x8000, "-0"},
      {HUGE_VALF, 0x7F80, "+inf"},
      {-HUGE_VALF, 0xFF80, "-inf"},
      {f32(0x7FC00000), 0x7FC0, "quiet NaN"},
      {f32(0x7F800001), 0x7FC0, "signalling NaN, low payload: quieted, not inf"},
      {f32(0x7F810000), 0x7FC1, "signalling NaN, high payload kept"},
      {f32(0xFFFFFFFF), 0xFFFF, "all-ones NaN"},
      {f32(0xFF800001), 0xFFC0, "negative signalling NaN"},
  };
  for (const Case& c : cases)
    EXPECT_EQ(floatToBf16Bits(c.in), c.want)
        << c.why << std::hex << " (input 0x" << floatBits(c.in) << ")";
}

// ---- Exhaustive round trips ------------------------------------------------------------------

TEST(Float16, AllHalfPatternsRoundTrip) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const std::uint16_t bits = static_cast<std::uint16_t>(h);
    const float f = halfBitsToFloat(bits);
    const double want = referenceDecode(bits, kRefHalf);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
      ASSERT_EQ(floatToHalfBits(f), bits | 0x0200) << std::hex << h;  // comes back quiet
    } else {
      ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
      ASSERT_EQ(floatToHalfBits(f), bits) << std::hex << h;
    }
  }
}

TEST(Float16, AllBf16PatternsRoundTrip) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const std::uint16_t bits = static_cast<std::uint16_t>(b);
    const float f = bf16BitsToFloat(bits);
    const double want = referenceDecode(bits, kRefBf16);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << b;
      ASSERT_EQ(std::signbit(f), (b & 0x8000) != 0) << std::hex << b;
      ASSERT_EQ(floatToBf16Bits(f), bits | 0x0040) << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(f), want) << std::hex << b;
      ASSERT_EQ(std::signbit(f), (b & 0x8000) != 0) << std::hex << b;
      ASSERT_EQ(floatToBf16Bits(f), bits) << std::hex << b;
    }
  }
}

// ---- 10^8 random floats against the double-arithmetic reference ------------------------------

TEST(Float16, RandomFloatsMatchDoubleReference) {
  ASSERT_EQ(std::fesetround(FE_TONEAREST), 0);
  SplitMix64 rng{20240611};
  constexpr std::uint64_t kPairs = 50'000'000;  // two floats per draw: 10^8 floats
  int failures = 0;
  for (std::uint64_t i = 0; i < kPairs && failures < 10; ++i) {
    const std::uint64_t r = rng.next();
    for (const std::uint32_t x :
         {static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(r >> 32)}) {
      failures += !matchesReference(x, kRefHalf, [](float f) { return floatToHalfBits(f); });
      failures += !matchesReference(x, kRefBf16, [](float f) { return floatToBf16Bits(f); });
    }
  }
  EXPECT_EQ(failures, 0);
}

// ---- Array functions (kernels/cpu/convert.h) against the scalar ones ---------------------------

// Runs the body at every level this CPU supports, restoring the level in effect afterwards.
template <typename Body>
void forEachIsa(Body body) {
  const ConvertIsa before = activeConvertIsa();
  for (ConvertIsa isa : {ConvertIsa::Scalar, ConvertIsa::Avx2F16c, ConvertIsa::Avx512}) {
    if (isa > bestConvertIsa()) continue;
    ASSERT_EQ(setConvertIsa(isa), isa);
    SCOPED_TRACE(std::string(convertIsaName(isa)));
    body();
  }
  setConvertIsa(before);
}

// Floats around every 16-bit pattern: each upper half with low halves at and around the fp16
// (13 dropped bits) and bf16 (16 dropped bits) rounding boundaries, NaN payloads included.
std::vector<float> boundaryFloats() {
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x2000, 0x3000,
                                0x7FFF, 0x8000, 0x8001, 0xB000, 0xE000, 0xF000, 0xFFFF};
  std::vector<float> out;
  out.reserve(0x10000 * std::size(lows));
  for (std::uint32_t hi = 0; hi < 0x10000; ++hi)
    for (std::uint32_t lo : lows) out.push_back(bitsToFloat((hi << 16) | lo));
  return out;
}

std::vector<std::uint16_t> allPatterns() {
  std::vector<std::uint16_t> out(0x10000);
  for (std::uint32_t i = 0; i < 0x10000; ++i) out[i] = static_cast<std::uint16_t>(i);
  return out;
}

// Compares the array functions with the scalar ones on src[0..n) (any alignment); also checks
// that nothing past n is written.
void checkArrays(const float* src, const std::uint16_t* src16, std::size_t n) {
  constexpr std::uint16_t kGuard16 = 0xA5A5;
  const float kGuard = bitsToFloat(0x5A5A5A5Au);
  std::vector<std::uint16_t> h(n + 1, kGuard16), b(n + 1, kGuard16);
  std::vector<float> fh(n + 1, kGuard), fb(n + 1, kGuard), rh(src, src + n), rb(src, src + n);
  rh.push_back(kGuard);
  rb.push_back(kGuard);
  convertF32ToF16(src, h.data(), n);
  convertF32ToBf16(src, b.data(), n);
  convertF16ToF32(src16, fh.data(), n);
  convertBf16ToF32(src16, fb.data(), n);
  roundF32ThroughF16(rh.data(), n);
  roundF32ThroughBf16(rb.data(), n);
  int failures = 0;
  for (std::size_t i = 0; i < n && failures < 10; ++i) {
    const std::uint32_t x = floatBits(src[i]);
    const auto fail = [&](const char* what, std::uint32_t got, std::uint32_t want) {
      ADD_FAILURE() << what << std::hex << " at " << i << " (input 0x" << x << " / 0x" << src16[i]
                    << "): got 0x" << got << ", scalar 0x" << want;
      ++failures;
    };
    if (h[i] != floatToHalfBits(src[i])) fail("convertF32ToF16", h[i], floatToHalfBits(src[i]));
    if (b[i] != floatToBf16Bits(src[i])) fail("convertF32ToBf16", b[i], floatToBf16Bits(src[i]));
    if (floatBits(fh[i]) != floatBits(halfBitsToFloat(src16[i])))
      fail("convertF16ToF32", floatBits(fh[i]), floatBits(halfBitsToFloat(src16[i])));
    if (floatBits(fb[i]) != floatBits(bf16BitsToFloat(src16[i])))
      fail("convertBf16ToF32", floatBits(fb[i]), floatBits(bf16BitsToFloat(src16[i])));
    if (floatBits(rh[i]) != floatBits(roundToHalf(src[i])))
      fail("roundF32ThroughF16", floatBits(rh[i]), floatBits(roundToHalf(src[i])));
    if (floatBits(rb[i]) != floatBits(roundToBf16(src[i])))
      fail("roundF32ThroughBf16", floatBits(rb[i]), floatBits(roundToBf16(src[i])));
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(h[n], kGuard16);
  EXPECT_EQ(b[n], kGuard16);
  EXPECT_EQ(floatBits(fh[n]), floatBits(kGuard));
  EXPECT_EQ(floatBits(fb[n]), floatBits(kGuard));
  EXPECT_EQ(floatBits(rh[n]), floatBits(kGuard));
  EXPECT_EQ(floatBits(rb[n]), floatBits(kGuard));
}

TEST(ConvertArrays, AllPatternsMatchScalar) {
  const std::vector<std::uint16_t> patterns = allPatterns();
  const std::vector<float> floats = boundaryFloats();
  // All 2^16 16-bit patterns for the widening conversions; the boundary floats (14 per
  // pattern, 917,504 in all) for the narrowing ones (2^16-element slices of them).
  std::vector<std::uint16_t> src16(floats.size());
  for (std::size_t i = 0; i < src16.size(); ++i) src16[i] = patterns[i % patterns.size()];
  forEachIsa([&] { checkArrays(floats.data(), src16.data(), floats.size()); });
}

TEST(ConvertArrays, OddLengthsAndOffsetsMatchScalar) {
  SplitMix64 rng{7};
  std::vector<float> floats(70000);
  std::vector<std::uint16_t> src16(floats.size());
  for (std::size_t i = 0; i < floats.size(); ++i) {
    const std::uint64_t r = rng.next();
    floats[i] = bitsToFloat(static_cast<std::uint32_t>(r));
    src16[i] = static_cast<std::uint16_t>(r >> 32);
  }
  forEachIsa([&] {
    for (std::size_t n = 0; n <= 67; ++n)
      for (std::size_t offset : {0, 1, 3})
        checkArrays(floats.data() + offset, src16.data() + offset, n);
    for (std::size_t n : {1001, 4099, 65537}) checkArrays(floats.data() + 1, src16.data() + 1, n);
  });
}

#ifdef AMP_TEST_X86
// Vector conversions must not depend on MXCSR: rounding mode, flush-to-zero and
// denormals-are-zero set by other code (some math libraries do) leave the results unchanged.
TEST(ConvertArrays, IgnoresMxcsrModes) {
  const std::vector<std::uint16_t> patterns = allPatterns();
  const std::vector<float> floats = boundaryFloats();
  std::vector<std::uint16_t> src16(floats.size());
  for (std::size_t i = 0; i < src16.size(); ++i) src16[i] = patterns[i % patterns.size()];
  const unsigned saved = _mm_getcsr();
  for (unsigned rc : {_MM_ROUND_UP, _MM_ROUND_DOWN, _MM_ROUND_TOWARD_ZERO}) {
    _mm_setcsr((saved & ~(_MM_ROUND_MASK | _MM_FLUSH_ZERO_MASK)) | rc | _MM_FLUSH_ZERO_ON |
               0x0040u /* DAZ */);
    forEachIsa([&] { checkArrays(floats.data(), src16.data(), floats.size()); });
  }
  _mm_setcsr(saved);
}
#endif

// Opt-in (AMP_EXHAUSTIVE_CONVERT=1, about two minutes): every one of the 2^32 floats through
// the array functions at every level, against the scalar functions.
TEST(ConvertArrays, ExhaustiveOptIn) {
  if (!std::getenv("AMP_EXHAUSTIVE_CONVERT")) GTEST_SKIP() << "set AMP_EXHAUSTIVE_CONVERT=1";
  constexpr std::size_t kChunk = 1 << 16;
  std::vector<float> src(kChunk), round(kChunk);
  std::vector<std::uint16_t> h(kChunk), b(kChunk);
  forEachIsa([&] {
    for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += kChunk) {
      for (std::size_t i = 0; i < kChunk; ++i)
        src[i] = bitsToFloat(static_cast<std::uint32_t>(base + i));
      convertF32ToF16(src.data(), h.data(), kChunk);
      convertF32ToBf16(src.data(), b.data(), kChunk);
      bool same = true;
      for (std::size_t i = 0; i < kChunk; ++i)
        same &= h[i] == floatToHalfBits(src[i]) && b[i] == floatToBf16Bits(src[i]);
      ASSERT_TRUE(same) << "mismatch in chunk 0x" << std::hex << base;
      round = src;
      roundF32ThroughF16(round.data(), kChunk);
      for (std::size_t i = 0; i < kChunk; ++i)
        same &= floatBits(round[i]) == floatBits(roundToHalf(src[i]));
      round = src;
      roundF32ThroughBf16(round.data(), kChunk);
      for (std::size_t i = 0; i < kChunk; ++i)
        same &= floatBits(round[i]) == floatBits(roundToBf16(src[i]));
      ASSERT_TRUE(same) << "in-place mismatch in chunk 0x" << std::hex << base;
    }
  });
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The best level unless AMP_CONVERT_ISA caps it (the CI's second pass runs this file with
// AMP_CONVERT_ISA=avx2 and =scalar, so an AVX-512 machine exercises every level in its own
// process, from the first conversion on).
TEST(ConvertArrays, UsesBestIsaUnlessTheEnvironmentCapsIt) {
  const char* cap = std::getenv("AMP_CONVERT_ISA");
  ConvertIsa expected = bestConvertIsa();
  for (ConvertIsa isa : {ConvertIsa::Scalar, ConvertIsa::Avx2F16c, ConvertIsa::Avx512})
    if (cap && equalsIgnoringCase(convertIsaEnvName(isa), cap) && isa < expected) expected = isa;
  EXPECT_EQ(activeConvertIsa(), expected);
  std::printf("conversion ISA: %s (best on this CPU: %s)\n",
              std::string(convertIsaName(activeConvertIsa())).c_str(),
              std::string(convertIsaName(bestConvertIsa())).c_str());
}

}  // namespace
}  // namespace amp
