// The per-element code kernels/common shares between the CPU loops and the CUDA kernels,
// checked on the CPU: the two histogram binnings agree for power-of-two multipliers, the
// finiteness test matches std::isfinite, the dropout mask keeps about 1 - p, the optimizer
// element math matches a double reference, and the scale rules give hand-computed PyTorch /
// Apex / Megatron sequences (both the shared applyScaleRule and the host GradScaler).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/amp/scale_policies.h"
#include "engine/backend/backend.h"
#include "kernels/common/deferred_rounding.h"
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

// The fused unscale's element (kernels/common/deferred_rounding.h, run by the CUDA kernels) is
// the CPU backend's two passes, roundThrough then the unscale, bit for bit: on random bit
// patterns (every binade, subnormals, fp16 overflows that become inf, NaN) and the edges.
TEST(SharedMath, DeferredRoundingEqualsTheCpusRoundThroughThenUnscale) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::vector<float> v(20000);
  for (float& x : v) x = bitsToFloat(bits(rng));
  const float edges[] = {65504.f, 65519.99f, 65520.f, -65536.f, 5.9604645e-8f, 2.9802322e-8f,
                         2.98e-8f, 0.f, -0.f, 3.3895314e38f, 3.3961775e38f, 1e-45f,
                         std::numeric_limits<float>::infinity()};
  for (std::size_t i = 0; i < std::size(edges); ++i) v[i] = edges[i];
  auto be = makeCpuBackend();
  for (DType through : {DType::F16, DType::BF16})
    for (float invScale : {1.f, 1.f / 65536.f, 3.f}) {
      Tensor t = be->fromHost(v, {std::int64_t(v.size())}, DType::F32, MemCategory::Gradients);
      be->roundThrough(t, through);
      Tensor* list[] = {&t};
      be->unscaleAndCheck(list, invScale);
      const std::vector<float> twoPasses = be->toHostFloat(t);
      const int code = through == DType::F16 ? 1 : 2;
      ASSERT_TRUE(unscaleStores(invScale, code));
      for (std::size_t i = 0; i < v.size(); ++i) {
        float fused = settledGrad(v[i], code);
        if (invScale != 1.f) fused = fused * invScale;  // the fp32 gradient's own rounding
        if (std::isnan(fused) && std::isnan(twoPasses[i])) continue;
        ASSERT_EQ(floatBits(fused), floatBits(twoPasses[i]))
            << dtypeName(through) << " invScale " << invScale << " value " << v[i];
      }
    }
  EXPECT_FALSE(unscaleStores(1.f, 0)) << "x * 1 without a rounding is skipped (NaN payloads kept)";
  EXPECT_EQ(settledGrad(65520.f, 1), std::numeric_limits<float>::infinity());
  EXPECT_EQ(settledGrad(1.f + 1.f / 4096, 1), 1.f);
  EXPECT_EQ(settledGrad(1.f + 1.f / 256, 2), 1.f);
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

namespace {
// One expected iteration: the step's found_inf, then the scale, tracker, hysteresis budget and
// event after it, computed by hand from PyTorch's _amp_update_scale_ (and Apex's / Megatron's
// rules for the variants).
struct Expected {
  bool inf;
  float scale;
  std::int32_t tracker, hysteresisLeft;
  std::int32_t event;
};

// Runs the sequence through the shared rule (what the CUDA kernel runs) and through the host
// GradScaler's updateScale with the equivalent config; both must give the hand values.
void expectSequence(const ScalerConfig& c, const std::vector<Expected>& seq, const char* what) {
  const ScaleRule rule = scaleRuleOf(c);
  ScaleState host = initialScaleState(c);
  ScaleCounters shared{host.scale, host.growthTracker, host.hysteresisLeft};
  for (std::size_t i = 0; i < seq.size(); ++i) {
    const Expected& x = seq[i];
    const std::int32_t event = applyScaleRule(rule, shared, x.inf);
    const ScaleEvent hostEvent = updateScale(c, host, x.inf);
    EXPECT_EQ(shared.scale, x.scale) << what << " step " << i + 1;
    EXPECT_EQ(shared.growthTracker, x.tracker) << what << " step " << i + 1;
    EXPECT_EQ(shared.hysteresisLeft, x.hysteresisLeft) << what << " step " << i + 1;
    EXPECT_EQ(event, x.event) << what << " step " << i + 1;
    EXPECT_EQ(host.scale, x.scale) << what << " (host) step " << i + 1;
    EXPECT_EQ(host.growthTracker, x.tracker) << what << " (host) step " << i + 1;
    EXPECT_EQ(host.hysteresisLeft, x.hysteresisLeft) << what << " (host) step " << i + 1;
    EXPECT_EQ(int(hostEvent.kind), x.event) << what << " (host) step " << i + 1;
  }
}
}  // namespace

// PyTorch's rule: growth after growth_interval consecutive clean steps (the incremented tracker
// equals the interval; the tracker resets), backoff and a tracker reset on inf, no floor.
TEST(SharedMath, DynamicRuleFollowsPyTorchsSequence) {
  ScalerConfig c;
  c.kind = ScalerKind::Dynamic;
  c.growthInterval = 3;
  c.initScale = 65536.0;
  const std::int32_t h = initialScaleState(c).hysteresisLeft;  // Dynamic leaves it alone
  expectSequence(c,
                 {{false, 65536.f, 1, h, kScaleNone},
                  {false, 65536.f, 2, h, kScaleNone},
                  {false, 131072.f, 0, h, kScaleGrowth},  // third clean step: x2, tracker reset
                  {true, 65536.f, 0, h, kScaleBackoff},
                  {false, 65536.f, 1, h, kScaleNone},
                  {false, 65536.f, 2, h, kScaleNone},
                  {true, 32768.f, 0, h, kScaleBackoff},    // an inf resets the count
                  {false, 32768.f, 1, h, kScaleNone},
                  {false, 32768.f, 2, h, kScaleNone},
                  {false, 65536.f, 0, h, kScaleGrowth}},
                 "dynamic");
  // No floor: the scale falls below 1.
  c.initScale = 1.0;
  expectSequence(c, {{true, 0.5f, 0, h, kScaleBackoff}, {true, 0.25f, 0, h, kScaleBackoff}},
                 "dynamic below 1");
  // Growth only when the grown scale is finite: 2^127 * 2 overflows fp32, so the scale stays
  // and the tracker still resets (as _amp_update_scale_ does).
  c.initScale = std::ldexp(1.0, 127);
  c.growthInterval = 1;
  expectSequence(c, {{false, std::ldexp(1.f, 127), 0, h, kScaleGrowthRejected}}, "dynamic at 2^127");
  // The product is taken in double and narrowed once: float(3 * 1.1) is 3.3f, while fp32
  // arithmetic (3.f * 1.1f) would give the next float up.
  c.initScale = 3.0;
  c.growthFactor = 1.1;
  expectSequence(c, {{false, 3.3f, 0, h, kScaleGrowth}}, "dynamic x1.1");
  EXPECT_NE(3.3f, 3.f * 1.1f);  // the case above tells the two apart
}

TEST(SharedMath, StaticAndNoneNeverMoveTheScale) {
  for (ScalerKind kind : {ScalerKind::Static, ScalerKind::None}) {
    ScalerConfig c;
    c.kind = kind;
    c.growthInterval = 1;
    c.initScale = 1024.0;
    const ScaleState start = initialScaleState(c);
    expectSequence(c,
                   {{false, start.scale, 0, start.hysteresisLeft, kScaleNone},
                    {true, start.scale, 0, start.hysteresisLeft, kScaleNone}},
                   std::string(scalerKindName(kind)).c_str());
  }
}

// Apex's dynamic scaler: backoff floored at min_loss_scale, growth capped at max_loss_scale;
// Clamped when the bound changed the result.
TEST(SharedMath, ApexRuleFloorsAndCaps) {
  ScalerConfig c;
  c.kind = ScalerKind::ApexDynamic;
  c.growthInterval = 2;
  c.initScale = 2.0;
  c.minScale = 1.0;
  c.maxScale = 8.0;
  const std::int32_t h = initialScaleState(c).hysteresisLeft;
  expectSequence(c,
                 {{true, 1.f, 0, h, kScaleBackoff},
                  {true, 1.f, 0, h, kScaleClamped},  // 0.5 floored to 1
                  {false, 1.f, 1, h, kScaleNone},
                  {false, 2.f, 0, h, kScaleGrowth},
                  {false, 2.f, 1, h, kScaleNone},
                  {false, 4.f, 0, h, kScaleGrowth},
                  {false, 4.f, 1, h, kScaleNone},
                  {false, 8.f, 0, h, kScaleGrowth},
                  {false, 8.f, 1, h, kScaleNone},
                  {false, 8.f, 0, h, kScaleClamped}},  // 16 capped to 8
                 "apex");
}

// Megatron's hysteresis (2): the first inf is absorbed (budget 2 -> 1, scale kept, tracker
// reset), the next one backs off; the budget refills only on growth (consecutive off).
TEST(SharedMath, HysteresisRuleAbsorbsThenBacksOff) {
  ScalerConfig c;
  c.kind = ScalerKind::Hysteresis;
  c.growthInterval = 2;
  c.initScale = 1024.0;
  c.hysteresis = 2;
  ASSERT_EQ(initialScaleState(c).hysteresisLeft, 2);
  expectSequence(c,
                 {{false, 1024.f, 1, 2, kScaleNone},
                  {true, 1024.f, 0, 1, kScaleHysteresisAbsorbed},
                  {false, 1024.f, 1, 1, kScaleNone},
                  {true, 512.f, 0, 1, kScaleBackoff},
                  {false, 512.f, 1, 1, kScaleNone},
                  {false, 1024.f, 0, 2, kScaleGrowth},  // growth refills the budget
                  {true, 1024.f, 0, 1, kScaleHysteresisAbsorbed}},
                 "hysteresis");
}
