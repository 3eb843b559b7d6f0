// The per-element code kernels/common shares between the CPU loops and the CUDA kernels,
// checked on the CPU: the two histogram binnings agree for power-of-two multipliers, the
// finiteness test matches std::isfinite, the dropout mask keeps about 1 - p, the optimizer
// element math matches a double reference, and applyScaleRule is what GradScaler applies.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "engine/amp/scale_policies.h"
#include "kernels/common/dropout_math.h"
#include "kernels/common/exponent_bins.h"
#include "kernels/common/optimizer_math.h"
#include "kernels/common/scale_update.h"

using namespace amp;

TEST(SharedMath, BinningFromBitsEqualsBinningInDouble) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int shift : {0, -16, -24, 10, 40}) {
    for (int i = 0; i < 200000; ++i) {
      const float v = bitsToFloat(bits(rng));
      const ScaledBin a = binScaledByPowerOfTwo(v, shift);
      const ScaledBin b = binDouble(double(v) * std::ldexp(1.0, shift));
      ASSERT_EQ(a.bin, b.bin) << v << " shift " << shift;
      ASSERT_EQ(a.nonFinite, b.nonFinite) << v;
      ASSERT_EQ(a.underflow, b.underflow) << v << " shift " << shift;
      ASSERT_EQ(a.subnormal, b.subnormal) << v << " shift " << shift;
      ASSERT_EQ(a.overflow, b.overflow) << v << " shift " << shift;
    }
  }
}

TEST(SharedMath, FinitenessFromBitsMatchesTheLibrary) {
  std::mt19937 rng(2);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 100000; ++i) {
    const float v = bitsToFloat(bits(rng));
    ASSERT_EQ(isFiniteFloat(v), std::isfinite(v)) << v;
  }
  EXPECT_FALSE(isFiniteFloat(std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(isFiniteFloat(std::numeric_limits<float>::max()));
}

TEST(SharedMath, DropoutKeepsAboutOneMinusP) {
  for (float p : {0.1f, 0.5f, 0.9f}) {
    const std::uint64_t threshold = dropoutThreshold(p);
    int kept = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) kept += dropoutKeeps(42, i, threshold, p);
    EXPECT_NEAR(double(kept) / n, 1.0 - p, 0.01) << p;
  }
  EXPECT_TRUE(dropoutKeeps(1, 5, dropoutThreshold(0.f), 0.f));
}

TEST(SharedMath, AdamElementMatchesADoubleReference) {
  const AdamScalars s = makeAdamScalars(1e-3f, 0.9f, 0.999f, 1e-8f, 0.f, false, 3);
  float m = 0.01f, v = 1e-4f, delta = 0;
  const float w = adamUpdate(s, 0.5f, 0.2f, m, v, delta);
  // The reference in double from the same fp32 hyper-parameters (0.9f is not 0.9).
  const double b1 = 0.9f, b2 = 0.999f, lr = 1e-3f, eps = 1e-8f;
  const double md = 0.01f + (0.2f - double(0.01f)) * (1 - b1);
  const double vd = double(1e-4f) * b2 + (1 - b2) * double(0.2f) * double(0.2f);
  const double ref = 0.5 - lr / (1 - std::pow(b1, 3)) * md / (std::sqrt(vd) / std::sqrt(1 - std::pow(b2, 3)) + eps);
  EXPECT_NEAR(m, md, 1e-6 * md);
  EXPECT_NEAR(v, vd, 1e-6 * vd);
  EXPECT_NEAR(w, ref, 1e-6);
  EXPECT_NEAR(delta, ref - 0.5, 1e-6);
}

TEST(SharedMath, SgdElementMatchesPyTorchsFormula) {
  const float d = sgdDecayedGrad(2.f, 0.5f, 0.1f);  // g + wd * w
  EXPECT_FLOAT_EQ(d, 0.7f);
  const float b = sgdMomentumBuffer(1.f, d, 0.9f, 1.f, false);
  EXPECT_FLOAT_EQ(b, 0.9f + 0.7f);
  EXPECT_FLOAT_EQ(sgdMomentumBuffer(123.f, d, 0.9f, 1.f, true), d);  // seeded on first use
  EXPECT_FLOAT_EQ(sgdDelta(0.1f, d, b, 0.9f, false), -0.1f * b);
  EXPECT_FLOAT_EQ(sgdDelta(0.1f, d, b, 0.9f, true), -0.1f * (d + 0.9f * b));
}

TEST(SharedMath, ApplyScaleRuleIsTheGradScalersRule) {
  for (ScalerKind kind : {ScalerKind::Dynamic, ScalerKind::Static, ScalerKind::None,
                          ScalerKind::ApexDynamic, ScalerKind::Hysteresis}) {
    ScalerConfig c;
    c.kind = kind;
    c.growthInterval = 3;
    c.maxScale = 1e6;
    ScaleState host = initialScaleState(c);
    ScaleCounters shared{host.scale, host.growthTracker, host.hysteresisLeft};
    for (int step = 0; step < 40; ++step) {
      const bool inf = step % 7 == 3 || step % 11 == 0;
      const ScaleEvent e = updateScale(c, host, inf);
      const int kindShared = applyScaleRule(scaleRuleOf(c), shared, inf);
      ASSERT_EQ(host.scale, shared.scale) << scalerKindName(kind) << " step " << step;
      ASSERT_EQ(host.growthTracker, shared.growthTracker);
      ASSERT_EQ(host.hysteresisLeft, shared.hysteresisLeft);
      ASSERT_EQ(int(e.kind), kindShared);
    }
  }
}
