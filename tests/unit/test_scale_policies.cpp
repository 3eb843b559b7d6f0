// The scaler variants beyond PyTorch: static, none, Apex-style clamps, DeepSpeed hysteresis.
// Expected sequences are derived by hand in the comments.
#include "tests/unit/grad_scaler_test_support.h"

namespace amp {
namespace {
using namespace scaler_test;

// ---- Variants -------------------------------------------------------------------------------

struct Expected {
  float scale;
  int tracker;
  int hysteresisLeft;
  ScaleEvent::Kind event;
  bool ran;
};

// Runs one iteration per entry of `overflow` and checks the state after each update().
void expectSequence(GradScaler& scaler, const std::vector<bool>& overflow,
                    const std::vector<Expected>& expected) {
  ASSERT_EQ(overflow.size(), expected.size());
  FakeOptimizer opt;
  for (size_t k = 0; k < overflow.size(); ++k) {
    const Expected& e = expected[k];
    EXPECT_EQ(iterate(scaler, opt, overflow[k]), e.ran) << "step " << k + 1;
    EXPECT_EQ(scaler.scale(), e.scale) << "step " << k + 1;
    EXPECT_EQ(scaler.growthTracker(), e.tracker) << "step " << k + 1;
    EXPECT_EQ(scaler.hysteresisLeft(), e.hysteresisLeft) << "step " << k + 1;
    EXPECT_EQ(scaler.lastEvent().kind, e.event) << "step " << k + 1;
  }
}

ScalerConfig variantConfig(ScalerKind kind, double init, int interval) {
  ScalerConfig c = dynamicConfig(init, interval);
  c.kind = kind;
  return c;
}

TEST(ScalerVariants, StaticKeepsItsScaleButSkipsOverflows) {
  GradScaler scaler(variantConfig(ScalerKind::Static, 128.0, 1));
  // interval 1 would grow every clean step in Dynamic; Static never moves and keeps tracker 0.
  expectSequence(scaler, {false, true, false},
                 {{128, 0, 2, ScaleEvent::None, true},
                  {128, 0, 2, ScaleEvent::None, false},
                  {128, 0, 2, ScaleEvent::None, true}});
  EXPECT_FALSE(scaler.lastEvent().foundInf);
  EXPECT_EQ(scaler.stateDict().size(), 5u);
  EXPECT_EQ(scaler.stateDict().at("scale"), 128.0);
}

TEST(ScalerVariants, NoneNeverScalesNorSkips) {
  GradScaler scaler(variantConfig(ScalerKind::None, 65536.0, 1));
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.scaleLoss(0.1), static_cast<double>(0.1f));
  expectSequence(scaler, {true, false, true},
                 {{1, 0, 2, ScaleEvent::None, true},
                  {1, 0, 2, ScaleEvent::None, true},
                  {1, 0, 2, ScaleEvent::None, true}});
  // The inf is still detected (for the UI), only never acted upon.
  FakeOptimizer opt;
  opt.setScaledGrads(1.0f, true);
  scaler.unscale(opt);
  EXPECT_EQ(opt.invScales, std::vector<float>{1.0f});
  EXPECT_EQ(scaler.lastUnscale(opt)->firstNonFinite, 1);
  EXPECT_TRUE(stepRan(scaler, opt));
  scaler.update(8.0f);
  EXPECT_EQ(scaler.scale(), 1.0f);
}

TEST(ScalerVariants, ApexDynamicClampsAtMaxScale) {
  // interval 1: every clean step grows. 2^23 -> 2^24 (Growth); 2^25 is clamped to 2^24.
  GradScaler scaler(variantConfig(ScalerKind::ApexDynamic, 0x1p23, 1));
  expectSequence(scaler, {false, false, true, false},
                 {{0x1p24f, 0, 2, ScaleEvent::Growth, true},
                  {0x1p24f, 0, 2, ScaleEvent::Clamped, true},
                  {0x1p23f, 0, 2, ScaleEvent::Backoff, false},
                  {0x1p24f, 0, 2, ScaleEvent::Growth, true}});
}

TEST(ScalerVariants, ApexDynamicClampsAtMinScale) {
  // 1.5 * 0.5 = 0.75 -> floor 1 (Clamped, 1.5 -> 1); 1 * 0.5 -> 1 again (Clamped, 1 -> 1).
  GradScaler scaler(variantConfig(ScalerKind::ApexDynamic, 1.5, 2000));
  expectSequence(scaler, {true, true},
                 {{1, 0, 2, ScaleEvent::Clamped, false}, {1, 0, 2, ScaleEvent::Clamped, false}});
  EXPECT_EQ(scaler.lastEvent().oldScale, 1.0f);
  // With an unbounded max, Apex keeps PyTorch's rejection of an fp32 overflow.
  ScalerConfig c = variantConfig(ScalerKind::ApexDynamic, 0x1p127, 1);
  c.maxScale = std::numeric_limits<double>::infinity();
  GradScaler unbounded(c);
  expectSequence(unbounded, {false}, {{0x1p127f, 0, 2, ScaleEvent::GrowthRejected, true}});
}

// Hysteresis 2, interval 3, init 1024; overflow pattern: inf clean inf inf clean clean clean inf inf.
// DeepSpeed default (budget refilled only on growth):
//  1 inf  : budget 2 > 1 -> absorbed, budget 1, t=0, scale 1024 (skipped)
//  2 clean: t=1 (budget stays 1)
//  3 inf  : budget 1 -> backoff 512, t=0, budget stays 1 (skipped)
//  4 inf  : backoff 256 (skipped)
//  5,6    : t=1, t=2
//  7 clean: t+1 == 3 -> grow 512, t=0, budget refilled to 2
//  8 inf  : absorbed, budget 1;  9 inf: backoff 256
TEST(ScalerVariants, HysteresisDeepSpeedDefault) {
  GradScaler scaler(variantConfig(ScalerKind::Hysteresis, 1024.0, 3));
  const std::vector<bool> overflow{true, false, true, true, false, false, false, true, true};
  expectSequence(scaler, overflow,
                 {{1024, 0, 1, ScaleEvent::HysteresisAbsorbed, false},
                  {1024, 1, 1, ScaleEvent::None, true},
                  {512, 0, 1, ScaleEvent::Backoff, false},
                  {256, 0, 1, ScaleEvent::Backoff, false},
                  {256, 1, 1, ScaleEvent::None, true},
                  {256, 2, 1, ScaleEvent::None, true},
                  {512, 0, 2, ScaleEvent::Growth, true},
                  {512, 0, 1, ScaleEvent::HysteresisAbsorbed, false},
                  {256, 0, 1, ScaleEvent::Backoff, false}});
}

// Same pattern with consecutiveHysteresis: every clean step refills the budget to 2, so step 3's
// overflow is absorbed again and only the back-to-back pair 3,4 backs off:
//  1 absorbed (1024, b=1); 2 clean (t=1, b=2); 3 absorbed (t=0, b=1); 4 backoff 512 (b=1);
//  5 t=1 b=2; 6 t=2; 7 grow 1024; 8 absorbed (b=1); 9 backoff 512.
TEST(ScalerVariants, HysteresisConsecutive) {
  ScalerConfig c = variantConfig(ScalerKind::Hysteresis, 1024.0, 3);
  c.consecutiveHysteresis = true;
  GradScaler scaler(c);
  const std::vector<bool> overflow{true, false, true, true, false, false, false, true, true};
  expectSequence(scaler, overflow,
                 {{1024, 0, 1, ScaleEvent::HysteresisAbsorbed, false},
                  {1024, 1, 2, ScaleEvent::None, true},
                  {1024, 0, 1, ScaleEvent::HysteresisAbsorbed, false},
                  {512, 0, 1, ScaleEvent::Backoff, false},
                  {512, 1, 2, ScaleEvent::None, true},
                  {512, 2, 2, ScaleEvent::None, true},
                  {1024, 0, 2, ScaleEvent::Growth, true},
                  {1024, 0, 1, ScaleEvent::HysteresisAbsorbed, false},
                  {512, 0, 1, ScaleEvent::Backoff, false}});
}

TEST(ScalerVariants, HysteresisFloorsAtMinScale) {
  // hysteresis 1 backs off on every overflow: 2 -> 1, then 0.5 is floored to 1 (DeepSpeed would
  // raise "Current loss scale already at minimum" here; we stay on the floor).
  ScalerConfig c = variantConfig(ScalerKind::Hysteresis, 2.0, 2000);
  c.hysteresis = 1;
  GradScaler scaler(c);
  expectSequence(scaler, {true, true},
                 {{1, 0, 1, ScaleEvent::Backoff, false}, {1, 0, 1, ScaleEvent::Clamped, false}});
}

TEST(ScalerVariants, HysteresisStateDictKeepsTheBudget) {
  GradScaler scaler(variantConfig(ScalerKind::Hysteresis, 1024.0, 3));
  FakeOptimizer opt;
  iterate(scaler, opt, true);  // absorbed: budget 1
  const auto state = scaler.stateDict();
  EXPECT_EQ(state.size(), 6u);
  EXPECT_EQ(state.at("hysteresis_left"), 1.0);
  GradScaler restored(variantConfig(ScalerKind::Hysteresis, 4.0, 3));
  restored.loadStateDict(state);
  EXPECT_EQ(restored.hysteresisLeft(), 1);
  EXPECT_EQ(restored.scale(), 1024.0f);
  iterate(restored, opt, true);  // the spent budget carries over: this overflow backs off
  EXPECT_EQ(restored.scale(), 512.0f);
  // A PyTorch-style dict (no variant key) starts with the full budget.
  auto plain = state;
  plain.erase("hysteresis_left");
  restored.loadStateDict(plain);
  EXPECT_EQ(restored.hysteresisLeft(), 2);
}


}  // namespace
}  // namespace amp
