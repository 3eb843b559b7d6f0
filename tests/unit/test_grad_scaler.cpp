// GradScaler against PyTorch's torch.amp.GradScaler semantics (SPEC-amp.md) and the variants.
// Expected sequences are written out by hand, with their derivation, so a wrong rule fails.
#include "tests/unit/grad_scaler_test_support.h"

namespace amp {
namespace {
using namespace scaler_test;


// THE sequence. init 65536, growth_interval 3, non-finite gradients at steps 2 and 7.
// tracker starts at 0; a clean step sets tracker+1, and when that equals 3 the scale doubles and
// the tracker returns to 0; an overflow halves the scale and zeroes the tracker:
//  step 1 clean : successful 1            -> 65536, t=1
//  step 2 inf   : backoff 65536*0.5       -> 32768, t=0  (skipped)
//  step 3 clean : 1                       -> 32768, t=1
//  step 4 clean : 2                       -> 32768, t=2
//  step 5 clean : 3 == 3, grow 32768*2    -> 65536, t=0
//  step 6 clean : 1                       -> 65536, t=1
//  step 7 inf   : backoff                 -> 32768, t=0  (skipped)
//  step 8 clean : 1                       -> 32768, t=1
//  step 9 clean : 2                       -> 32768, t=2
//  step 10 clean: 3 == 3, grow            -> 65536, t=0
//  step 11 clean: 1                       -> 65536, t=1
//  step 12 clean: 2                       -> 65536, t=2
TEST(GradScaler, PyTorchSequenceWithInfsAtSteps2And7) {
  GradScaler scaler(dynamicConfig(65536.0, 3));
  FakeOptimizer opt;
  const float expectedScale[12] = {65536, 32768, 32768, 32768, 65536, 65536,
                                   32768, 32768, 32768, 65536, 65536, 65536};
  const int expectedTracker[12] = {1, 0, 1, 2, 0, 1, 0, 1, 2, 0, 1, 2};
  const bool expectedRan[12] = {true, false, true, true, true, true,
                                false, true, true, true, true, true};
  const ScaleEvent::Kind expectedEvent[12] = {
      ScaleEvent::None, ScaleEvent::Backoff, ScaleEvent::None,   ScaleEvent::None,
      ScaleEvent::Growth, ScaleEvent::None, ScaleEvent::Backoff, ScaleEvent::None,
      ScaleEvent::None,   ScaleEvent::Growth, ScaleEvent::None, ScaleEvent::None};
  // The scale used to unscale step k is the scale after update k-1.
  const float expectedInv[12] = {1.0f / 65536, 1.0f / 65536, 1.0f / 32768, 1.0f / 32768,
                                 1.0f / 32768, 1.0f / 65536, 1.0f / 65536, 1.0f / 32768,
                                 1.0f / 32768, 1.0f / 32768, 1.0f / 65536, 1.0f / 65536};
  for (int k = 1; k <= 12; ++k) {
    const bool overflow = (k == 2 || k == 7);
    const float before = scaler.scale();
    EXPECT_EQ(iterate(scaler, opt, overflow), expectedRan[k - 1]) << "step " << k;
    EXPECT_EQ(scaler.scale(), expectedScale[k - 1]) << "step " << k;
    EXPECT_EQ(scaler.growthTracker(), expectedTracker[k - 1]) << "step " << k;
    EXPECT_EQ(opt.invScales.back(), expectedInv[k - 1]) << "step " << k;
    EXPECT_EQ(scaler.lastEvent().kind, expectedEvent[k - 1]) << "step " << k;
    EXPECT_EQ(scaler.lastEvent().oldScale, before);
    EXPECT_EQ(scaler.lastEvent().newScale, expectedScale[k - 1]);
    EXPECT_EQ(scaler.lastEvent().foundInf, overflow);
  }
  EXPECT_EQ(opt.stepCalls, 10);
  EXPECT_EQ(opt.unscaleCalls, 12);
}

TEST(GradScaler, GrowthToInfIsRejected) {
  // 2^127 * 2 = 2^128 overflows fp32, so the scale stays; the tracker still resets.
  GradScaler scaler(dynamicConfig(std::ldexp(1.0, 127), 1));
  FakeOptimizer opt;
  iterate(scaler, opt, false);
  EXPECT_EQ(scaler.scale(), std::ldexp(1.0f, 127));
  EXPECT_EQ(scaler.growthTracker(), 0);
  EXPECT_EQ(scaler.lastEvent().kind, ScaleEvent::GrowthRejected);
  // 2^127 * 1.5 is still finite, so a smaller factor is adopted.
  ScalerConfig c = dynamicConfig(std::ldexp(1.0, 127), 1);
  c.growthFactor = 1.5;
  GradScaler smaller(c);
  iterate(smaller, opt, false);
  EXPECT_EQ(smaller.scale(), std::ldexp(1.5f, 127));
  EXPECT_EQ(smaller.lastEvent().kind, ScaleEvent::Growth);
}

TEST(GradScaler, BackoffFallsBelowOneWithoutClamp) {
  GradScaler scaler(dynamicConfig(1.0, 2000));
  FakeOptimizer opt;
  const float expected[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
  for (float e : expected) {
    EXPECT_FALSE(iterate(scaler, opt, true));
    EXPECT_EQ(scaler.scale(), e);
  }
  EXPECT_EQ(opt.stepCalls, 0);
}

TEST(GradScaler, FactorsMultiplyInDoubleThenRoundToFp32) {
  // 0x1.9d5cdcp+5 * 0.3 = 15.5011024... in double -> fp32 0x1.f00908p+3; the all-fp32 product
  // would give 15.501103401184082 instead.
  ScalerConfig c = dynamicConfig(0x1.9d5cdcp+5, 2000);
  c.backoffFactor = 0.3;
  GradScaler backoff(c);
  FakeOptimizer opt;
  iterate(backoff, opt, true);
  EXPECT_EQ(backoff.scale(), 0x1.f00908p+3f);
  // 0x1.2e6426p+6 * 1.1 -> fp32 0x1.4ca15cp+6 (83.15757751464844; fp32 math: 83.15758514404297).
  c = dynamicConfig(0x1.2e6426p+6, 1);
  c.growthFactor = 1.1;
  GradScaler growth(c);
  iterate(growth, opt, false);
  EXPECT_EQ(growth.scale(), 0x1.4ca15cp+6f);
}

TEST(GradScaler, UpdateWithNewScaleKeepsTracker) {
  GradScaler scaler(dynamicConfig(65536.0, 3));
  FakeOptimizer opt;
  iterate(scaler, opt, false);
  iterate(scaler, opt, false);
  ASSERT_EQ(scaler.growthTracker(), 2);
  scaler.update(1024.0f);  // needs no recorded inf check
  EXPECT_EQ(scaler.scale(), 1024.0f);
  EXPECT_EQ(scaler.growthTracker(), 2);
  EXPECT_EQ(scaler.lastEvent().kind, ScaleEvent::Manual);
  EXPECT_EQ(scaler.lastEvent().oldScale, 65536.0f);
  iterate(scaler, opt, false);  // tracker 2 + 1 == 3: grows from the new scale
  EXPECT_EQ(scaler.scale(), 2048.0f);
  EXPECT_EQ(scaler.growthTracker(), 0);
}

TEST(GradScaler, StateMachineErrorsCarryPyTorchMessages) {
  GradScaler scaler;
  FakeOptimizer opt;
  opt.setScaledGrads(scaler.scale(), false);
  scaler.unscale(opt);
  EXPECT_EQ(errorOf([&] { scaler.unscale(opt); }),
            "unscale_() has already been called on this optimizer since the last update().");
  EXPECT_TRUE(stepRan(scaler, opt));
  EXPECT_EQ(errorOf([&] { scaler.unscale(opt); }), "unscale_() is being called after step().");
  EXPECT_EQ(errorOf([&] { scaler.step(opt); }),
            "step() has already been called since the last update().");
  EXPECT_THROW(scaler.step(opt), std::logic_error);
  scaler.update();
  // After update() every stage is READY again.
  opt.setScaledGrads(scaler.scale(), false);
  EXPECT_NO_THROW(scaler.unscale(opt));
}

TEST(GradScaler, NoInfChecksRecorded) {
  GradScaler scaler;
  EXPECT_EQ(errorOf([&] { scaler.update(); }), "No inf checks were recorded prior to update.");
  FakeOptimizer empty;  // no parameter has a gradient: nothing is checked
  scaler.unscale(empty);
  EXPECT_EQ(empty.unscaleCalls, 0);
  EXPECT_EQ(errorOf([&] { scaler.step(empty); }),
            "No inf checks were recorded for this optimizer.");
  EXPECT_EQ(empty.stepCalls, 0);
  EXPECT_EQ(errorOf([&] { scaler.update(); }), "No inf checks were recorded prior to update.");
  EXPECT_EQ(scaler.scale(), 65536.0f);
}

TEST(GradScaler, Fp16GradientsAreRefusedUnlessAllowed) {
  GradScaler scaler;
  FakeOptimizer opt;
  opt.setScaledGrads(scaler.scale(), false);
  opt.fp16 = true;
  EXPECT_EQ(errorOf([&] { scaler.unscale(opt); }), "Attempting to unscale FP16 gradients.");
  EXPECT_EQ(errorOf([&] { scaler.step(opt); }), "Attempting to unscale FP16 gradients.");
  EXPECT_EQ(opt.unscaleCalls, 0);  // refused before touching anything, stage still READY
  EXPECT_EQ(opt.stepCalls, 0);
  opt.fp16 = false;
  EXPECT_TRUE(stepRan(scaler, opt));

  ScalerConfig c;
  c.allowFp16Grads = true;
  GradScaler pureFp16(c);
  FakeOptimizer half;
  half.setScaledGrads(pureFp16.scale(), false);
  half.fp16 = true;
  EXPECT_TRUE(stepRan(pureFp16, half));
  EXPECT_EQ(half.grads[0][0], 1.0f);
}

TEST(GradScaler, UnscaleMultipliesEveryGradientEvenAfterAnInf) {
  GradScaler scaler(dynamicConfig(2.0, 2000));
  FakeOptimizer opt;
  opt.grads = {{1.0f, 2.0f}, {kInf, 4.0f}, {6.0f, kNaN, 8.0f}};
  scaler.unscale(opt);
  EXPECT_EQ(opt.invScales, std::vector<float>{0.5f});
  EXPECT_EQ(opt.grads[0], (std::vector<float>{0.5f, 1.0f}));
  EXPECT_EQ(opt.grads[1][0], kInf);
  EXPECT_EQ(opt.grads[1][1], 2.0f);
  EXPECT_EQ(opt.grads[2][0], 3.0f);
  EXPECT_TRUE(std::isnan(opt.grads[2][1]));
  EXPECT_EQ(opt.grads[2][2], 4.0f);
  const auto outcome = scaler.lastUnscale(opt);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->foundInf);
  EXPECT_EQ(outcome->firstNonFinite, 1);
  EXPECT_FALSE(stepRan(scaler, opt));
  EXPECT_EQ(opt.stepCalls, 0);
  scaler.update();
  EXPECT_FALSE(scaler.lastUnscale(opt).has_value());  // cleared by update()
  EXPECT_EQ(scaler.scale(), 1.0f);
}

TEST(GradScaler, InvScaleIsDoubleReciprocalRoundedToFp32) {
  GradScaler scaler(dynamicConfig(3.0, 2000));
  FakeOptimizer opt;
  opt.grads = {{5.0f}};
  scaler.unscale(opt);
  EXPECT_EQ(opt.invScales[0], 0x1.555556p-2f);  // fp32(1/3), rounded up
  // 5 * fp32(1/3) = 0x1.aaaaacp+0, one ulp above fp32(5/3) = 0x1.aaaaaap+0: unscaling multiplies
  // by the rounded reciprocal, it does not divide.
  EXPECT_EQ(opt.grads[0][0], 0x1.aaaaacp+0f);
}

TEST(GradScaler, UnscaleThenStepUnscalesOnce) {
  GradScaler scaler(dynamicConfig(4.0, 2000));
  FakeOptimizer opt;
  opt.grads = {{8.0f, 16.0f}};
  scaler.unscale(opt);  // e.g. to clip the true gradients before stepping
  EXPECT_TRUE(stepRan(scaler, opt));
  EXPECT_EQ(opt.unscaleCalls, 1);
  EXPECT_EQ(opt.grads[0], (std::vector<float>{2.0f, 4.0f}));
  EXPECT_EQ(opt.stepCalls, 1);
}

TEST(GradScaler, OptimizersAreTrackedSeparatelyAndInfsCombine) {
  GradScaler scaler(dynamicConfig(1024.0, 2000));
  FakeOptimizer a, b;
  a.setScaledGrads(scaler.scale(), false);
  b.setScaledGrads(scaler.scale(), true);
  scaler.unscale(a);
  scaler.unscale(b);  // a separate stage per optimizer
  EXPECT_TRUE(stepRan(scaler, a));
  EXPECT_FALSE(stepRan(scaler, b));
  scaler.update();  // b's inf backs off the shared scale
  EXPECT_EQ(scaler.scale(), 512.0f);
  EXPECT_EQ(scaler.growthTracker(), 0);
  // An optimizer only unscaled (not stepped) still contributes its found-inf.
  a.setScaledGrads(scaler.scale(), true);
  scaler.unscale(a);
  scaler.update();
  EXPECT_EQ(scaler.scale(), 256.0f);
}

TEST(GradScaler, ScaleLossIsAnFp32Product) {
  GradScaler scaler(dynamicConfig(3.0, 2000));
  // fp32(0.1) * 3 in fp32 = 0x1.333334p-2, not 0.1 * 3 in double (0.30000000000000004).
  EXPECT_EQ(scaler.scaleLoss(0.1), static_cast<double>(0x1.333334p-2f));
  GradScaler pow2;
  EXPECT_EQ(pow2.scaleLoss(0.1), static_cast<double>(0.1f) * 65536.0);
  EXPECT_EQ(pow2.scaleLoss(1.0), 65536.0);
  // 1e36 * 65536 overflows fp32 (the float multiply gives inf), as it would on the device.
  EXPECT_EQ(pow2.scaleLoss(1e36), std::numeric_limits<double>::infinity());
}

TEST(GradScaler, DisabledScalerIsTransparent) {
  ScalerConfig c;
  c.enabled = false;
  c.growthFactor = 0.5;  // not validated when disabled, as in PyTorch
  GradScaler scaler(c);
  FakeOptimizer opt;
  opt.setScaledGrads(1.0f, true);
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.growthTracker(), 0);
  EXPECT_EQ(scaler.scaleLoss(0.1), 0.1);  // unchanged, not even rounded to fp32
  scaler.unscale(opt);
  EXPECT_TRUE(stepRan(scaler, opt));  // runs even with an inf gradient
  EXPECT_TRUE(stepRan(scaler, opt));  // and no stage checks
  EXPECT_EQ(opt.stepCalls, 2);
  EXPECT_EQ(opt.unscaleCalls, 0);
  EXPECT_NO_THROW(scaler.update());
  scaler.update(8.0f);
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_TRUE(scaler.stateDict().empty());
  EXPECT_NO_THROW(scaler.loadStateDict({}));
}

TEST(GradScaler, StateDictHasPyTorchKeysAndRoundTrips) {
  ScalerConfig c = dynamicConfig(65536.0, 3);
  c.growthFactor = 4.0;
  c.backoffFactor = 0.25;
  GradScaler scaler(c);
  FakeOptimizer opt;
  iterate(scaler, opt, true);   // 16384, t=0
  iterate(scaler, opt, false);  // 16384, t=1
  const auto state = scaler.stateDict();
  const std::map<std::string, double> expected{{"scale", 16384.0},
                                               {"growth_factor", 4.0},
                                               {"backoff_factor", 0.25},
                                               {"growth_interval", 3.0},
                                               {"_growth_tracker", 1.0}};
  EXPECT_EQ(state, expected);

  GradScaler restored(dynamicConfig(2.0, 2000));
  restored.loadStateDict(state);
  EXPECT_EQ(restored.stateDict(), expected);
  // Both continue identically: t=2, then 3 == 3 grows by 4.
  for (GradScaler* s : {&scaler, &restored}) {
    iterate(*s, opt, false);
    iterate(*s, opt, false);
    EXPECT_EQ(s->scale(), 65536.0f);
    EXPECT_EQ(s->growthTracker(), 0);
  }
}

TEST(GradScaler, LoadStateDictErrors) {
  GradScaler scaler;
  EXPECT_EQ(errorOf([&] { scaler.loadStateDict({}); }),
            "The source state dict is empty, possibly because it was saved from a disabled "
            "instance of GradScaler.");
  std::map<std::string, double> state = scaler.stateDict();
  state.erase("_growth_tracker");
  EXPECT_EQ(errorOf([&] { scaler.loadStateDict(state); }),
            "scaler state dict is missing key \"_growth_tracker\"");
  state = scaler.stateDict();
  state["growth_interval"] = 2.5;
  EXPECT_EQ(errorOf([&] { scaler.loadStateDict(state); }),
            "scaler state dict: \"growth_interval\" must be an integer >= 1");
  state = scaler.stateDict();
  state["backoff_factor"] = 1.5;
  state["scale"] = 4.0;
  EXPECT_EQ(errorOf([&] { scaler.loadStateDict(state); }), "scaler.backoff_factor must be in (0, 1)");
  EXPECT_EQ(scaler.scale(), 65536.0f);  // a rejected dict changes nothing
}

TEST(GradScaler, TrackerPastIntervalNeverGrowsLikePyTorch) {
  // The kernel grows when tracker + 1 == interval; a loaded tracker of 5 with interval 3 skips it.
  GradScaler scaler(dynamicConfig(8.0, 3));
  auto state = scaler.stateDict();
  state["_growth_tracker"] = 5.0;
  scaler.loadStateDict(state);
  FakeOptimizer opt;
  for (int k = 0; k < 4; ++k) iterate(scaler, opt, false);
  EXPECT_EQ(scaler.scale(), 8.0f);
  EXPECT_EQ(scaler.growthTracker(), 9);
}

TEST(ScalerConfig, ValidateMessages) {
  EXPECT_EQ(validate(ScalerConfig{}), std::nullopt);
  auto message = [](auto edit) {
    ScalerConfig c;
    edit(c);
    return validate(c).value_or("<valid>");
  };
  EXPECT_EQ(message([](ScalerConfig& c) { c.initScale = 0.0; }),
            "scaler.init_scale must be finite and > 0");
  EXPECT_EQ(message([](ScalerConfig& c) { c.initScale = 1e39; }),  // inf in fp32
            "scaler.init_scale must be finite and > 0");
  EXPECT_EQ(message([](ScalerConfig& c) { c.initScale = std::nan(""); }),
            "scaler.init_scale must be finite and > 0");
  EXPECT_EQ(message([](ScalerConfig& c) { c.growthFactor = 1.0; }),
            "scaler.growth_factor must be > 1");
  EXPECT_EQ(message([](ScalerConfig& c) { c.backoffFactor = 1.0; }),
            "scaler.backoff_factor must be in (0, 1)");
  EXPECT_EQ(message([](ScalerConfig& c) { c.backoffFactor = 0.0; }),
            "scaler.backoff_factor must be in (0, 1)");
  EXPECT_EQ(message([](ScalerConfig& c) { c.growthInterval = 0; }),
            "scaler.growth_interval must be >= 1");
  EXPECT_EQ(message([](ScalerConfig& c) { c.minScale = -1.0; }),
            "scaler.min_scale must be finite and > 0");
  EXPECT_EQ(message([](ScalerConfig& c) { c.maxScale = 0.5; }),
            "scaler.max_scale must be >= scaler.min_scale");
  EXPECT_EQ(message([](ScalerConfig& c) { c.hysteresis = 0; }), "scaler.hysteresis must be >= 1");
  EXPECT_EQ(message([](ScalerConfig& c) {
              c.kind = ScalerKind::ApexDynamic;
              c.initScale = 1 << 25;
            }),
            "scaler.init_scale must be in [scaler.min_scale, scaler.max_scale]");
  EXPECT_EQ(message([](ScalerConfig& c) {
              c.kind = ScalerKind::Hysteresis;
              c.initScale = 0.5;
            }),
            "scaler.init_scale must be >= scaler.min_scale");
  EXPECT_EQ(message([](ScalerConfig& c) { c.initScale = 0.5; }), "<valid>");  // Dynamic: no floor

  ScalerConfig bad;
  bad.growthFactor = 0.9;
  EXPECT_EQ(errorOf([&] { GradScaler s(bad); }), "scaler.growth_factor must be > 1");
  EXPECT_THROW(GradScaler{bad}, std::invalid_argument);
}

TEST(ScalerConfig, KindNamesRoundTrip) {
  const std::pair<ScalerKind, const char*> names[] = {
      {ScalerKind::Dynamic, "dynamic"},
      {ScalerKind::Static, "static"},
      {ScalerKind::None, "none"},
      {ScalerKind::ApexDynamic, "apex_dynamic"},
      {ScalerKind::Hysteresis, "hysteresis"}};
  for (const auto& [kind, name] : names) {
    EXPECT_EQ(scalerKindName(kind), name);
    EXPECT_EQ(parseScalerKind(name), kind);
  }
  EXPECT_EQ(parseScalerKind("Dynamic"), std::nullopt);
  EXPECT_EQ(parseScalerKind("apex"), std::nullopt);
  EXPECT_EQ(scaleEventName(ScaleEvent::HysteresisAbsorbed), "hysteresis_absorbed");
}


}  // namespace
}  // namespace amp
