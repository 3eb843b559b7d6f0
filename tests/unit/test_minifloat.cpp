// The 8-, 6- and 4-bit formats (kernels/common/minifloat.h) and the MX block scales
// (kernels/common/block_scaling.h) against reference vectors: PyTorch 2.15's float8_e4m3fn,
// float8_e5m2 and float8_e8m0fnu casts, clamp-then-cast for the saturating E5M2, and a from-the-
// rules reference in exact rational arithmetic for E2M1/E3M2/E2M3 and MX blocks
// (tests/unit/data/make_fp8_reference.py made tests/unit/data/fp8_reference.txt; the integration
// test fp8_reference_current re-makes it where the PyTorch venv exists). Then properties no
// vector file states: stochastic rounding's expectation, the scale helpers' edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/common/block_scaling.h"
#include "kernels/common/minifloat.h"

using namespace amp;

namespace {

const std::map<std::string, MiniFormat> kFormats{{"e4m3", MiniFormat::E4M3}, {"e5m2", MiniFormat::E5M2},
                                                 {"e2m1", MiniFormat::E2M1}, {"e3m2", MiniFormat::E3M2},
                                                 {"e2m3", MiniFormat::E2M3}};

std::uint32_t hex(const std::string& s) { return static_cast<std::uint32_t>(std::stoul(s, nullptr, 16)); }

struct Lines {
  std::vector<std::vector<std::string>> rows;
  explicit Lines(const std::string& kind) {
    std::ifstream in(std::string(AMP_TEST_SOURCE_DIR) + "/tests/unit/data/fp8_reference.txt");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::vector<std::string> w;
      for (std::string t; words >> t;) w.push_back(t);
      if (!w.empty() && w[0] == kind) rows.push_back(w);
    }
  }
};

bool sameValue(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || floatBits(a) == floatBits(b);
}

}  // namespace

TEST(Minifloat, EveryCodeDecodesAsPyTorchDoes) {
  const Lines decode("decode");
  std::map<std::string, int> seen;
  for (const auto& w : decode.rows) {
    const std::uint32_t code = hex(w[2]);
    const float want = bitsToFloat(hex(w[3]));
    const float got = w[1] == "e8m0" ? e8m0ToFloat(static_cast<std::uint8_t>(code)) : miniToFloat(code, kFormats.at(w[1]));
    EXPECT_TRUE(sameValue(got, want)) << w[1] << " code 0x" << w[2] << ": " << got << " vs " << want;
    ++seen[w[1]];
  }
  EXPECT_EQ(seen["e4m3"], 256);
  EXPECT_EQ(seen["e5m2"], 256);
  EXPECT_EQ(seen["e8m0"], 256);
}

TEST(Minifloat, BoundaryCasesEncodeAsTheReferences) {
  const Lines encode("encode");
  std::map<std::string, int> seen;
  int failures = 0;
  for (const auto& w : encode.rows) {
    const float x = bitsToFloat(hex(w[3]));
    const std::uint32_t want = hex(w[4]);
    std::uint32_t got;
    if (w[1] == "e8m0") {
      got = floatToE8m0(x);
    } else {
      const Overflow rule = w[2] == "sat" ? Overflow::Saturate : Overflow::NonSaturating;
      got = floatToMini(x, kFormats.at(w[1]), rule);
    }
    // NaN codes: any NaN pattern of the format is the same NaN (E5M2 has three per sign).
    const bool bothNaN = w[1] != "e8m0" && std::isnan(miniToFloat(got, kFormats.at(w[1]))) &&
                         std::isnan(miniToFloat(want, kFormats.at(w[1])));
    if (got != want && !bothNaN && ++failures <= 20)
      ADD_FAILURE() << w[1] << " " << w[2] << " of " << x << " (0x" << w[3] << "): 0x" << std::hex << got
                    << ", the reference 0x" << want;
    ++seen[w[1] + " " + w[2]];
  }
  EXPECT_EQ(failures, 0);
  for (const char* k : {"e4m3 sat", "e4m3 nonsat", "e5m2 sat", "e5m2 nonsat", "e2m1 sat", "e3m2 sat", "e2m3 sat", "e8m0 sat"})
    EXPECT_GT(seen[k], 200) << k;
}

TEST(Minifloat, MxBlocksQuantiseAsTheOcpRules) {
  const Lines mx("mx");
  const std::map<std::string, MxRounding> modes{{"floor", MxRounding::Floor}, {"ceil", MxRounding::Ceil},
                                                {"fit", MxRounding::RoundUp}};
  ASSERT_EQ(mx.rows.size(), 72u);
  for (const auto& w : mx.rows) {
    const MiniFormat f = kFormats.at(w[1]);
    std::vector<float> x;
    float amax = 0;
    for (int i = 0; i < 32; ++i) {
      x.push_back(bitsToFloat(hex(w[3 + i])));
      amax = std::fmax(amax, std::fabs(x.back()));
    }
    ASSERT_EQ(w[35], ";");
    const std::uint8_t scale = mxScaleCode(amax, f, modes.at(w[2]));
    EXPECT_EQ(scale, hex(w[36])) << w[1] << " " << w[2] << " amax " << amax;
    for (int i = 0; i < 32; ++i) {
      const std::uint32_t code = floatToMini(divideByE8m0(x[i], scale), f, Overflow::Saturate);
      EXPECT_EQ(code, hex(w[37 + i])) << w[1] << " " << w[2] << " element " << i << " " << x[i];
    }
  }
}

TEST(Minifloat, FormatConstants) {
  EXPECT_EQ(miniMax(MiniFormat::E4M3), 448.f);
  EXPECT_EQ(miniMax(MiniFormat::E5M2), 57344.f);
  EXPECT_EQ(miniMax(MiniFormat::E2M1), 6.f);
  EXPECT_EQ(miniMax(MiniFormat::E3M2), 28.f);
  EXPECT_EQ(miniMax(MiniFormat::E2M3), 7.5f);
  EXPECT_EQ(miniMinSubnormal(MiniFormat::E4M3), std::ldexp(1.f, -9));
  EXPECT_EQ(miniMinSubnormal(MiniFormat::E5M2), std::ldexp(1.f, -16));
  EXPECT_EQ(miniMinSubnormal(MiniFormat::E2M1), 0.5f);
  EXPECT_EQ(miniEmax(MiniFormat::E4M3), 8);
  EXPECT_EQ(miniEmax(MiniFormat::E5M2), 15);
  EXPECT_EQ(miniEmax(MiniFormat::E2M1), 2);
  const float e2m1[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (std::uint32_t c = 0; c < 16; ++c)
    EXPECT_EQ(miniToFloat(c, MiniFormat::E2M1), (c & 8 ? -1.f : 1.f) * e2m1[c & 7]) << c;
}

// Stochastic rounding: the two neighbours only, in proportion to the distance. The inputs sit at
// k/256 of a code spacing, so the dropped bits past the top 16 are zero and the 2^16 random
// patterns below (the top 16 random bits; the low ones 0) give the exact expectation: the input.
// Normal, subnormal and below the smallest subnormal.
TEST(Minifloat, StochasticRoundingIsUnbiasedOverEveryRandomPattern) {
  for (const auto& [f, x] : std::vector<std::pair<MiniFormat, float>>{
           {MiniFormat::E4M3, 1.f + 0.125f * 77 / 256},                 // normal
           {MiniFormat::E4M3, std::ldexp(3.f + 45.f / 256, -9)},        // subnormal
           {MiniFormat::E4M3, std::ldexp(100.f / 256, -9)},             // below the smallest
           {MiniFormat::E5M2, -std::ldexp(1.f + 13.f / 256, -16)},      // negative, subnormal
           {MiniFormat::E2M1, 2.f + 154.f / 256},
           {MiniFormat::E2M1, 0.5f * 102 / 256}}) {
    const float lo = miniToFloat(floatToMini(std::fabs(x), f, Overflow::Saturate, true, 0u), f);
    double sum = 0;
    const int n = 1 << 16;
    for (int r = 0; r < n; ++r) {
      const float v = miniToFloat(floatToMini(x, f, Overflow::Saturate, true, static_cast<std::uint32_t>(r) << 16), f);
      EXPECT_GE(std::fabs(v), lo) << x;
      sum += v;
    }
    EXPECT_EQ(sum / n, x) << "format " << int(f) << " value " << x;
  }
}

TEST(Minifloat, OverflowIsReported) {
  bool over = false;
  floatToMini(500.f, MiniFormat::E4M3, Overflow::Saturate, false, 0, &over);
  EXPECT_TRUE(over);
  over = false;
  floatToMini(460.f, MiniFormat::E4M3, Overflow::Saturate, false, 0, &over);
  EXPECT_FALSE(over) << "460 rounds to 448: within range";
  floatToMini(-INFINITY, MiniFormat::E5M2, Overflow::NonSaturating, false, 0, &over);
  EXPECT_TRUE(over);
}

TEST(BlockScaling, PerTensorScaleKeepsThePreviousOneForZeroOrNonFiniteAmax) {
  EXPECT_EQ(perTensorScale(2.f, 448.f, 0, 7.f), 224.f);
  EXPECT_EQ(perTensorScale(2.f, 448.f, 1, 7.f), 112.f);
  EXPECT_EQ(perTensorScale(0.f, 448.f, 0, 7.f), 7.f);
  EXPECT_EQ(perTensorScale(NAN, 448.f, 0, 7.f), 7.f);
  EXPECT_EQ(perTensorScale(INFINITY, 448.f, 0, 7.f), 7.f);
  EXPECT_EQ(perTensorScale(1e-45f, 448.f, 0, 7.f), 7.f) << "max / amax overflows";
}

TEST(BlockScaling, BlockwiseAndNvfp4Scales) {
  EXPECT_EQ(blockwiseScale(3.f, 448.f, false), 448.f / 3.f);
  EXPECT_EQ(blockwiseScale(3.f, 448.f, true), 128.f) << "149.3 rounded down to a power of two";
  EXPECT_LE(3.f * blockwiseScale(3.f, 448.f, true), 448.f);
  EXPECT_EQ(blockwiseScale(0.f, 448.f, true), 1.f);
  EXPECT_EQ(nvfp4TensorScale(2688.f), 1.f);
  const float s = nvfp4TensorScale(10.f);
  EXPECT_EQ(s, 268.8f);
  // The block holding the tensor's amax gets the largest E4M3 scale, 448: its amax maps to 6.
  EXPECT_EQ(miniToFloat(nvfp4BlockScaleCode(10.f, s), MiniFormat::E4M3), 448.f);
  EXPECT_TRUE(std::isnan(miniToFloat(nvfp4BlockScaleCode(NAN, s), MiniFormat::E4M3)));
  EXPECT_EQ(mxScaleCode(0.f, MiniFormat::E4M3, MxRounding::Floor), 0);
  EXPECT_EQ(mxScaleCode(NAN, MiniFormat::E4M3, MxRounding::Floor), kE8m0Nan);
  // 470 with floor: 2^(8 - 8) = 1, so 470 / 1 clips to 448; round-up-to-fit gives 2 (235 fits).
  EXPECT_EQ(mxScaleCode(470.f, MiniFormat::E4M3, MxRounding::Floor), 127);
  EXPECT_EQ(mxScaleCode(470.f, MiniFormat::E4M3, MxRounding::RoundUp), 128);
  EXPECT_EQ(mxScaleCode(448.f, MiniFormat::E4M3, MxRounding::RoundUp), 127);
  EXPECT_EQ(mxScaleCode(256.f, MiniFormat::E4M3, MxRounding::Ceil), 127);
  EXPECT_EQ(mxScaleCode(257.f, MiniFormat::E4M3, MxRounding::Ceil), 128);
}

TEST(BlockScaling, HadamardIsOrthonormalAndCancelsInAProduct) {
  float a[16], b[16];
  double dot = 0;
  for (int i = 0; i < 16; ++i) {
    a[i] = static_cast<float>(i - 5) * 0.25f;
    b[i] = static_cast<float>((i * 7) % 5) - 2.f;
    dot += double(a[i]) * b[i];
  }
  float one[16] = {};
  one[3] = 8.f;  // an outlier spreads evenly: |8| / 4 = 2 on every element
  hadamard16(one, 0x5A5Au);
  for (float v : one) EXPECT_EQ(std::fabs(v), 2.f);
  hadamard16(a, 0xBEEFu);
  hadamard16(b, 0xBEEFu);
  double after = 0;
  for (int i = 0; i < 16; ++i) after += double(a[i]) * b[i];
  EXPECT_NEAR(after, dot, 1e-5);
}

// The arithmetic form the quantisers use (roundToMiniFast) against the bit-field form, on every
// reference input and on 2^22 fp32 bit patterns spread over the whole range (NaN and inf too).
TEST(Minifloat, FastRoundingEqualsTheBitFieldForm) {
  std::vector<float> inputs;
  const Lines encode("encode");
  for (const auto& w : encode.rows) inputs.push_back(bitsToFloat(hex(w[3])));
  std::uint32_t u = 12345;
  for (int i = 0; i < (1 << 22); ++i) {
    u = u * 1664525u + 1013904223u;  // every bit pattern class: the top bits vary too
    inputs.push_back(bitsToFloat(u));
  }
  int failures = 0;
  for (const auto& [name, f] : kFormats)
    for (Overflow rule : {Overflow::Saturate, Overflow::NonSaturating})
      for (float x : inputs) {
        bool o1 = false, o2 = false;
        const float want = miniToFloat(floatToMini(x, f, rule, false, 0, &o1), f);
        const float got = roundToMiniFast(x, f, rule, &o2);
        if ((!sameValue(got, want) || o1 != o2) && ++failures <= 10)
          ADD_FAILURE() << name << " rule " << int(rule) << " of " << x << " (0x" << std::hex << floatBits(x)
                        << "): " << got << " vs " << want << ", overflow " << o2 << " vs " << o1;
      }
  EXPECT_EQ(failures, 0);
}
