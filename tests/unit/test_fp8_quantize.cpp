// Tensor-level quantisation (engine/amp/fp8_quantize.h) and the recipes' scale state
// (engine/amp/fp8_context.h) against values computed by hand from the definitions: per-tensor
// cast(x * s) / s, MX blocks along either dimension, DeepSeek's 1x128 and 128x128 tiles, NVFP4's
// two levels, the statistics, and delayed scaling's scale sequence (step 0 at scale 1, the
// window's max or most recent amax, the margin, a non-finite amax kept out of the window).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <omp.h>
#include <vector>

#include "engine/amp/fp8_context.h"
#include "engine/amp/fp8_quantize.h"
#include "engine/config/config_schema.h"

using namespace amp;

namespace {

float e4m3(float v) { return roundToMini(v, MiniFormat::E4M3, Overflow::Saturate); }

}  // namespace

TEST(Fp8Quantize, PerTensorIsCastOfTheScaledValueThenDividedBack) {
  const std::vector<float> x{0.01f, -3.3f, 100.f, 1e-6f, 0.f};
  std::vector<float> out(x.size());
  QuantSpec s;
  s.tensorScale = 4.0f;
  QuantStats st;
  quantizeDequantize(x.data(), out.data(), 1, 5, s, &st);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(out[i], e4m3(x[i] * 4.f) * 0.25f) << i;
  EXPECT_EQ(st.amax, 100.0);
  EXPECT_EQ(st.count, 5);
  EXPECT_EQ(st.nonzero, 4);
  EXPECT_EQ(st.underflow, 1) << "1e-6 x 4 is below half of E4M3's 2^-9";
  EXPECT_EQ(st.overflow, 0) << "400 < 448";
  s.tensorScale = 8.0f;  // 100 x 8 = 800: clipped to 448
  quantizeDequantize(x.data(), out.data(), 1, 5, s, &st);
  EXPECT_EQ(out[2], 56.f);
  EXPECT_EQ(st.overflow, 1);
  EXPECT_NEAR(st.overflowFrac(), 0.2, 1e-12);
  double signal = 0, error = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    signal += double(x[i]) * x[i];
    error += (double(out[i]) - x[i]) * (double(out[i]) - x[i]);
  }
  EXPECT_DOUBLE_EQ(st.sqnrDb(), 10 * std::log10(signal / error));
}

// The per-tensor quantiser has two loops: the values alone (no statistics: evaluation), and the
// every-step one with statistics, which rounds a block at a time in a vectorised loop and takes
// inf and NaN after the scale back to MiniRounder. Both give the same values, for every kind of
// value (zeros, subnormals, ties, past the range, past fp32's range after the scale, inf, NaN),
// both formats and both overflow rules; and the statistics count what happened value by value.
TEST(Fp8Quantize, PerTensorWithStatisticsGivesTheSameValuesAsWithout) {
  std::vector<float> x{0.f, -0.f, 1e-30f, -1e-30f, 1e-3f, 0.0625f, 0.0703125f, 1.f, -3.3f,
                       240.f, 464.f, 480.f, 1e4f, 6e4f, -7e4f, 3e38f, -3e38f,
                       std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()};
  for (int i = 0; i < 700; ++i) x.push_back(std::ldexp(float((i * 37) % 101) - 50.f, (i % 60) - 40));  // blocks of 256 and a tail
  for (MiniFormat f : {MiniFormat::E4M3, MiniFormat::E5M2})
    for (Overflow rule : {Overflow::Saturate, Overflow::NonSaturating})
      for (float scale : {1.f, 1024.f, 1e30f}) {
        QuantSpec s;
        s.format = f;
        s.overflow = rule;
        s.tensorScale = scale;
        std::vector<float> plain(x.size()), counted(x.size());
        quantizeDequantize(x.data(), plain.data(), 1, std::int64_t(x.size()), s, nullptr);
        QuantStats st;
        quantizeDequantize(x.data(), counted.data(), 1, std::int64_t(x.size()), s, &st);
        std::int64_t nonFinite = 0, nonzero = 0, underflow = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          ASSERT_EQ(floatBits(plain[i]), floatBits(counted[i]))
              << miniFormatName(f) << " scale " << scale << " value " << x[i];
          const bool finite = std::isfinite(x[i]);
          nonFinite += !finite;
          nonzero += finite && x[i] != 0;
          underflow += finite && x[i] != 0 && counted[i] == 0;
        }
        EXPECT_EQ(st.count, std::int64_t(x.size()));
        EXPECT_EQ(st.nonFinite, nonFinite);
        EXPECT_EQ(st.nonzero, nonzero);
        EXPECT_EQ(st.underflow, underflow);
        EXPECT_GT(st.overflow, 0) << miniFormatName(f) << " scale " << scale;
      }
}

TEST(Fp8Quantize, MxBlocksRunAlongTheChosenDimension) {
  // 2 x 64: row 0 small values with one outlier in its second block, row 1 ramps.
  const std::int64_t rows = 2, cols = 64;
  std::vector<float> x(rows * cols);
  for (std::int64_t j = 0; j < cols; ++j) {
    x[j] = 1e-5f * float(j + 1);
    x[cols + j] = float(j) - 20.f;
  }
  x[40] = 1000.f;
  std::vector<float> out(x.size());
  QuantSpec s;
  s.scaling = QuantSpec::Scaling::Mx;
  s.block = 32;
  s.mxRounding = MxRounding::Floor;
  QuantStats st;
  quantizeDequantize(x.data(), out.data(), rows, cols, s, &st);
  // Row 0, block 0: amax 3.2e-4, floor(log2) = -12, e = -20: the element is cast(x 2^20) / 2^20.
  for (int j = 0; j < 32; ++j) EXPECT_EQ(out[j], std::ldexp(e4m3(std::ldexp(x[j], 20)), -20)) << j;
  // Row 0, block 1 holds the outlier: e = 9 - 8 = 1 (floor clips 1000 / 2 = 500 to 448), and
  // values below 2^-10 x 2 flush to zero: all 31 others.
  EXPECT_EQ(out[40], 896.f);
  EXPECT_EQ(out[33], 0.f) << "3.4e-4 / 2 is below half of E4M3's smallest subnormal";
  EXPECT_EQ(st.underflow, 31);
  EXPECT_EQ(st.overflow, 1);
  // Four blocks, four exponents: -20, 1, and the ramp's -4 (amax 20) and -3 (amax 43).
  EXPECT_EQ(st.blockExponents, (std::map<int, std::int64_t>{{-20, 1}, {-4, 1}, {-3, 1}, {1, 1}}));
  // The same matrix with blocks down the columns (2 values each): 3.4e-4 shares a block with 13.
  s.alongRows = true;
  quantizeDequantize(x.data(), out.data(), rows, cols, s, &st);
  EXPECT_EQ(out[33], std::ldexp(e4m3(std::ldexp(x[33], 5)), -5));
  // Underflow down the columns, counted independently: x / 2^e below half the smallest subnormal.
  std::int64_t flushed = 0, blocks = 0;
  for (std::int64_t j = 0; j < cols; ++j) {
    const float amax = std::fmax(std::fabs(x[j]), std::fabs(x[cols + j]));
    const int e = int(std::floor(std::log2(amax))) - 8;
    for (float v : {x[j], x[cols + j]}) flushed += v != 0 && std::fabs(std::ldexp(v, -e)) < std::ldexp(1.f, -10);
  }
  for (const auto& [e, n] : st.blockExponents) blocks += n;
  EXPECT_EQ(st.underflow, flushed);
  EXPECT_LT(st.underflow, 31) << "fewer values lost than with the outlier's row-wise block";
  EXPECT_EQ(blocks, cols) << "one block per column";
}

TEST(Fp8Quantize, Nvfp4IsTwoLevel) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[std::size_t(i)] = 0.1f * float(i % 7) - 0.25f;
  x[20] = 3.f;  // amax: the tensor scale 2688 / 3
  std::vector<float> out(x.size());
  QuantSpec s;
  s.scaling = QuantSpec::Scaling::Nvfp4;
  s.format = MiniFormat::E2M1;
  s.block = 16;
  QuantStats st;
  quantizeDequantize(x.data(), out.data(), 1, 32, s, &st);
  const float S = 2688.f / 3.f;
  EXPECT_EQ(st.scale, double(S));
  for (int b = 0; b < 2; ++b) {
    float amax = 0;
    for (int i = 0; i < 16; ++i) amax = std::fmax(amax, std::fabs(x[std::size_t(16 * b + i)]));
    const float sb = roundToMini(amax / 6.f * S, MiniFormat::E4M3, Overflow::Saturate);
    for (int i = 0; i < 16; ++i) {
      const float v = x[std::size_t(16 * b + i)];
      EXPECT_EQ(out[std::size_t(16 * b + i)], roundToMini(v * (S / sb), MiniFormat::E2M1, Overflow::Saturate) * sb / S)
          << b << " " << i;
    }
  }
  EXPECT_EQ(out[20], 3.f) << "the amax maps to E2M1's 6 exactly";
}

TEST(Fp8Quantize, HadamardKeepsTheProductAndStochasticRoundingIsSeeded) {
  // Two operands transformed with the same signs: their dot products stay those of the inputs
  // (up to the quantisation), and the outlier no longer dominates its block.
  std::vector<float> a(64), b(64);
  for (int i = 0; i < 64; ++i) {
    a[std::size_t(i)] = std::sin(0.3f * float(i));
    b[std::size_t(i)] = std::cos(0.2f * float(i));
  }
  a[5] = 40.f;
  QuantSpec s;
  s.scaling = QuantSpec::Scaling::Nvfp4;
  s.format = MiniFormat::E2M1;
  s.block = 16;
  s.hadamardSigns = 0x1234;
  auto dot = [](const std::vector<float>& x, const std::vector<float>& y) {
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) d += double(x[i]) * y[i];
    return d;
  };
  const double exact = dot(a, b);
  std::vector<float> qa(64), qb(64), ha(64), hb(64);
  quantizeDequantize(a.data(), qa.data(), 1, 64, s, nullptr);
  quantizeDequantize(b.data(), qb.data(), 1, 64, s, nullptr);
  s.hadamard = true;
  quantizeDequantize(a.data(), ha.data(), 1, 64, s, nullptr);
  quantizeDequantize(b.data(), hb.data(), 1, 64, s, nullptr);
  EXPECT_LT(std::fabs(dot(ha, hb) - exact), std::fabs(dot(qa, qb) - exact))
      << "the transform spreads the outlier: a smaller error in the product";
  s.hadamard = false;
  s.stochastic = true;
  s.seed = 99;
  std::vector<float> r1(64), r2(64), r3(64);
  quantizeDequantize(b.data(), r1.data(), 1, 64, s, nullptr);
  quantizeDequantize(b.data(), r2.data(), 1, 64, s, nullptr);
  s.seed = 100;
  quantizeDequantize(b.data(), r3.data(), 1, 64, s, nullptr);
  EXPECT_EQ(r1, r2) << "the same seed, the same draws (a resumed run repeats them)";
  EXPECT_NE(r1, r3);
}

TEST(Fp8Quantize, BlockwiseTilesAre1x128Or128x128) {
  const std::int64_t rows = 130, cols = 256;
  std::vector<float> x(std::size_t(rows * cols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i)) * (i < 128 ? 50.f : 1.f);
  std::vector<float> out(x.size());
  QuantSpec s;
  s.scaling = QuantSpec::Scaling::Blockwise;
  s.block = 128;
  QuantStats st;
  quantizeDequantize(x.data(), out.data(), rows, cols, s, &st);
  // 1x128: row 0's first tile has amax ~50, its second ~1: each its own scale.
  float amax1 = 0;
  for (int j = 128; j < 256; ++j) amax1 = std::fmax(amax1, std::fabs(x[std::size_t(j)]));
  const float s1 = 448.f / amax1;
  EXPECT_EQ(out[200], e4m3(x[200] * s1) * (1.f / s1));
  EXPECT_EQ(st.blockExponents.size() > 1, true);
  s.square = true;  // 128x128: row 1's first tile shares row 0's amax (~50)
  quantizeDequantize(x.data(), out.data(), rows, cols, s, &st);
  float amax0 = 0;
  for (int j = 0; j < 128; ++j) amax0 = std::fmax(amax0, std::fabs(x[std::size_t(j)]));
  const float s0 = 448.f / amax0;
  EXPECT_EQ(out[256 + 3], e4m3(x[256 + 3] * s0) * (1.f / s0));
  // Rows 128 and 129 form a partial tile of their own.
  float amaxLast = 0;
  for (std::int64_t r = 128; r < 130; ++r)
    for (int j = 0; j < 128; ++j) amaxLast = std::fmax(amaxLast, std::fabs(x[std::size_t(r * cols + j)]));
  const float sl = 448.f / amaxLast;
  EXPECT_EQ(out[std::size_t(129 * cols + 7)], e4m3(x[std::size_t(129 * cols + 7)] * sl) * (1.f / sl));
}

// Delayed scaling, by hand: step 1 uses scale 1; each later step the scale is max / the
// window's max (or most recent) amax of the steps before it, / 2^margin.
TEST(Fp8Recipes, DelayedScalingFollowsTheAmaxHistory) {
  Fp8Config c;
  c.recipe = "delayed";
  c.historyLen = 2;
  c.keepBf16 = "none";
  Fp8Context f8(c, 1);
  const float amaxes[] = {2.f, 8.f, 1.f, 0.5f, NAN, 4.f};
  const float expect[] = {1.f, 448.f / 2, 448.f / 8, 448.f / 8, 448.f / 1, 448.f / 0.5f};
  for (int step = 1; step <= 6; ++step) {
    f8.beginStep(step, false);
    std::vector<float> v{amaxes[step - 1], 0.25f};
    f8.quantize("fc", Fp8Role::Input, Fp8Gemm::Forward, v, 1, 2, true);
    const auto r = f8.takeRecords();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].scale, double(expect[step - 1])) << "step " << step;
    EXPECT_EQ(r[0].tensor, "fc.x");
  }
  // Step 6 used 448 / 0.5: the window held {1, 0.5}; the NaN of step 5 never entered it.
  c.amaxCompute = "most_recent";
  c.margin = 1;
  Fp8Context recent(c, 1);
  const float expectRecent[] = {1.f, 448.f / 2 / 2, 448.f / 8 / 2, 448.f / 1 / 2, 448.f / 0.5f / 2, 448.f / 0.5f / 2};
  for (int step = 1; step <= 6; ++step) {
    recent.beginStep(step, false);
    std::vector<float> v{amaxes[step - 1], 0.25f};
    recent.quantize("fc", Fp8Role::Input, Fp8Gemm::Forward, v, 1, 2, true);
    EXPECT_EQ(recent.takeRecords()[0].scale, double(expectRecent[step - 1])) << "most_recent step " << step;
  }
}

TEST(Fp8Recipes, StateRoundTripsAndEvaluationLeavesItAlone) {
  Fp8Config c;
  c.keepBf16 = "none";
  Fp8Context a(c, 1), b(c, 1);
  for (int step = 1; step <= 3; ++step) {
    a.beginStep(step, false);
    std::vector<float> v{float(step), -0.5f};
    a.quantize("fc", Fp8Role::GradOutput, Fp8Gemm::Dgrad, v, 1, 2, true);
    std::vector<float> e{1000.f};
    a.quantize("fc", Fp8Role::GradOutput, Fp8Gemm::Dgrad, e, 1, 1, false);  // evaluation: no history
    EXPECT_EQ(a.takeRecords().size(), 1u) << "evaluation records nothing";
  }
  b.restore(a.state());
  EXPECT_EQ(a.state(), b.state());
  for (Fp8Context* f : {&a, &b}) {
    f->beginStep(4, false);
    std::vector<float> v{0.1f};
    f->quantize("fc", Fp8Role::GradOutput, Fp8Gemm::Dgrad, v, 1, 1, true);
  }
  EXPECT_EQ(a.takeRecords()[0].scale, double(57344.f / 3.f)) << "E5M2 (hybrid dy): the window's max is step 3's 3";
  EXPECT_EQ(b.takeRecords()[0].scale, double(57344.f / 3.f));
  Fp8Config longer = c;
  longer.historyLen = 1;
  Fp8Context shortOne(longer, 1);
  EXPECT_THROW(shortOne.restore(a.state()), ConfigError) << "3 amaxes do not fit a history of 1";
}

TEST(Fp8Recipes, BadKeysAreRefusedNamingTheKey) {
  auto refusal = [](Fp8Config c) {
    try {
      validateFp8Config(c);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Fp8Config c;
  c.recipe = "fp7";
  EXPECT_EQ(refusal(c).rfind("fp8.recipe:", 0), 0u) << refusal(c);
  c = {};
  c.historyLen = 0;
  EXPECT_EQ(refusal(c).rfind("fp8.history_len:", 0), 0u);
  c = {};
  c.format = "e5m2";
  EXPECT_EQ(refusal(c).rfind("fp8.format:", 0), 0u);
  c = {};
  c.injectSpike = "x:fc.x:3";
  EXPECT_EQ(refusal(c).rfind("fp8.inject_spike:", 0), 0u);
  c = {};
  c.accumBits = 30;
  EXPECT_EQ(refusal(c).rfind("fp8.accum_bits:", 0), 0u);
}

TEST(Fp8Recipes, AccumulatorModelLosesSmallProductsUnlessPromoted) {
  // One large product (16), then 1023 small ones (2^-7, exact in every partial sum below 1): a
  // 10-bit accumulator holding 16 has a last bit of 2^-6 and truncates every small addition
  // away; promoted into fp32 every 128 products, only the first chunk's 127 are lost and the
  // other 896 add up exactly in fresh partial sums (896 x 2^-7 = 7); 23 bits keep all of them.
  const std::int64_t k = 1024;
  std::vector<float> a(k, 1.f), b(k, 0.0078125f);
  b[0] = 16.f;
  float c = 0;
  gemmWithAccumulatorModel(a.data(), b.data(), &c, 1, 1, k, 10, 1 << 20);
  EXPECT_EQ(c, 16.f);
  gemmWithAccumulatorModel(a.data(), b.data(), &c, 1, 1, k, 10, 128);
  EXPECT_EQ(c, 23.f);
  gemmWithAccumulatorModel(a.data(), b.data(), &c, 1, 1, k, 23, 1 << 20);
  EXPECT_EQ(c, 16.f + 1023.f / 128.f);
}

// Large operands are quantised by several threads: the values are the same bits as one thread's
// (each element's cast depends on its block only), the counts the same, the energy sums equal
// to rounding. Every scaling kind, along either dimension, stochastic rounding included.
TEST(Fp8Quantize, ThreadsGiveTheSameValues) {
  const std::int64_t rows = 384, cols = 512;
  std::vector<float> x(std::size_t(rows * cols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.001f * float(i * i % 100003)) * std::ldexp(1.f, int(i % 23) - 11);
  for (auto scaling : {QuantSpec::Scaling::PerTensor, QuantSpec::Scaling::Mx, QuantSpec::Scaling::Blockwise, QuantSpec::Scaling::Nvfp4})
    for (bool alongRows : {false, true}) {
      QuantSpec s;
      s.scaling = scaling;
      s.alongRows = alongRows;
      s.tensorScale = 3.f;
      s.block = scaling == QuantSpec::Scaling::Mx ? 32 : scaling == QuantSpec::Scaling::Blockwise ? 128 : 16;
      s.square = alongRows;
      s.format = scaling == QuantSpec::Scaling::Nvfp4 ? MiniFormat::E2M1 : MiniFormat::E4M3;
      s.hadamard = scaling == QuantSpec::Scaling::Nvfp4 && alongRows;
      s.stochastic = scaling == QuantSpec::Scaling::Nvfp4;
      s.seed = 5;
      std::vector<float> one(x.size()), two(x.size());
      QuantStats a, b;
      const int before = omp_get_max_threads();
      omp_set_num_threads(1);
      quantizeDequantize(x.data(), one.data(), rows, cols, s, &a);
      omp_set_num_threads(2);
      quantizeDequantize(x.data(), two.data(), rows, cols, s, &b);
      omp_set_num_threads(before);
      EXPECT_EQ(one, two) << int(scaling) << " " << alongRows;
      EXPECT_EQ(a.underflow, b.underflow);
      EXPECT_EQ(a.overflow, b.overflow);
      EXPECT_EQ(a.blockExponents, b.blockExponents);
      EXPECT_NEAR(a.errorSq, b.errorSq, 1e-9 * a.errorSq);
    }
}
