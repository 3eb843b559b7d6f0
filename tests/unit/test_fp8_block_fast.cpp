// The quantisers' vector loops (engine/amp/fp8_block_quantize.cpp, fp8_span_rounding.h) against
// the per-element loops of fp8_quantize.cpp, which the histogram steps still take (asking for the
// scaled exponents selects them) and which test_fp8_quantize.cpp checks against values worked out
// by hand. Every recipe (per tensor at scales that send values past both ends; MX with each
// exponent rounding; blockwise 1x128 and 128x128 with fp32 and power-of-two scales; NVFP4 with
// and without its transform), both block directions, both overflow rules, round to nearest and
// stochastic rounding, on tensors with partial blocks, zeros, fp32 and format subnormals, ties,
// values past the range, inf and NaN: the same values, codes, block scales and counts; the error
// sums to their last bits (the vector loop adds in lanes); and the codes and scales decode
// (fp8_decode.cpp, the CPU GEMMs' input) to those values. Stochastic rounding's carry rule on the
// fp32 bits is also checked against floatToMini itself, and the decoder on every code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/amp/fp8_quantize.h"
#include "engine/amp/fp8_span_rounding.h"
#include "kernels/common/quantized_layout.h"

using namespace amp;

namespace {

bool sameBits(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  std::uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

// Log-uniform magnitudes from 2^-150 to 2^24 with random signs, and in places the values the
// roundings treat specially.
std::vector<float> awkwardValues(std::int64_t rows, std::int64_t cols, unsigned seed, bool withNonFinite) {
  const std::int64_t n = rows * cols;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> exponent(-150.f, 24.f), unit(0.f, 1.f);
  std::vector<float> x(static_cast<std::size_t>(n));
  const float specials[] = {0.f, -0.f, 448.f, 464.f, 480.f, 500.f, 512.f, 57344.f, 61440.f, 6.f, 0.25f,
                            0.0703125f, 1e-45f, -1e-40f, 3e38f, 1.5f, 2.5f, 5.f};
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float u = unit(rng);
    if (u < 0.05f) x[i] = specials[rng() % (sizeof specials / sizeof specials[0])];
    else x[i] = std::exp2(exponent(rng)) * (rng() & 1u ? -1.f : 1.f);
  }
  // Magnitudes that drift along both dimensions, so neighbouring blocks (along rows or down the
  // columns) have different scales and a block read with another's scale shows.
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::int64_t r = std::int64_t(i) / cols, c = std::int64_t(i) % cols;
    x[i] *= std::exp2(float((r * 5 + c * 3) % 37 - 18));
  }
  // A block of zeros, a block of values far below the rest.
  for (std::size_t i = 0; i < std::min<std::size_t>(x.size(), 40); ++i) x[i] = 0.f;
  for (std::size_t i = 40; i < std::min<std::size_t>(x.size(), 80); ++i) x[i] = 1e-20f * float(i);
  if (withNonFinite && x.size() > 500) {
    x[300] = std::numeric_limits<float>::infinity();
    x[333] = -std::numeric_limits<float>::infinity();
    x[470] = std::numeric_limits<float>::quiet_NaN();
  }
  return x;
}

struct Case {
  std::string name;
  QuantSpec spec;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool along : {false, true})
    for (Overflow ov : {Overflow::Saturate, Overflow::NonSaturating})
      for (bool sr : {false, true}) {
        const std::string tail = std::string(along ? " along rows" : " along cols") +
                                 (ov == Overflow::Saturate ? " sat" : " nonsat") + (sr ? " SR" : "");
        for (MiniFormat f : {MiniFormat::E4M3, MiniFormat::E5M2})
          for (float scale : {1.0f, 3.0f, 1e-30f, 1e20f}) {
            QuantSpec s;
            s.scaling = QuantScaling::PerTensor;
            s.format = f;
            s.tensorScale = scale;
            s.alongRows = along;
            s.overflow = ov;
            s.stochastic = sr;
            s.seed = 0xABCDEFull;
            out.push_back({"per tensor " + std::string(miniFormatName(f)) + " x" + std::to_string(scale) + tail, s});
          }
        for (MiniFormat f : {MiniFormat::E4M3, MiniFormat::E5M2, MiniFormat::E2M1})
          for (MxRounding r : {MxRounding::Floor, MxRounding::Ceil, MxRounding::RoundUp}) {
            QuantSpec s;
            s.scaling = QuantScaling::Mx;
            s.format = f;
            s.mxRounding = r;
            s.block = 32;
            s.alongRows = along;
            s.overflow = ov;
            s.stochastic = sr;
            s.seed = 0x1234567ull;
            out.push_back({"mx " + std::string(miniFormatName(f)) + " r" + std::to_string(int(r)) + tail, s});
          }
        for (bool square : {false, true})
          for (bool pow2 : {false, true}) {
            QuantSpec s;
            s.scaling = QuantScaling::Blockwise;
            s.block = 128;
            s.square = square;
            s.powerOfTwo = pow2;
            s.alongRows = along;
            s.overflow = ov;
            s.stochastic = sr;
            s.seed = 99;
            out.push_back({std::string("blockwise") + (square ? " 128x128" : " 1x128") + (pow2 ? " pow2" : "") + tail, s});
          }
        for (bool rht : {false, true}) {
          QuantSpec s;
          s.scaling = QuantScaling::Nvfp4;
          s.format = MiniFormat::E2M1;
          s.block = 16;
          s.alongRows = along;
          s.overflow = ov;
          s.stochastic = sr;
          s.seed = 7;
          s.hadamard = rht;
          s.hadamardSigns = 0xA5C3;
          out.push_back({std::string("nvfp4") + (rht ? " RHT" : "") + tail, s});
        }
      }
  return out;
}

struct Result {
  std::vector<float> values;
  std::vector<std::uint8_t> codes, scaleCodes;
  std::vector<float> scaleFactors;
  float tensorScale = 0;
  QuantStats stats;
};

Result quantize(const std::vector<float>& x, std::int64_t rows, std::int64_t cols, const QuantSpec& spec,
                bool perElement) {
  Result r;
  const QuantLayout L{rows, cols, spec.alongRows, spec.block, spec.square};
  r.values.assign(x.size(), -1.f);
  r.codes.assign(static_cast<std::size_t>(quantCodeBytes(rows * cols, spec.format)), 0xEE);
  r.scaleCodes.assign(static_cast<std::size_t>(L.blockCount()), 0xEE);
  r.scaleFactors.assign(static_cast<std::size_t>(L.blockCount()), -1.f);
  r.stats.wantScaledExponents = perElement;  // selects fp8_quantize.cpp's per-element loops
  quantizeToCodes(x.data(), rows, cols, spec, r.codes.data(), r.scaleCodes.data(), r.scaleFactors.data(),
                  &r.tensorScale, &r.stats, r.values.data());
  return r;
}

void expectSame(const Result& fast, const Result& ref, const std::string& what) {
  ASSERT_EQ(fast.values.size(), ref.values.size());
  int shown = 0;
  for (std::size_t i = 0; i < ref.values.size() && shown < 5; ++i)
    if (!sameBits(fast.values[i], ref.values[i])) {
      ADD_FAILURE() << what << ": value " << i << " is " << fast.values[i] << ", per element " << ref.values[i];
      ++shown;
    }
  EXPECT_EQ(fast.codes, ref.codes) << what;
  EXPECT_EQ(fast.scaleCodes, ref.scaleCodes) << what;
  for (std::size_t i = 0; i < ref.scaleFactors.size(); ++i)
    ASSERT_TRUE(sameBits(fast.scaleFactors[i], ref.scaleFactors[i])) << what << ": scale factor " << i;
  EXPECT_TRUE(sameBits(fast.tensorScale, ref.tensorScale)) << what;
  const QuantStats &a = fast.stats, &b = ref.stats;
  EXPECT_EQ(a.count, b.count) << what;
  EXPECT_EQ(a.nonzero, b.nonzero) << what;
  EXPECT_EQ(a.underflow, b.underflow) << what;
  EXPECT_EQ(a.overflow, b.overflow) << what;
  EXPECT_EQ(a.nonFinite, b.nonFinite) << what;
  EXPECT_EQ(a.blockExponents, b.blockExponents) << what;
  EXPECT_TRUE(sameBits(float(a.amax), float(b.amax))) << what;
  EXPECT_NEAR(a.signalSq, b.signalSq, 1e-12 * b.signalSq) << what;
  EXPECT_NEAR(a.errorSq, b.errorSq, 1e-12 * b.errorSq) << what;
  EXPECT_TRUE(a.scaledExponents.empty()) << what << ": the vector loops record no scaled exponents";
}

}  // namespace

// Small and odd shapes (partial blocks along both dimensions, one thread) and one over 64k values
// (the parts the threads share), with and without inf and NaN in a block.
TEST(Fp8BlockFast, EveryRecipeGivesThePerElementLoopsValuesCodesScalesAndCounts) {
  const struct {
    std::int64_t rows, cols;
    bool nonFinite;
  } shapes[] = {{37, 70, true}, {9, 45, false}, {20, 300, false}, {260, 300, true}};  // 45: E2M1 rows mid-byte
  for (const auto& sh : shapes) {
    const std::vector<float> x = awkwardValues(sh.rows, sh.cols, unsigned(sh.rows * 7 + sh.cols), sh.nonFinite);
    for (const Case& c : cases()) {
      const std::string what = c.name + " " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols);
      const Result ref = quantize(x, sh.rows, sh.cols, c.spec, true);
      const Result fast = quantize(x, sh.rows, sh.cols, c.spec, false);
      expectSame(fast, ref, what);
      // No statistics (evaluation, the GEMMs' other orientations): the same values.
      std::vector<float> plain(x.size());
      quantizeDequantize(x.data(), plain.data(), sh.rows, sh.cols, c.spec, nullptr);
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!sameBits(plain[i], ref.values[i])) {
          ADD_FAILURE() << what << " without statistics: value " << i;
          break;
        }
      // The codes and scales decode (the CPU GEMMs' operands) to the dequantised values.
      std::vector<float> decoded(x.size());
      decodeCodes(fast.codes.data(), fast.scaleCodes.data(), fast.scaleFactors.data(), fast.tensorScale, sh.rows,
                  sh.cols, c.spec, decoded.data());
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!sameBits(decoded[i], ref.values[i])) {
          ADD_FAILURE() << what << ": decoded value " << i << " is " << decoded[i] << ", dequantised "
                        << ref.values[i];
          break;
        }
      if (HasFailure()) return;  // one recipe's report is enough to read
    }
  }
}

// The carry rule on the fp32 bits (roundSpan's stochastic loop) against floatToMini's stochastic
// rounding for every format, on values around every binade of each format (subnormals, the
// smallest normal, the largest finite, past it) and random fp32 patterns, with random bits
// that include the extremes 0 and 2^32 - 1.
TEST(Fp8BlockFast, StochasticRoundingOnTheBitsIsFloatToMinis) {
  std::mt19937 rng(5);
  for (MiniFormat f : {MiniFormat::E4M3, MiniFormat::E5M2, MiniFormat::E3M2, MiniFormat::E2M3, MiniFormat::E2M1})
    for (Overflow ov : {Overflow::Saturate, Overflow::NonSaturating}) {
      const std::uint64_t seed = 0xC0FFEEull + unsigned(f);
      const fp8span::SpanRounder R(f, ov, true, seed);
      std::vector<float> x;
      for (int e = -40; e <= 20; ++e)
        for (float m : {1.0f, 1.0625f, 1.25f, 1.5f, 1.75f, 1.9999f})
          for (float sign : {1.f, -1.f}) x.push_back(sign * std::ldexp(m, e));
      x.push_back(miniMax(f));
      x.push_back(std::nextafter(miniMax(f), 1e30f));
      x.push_back(3.4e38f);
      x.push_back(1e-45f);
      for (int i = 0; i < 20000; ++i) {
        std::uint32_t bits = rng() & 0x7F7FFFFFu;  // finite
        bits = (bits & 0x807FFFFFu) | (std::uint32_t(100 + rng() % 50) << 23);  // near the formats' ranges
        float v;
        std::memcpy(&v, &bits, 4);
        x.push_back(rng() & 1u ? v : -v);
      }
      x.resize((x.size() + 255) / 256 * 256, 0.f);
      const std::vector<float> ones(256, 1.0f);
      std::vector<float> rounded(256);
      std::vector<std::uint8_t> clipped(256), codes(256);
      for (std::size_t s = 0; s < x.size(); s += 256) {
        const std::int64_t first = std::int64_t(s) * 3 + 11;  // any flat index
        if (R.roundSpan(x.data() + s, ones.data(), ones.data(), 256, first, rounded.data(), clipped.data()))
          R.roundSpecials(x.data() + s, ones.data(), ones.data(), 256, first, rounded.data(), clipped.data());
        R.codesOf(rounded.data(), 256, codes.data());
        for (int j = 0; j < 256; ++j) {
          bool over = false;
          const std::uint32_t code = floatToMini(x[s + j], f, ov, true, fp8span::SpanRounder::randomBits(seed, first + j), &over);
          const float want = miniToFloat(code, f);
          ASSERT_TRUE(sameBits(rounded[std::size_t(j)], want))
              << miniFormatName(f) << " " << x[s + j] << ": " << rounded[std::size_t(j)] << " != " << want;
          ASSERT_EQ(bool(clipped[std::size_t(j)]), over) << miniFormatName(f) << " " << x[s + j];
          ASSERT_EQ(codes[std::size_t(j)], code) << miniFormatName(f) << " " << x[s + j];
        }
      }
    }
}

// The decoder's fields-and-masks form gives miniToFloat's value for every code of every format.
TEST(Fp8BlockFast, EveryCodeDecodesAsMiniToFloat) {
  for (MiniFormat f : {MiniFormat::E4M3, MiniFormat::E5M2, MiniFormat::E3M2, MiniFormat::E2M3, MiniFormat::E2M1}) {
    const std::uint32_t codes = 1u << miniBits(f);
    std::vector<std::uint8_t> all(codes);
    for (std::uint32_t c = 0; c < codes; ++c) all[c] = static_cast<std::uint8_t>(c);
    std::vector<float> out(codes);
    decodeFormatCodes(all.data(), std::int64_t(codes), f, out.data());
    for (std::uint32_t c = 0; c < codes; ++c)
      EXPECT_TRUE(sameBits(out[c], miniToFloat(c, f)) && std::signbit(out[c]) == std::signbit(miniToFloat(c, f)))
          << miniFormatName(f) << " code " << c << ": " << out[c] << " != " << miniToFloat(c, f);
  }
}
