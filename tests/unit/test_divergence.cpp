// Divergence the loss scaler cannot absorb: a loss that stays non-finite (it is non-finite
// before any scaling, so backing the scale off never helps) or a scale driven below any useful
// value. Such a run is marked diverged at the streak's first step, naming the first non-finite
// tensor, and stops; a healthy fp16 run whose scaler skips a few overflowing steps does not.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/config/config_schema.h"
#include "engine/train/trainer.h"
#include "test_support.h"

using namespace amp;

namespace {

RunConfig smallMlp(const std::string& lr) {
  RunConfig c;
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model.name", "mlp"}, {"model.hidden", "32,32"}, {"data.name", "spirals"},
           {"data.samples", "400"}, {"train.batch_size", "50"}, {"optimizer.name", "sgd"},
           {"optimizer.lr", lr}, {"train.steps", "150"}, {"train.histogram_every", "0"},
           {"train.eval_every", "0"}, {"amp.mode", "fp16"}, {"seed", "3"}})
    setConfigValue(c, k, v);
  return c;
}

}  // namespace

TEST(Divergence, PersistentNonFiniteLossStopsTheRunAtTheStreaksFirstStep) {
  Trainer t(smallMlp("1e9"));
  std::vector<StepMetrics> steps;
  while (!t.finished()) steps.push_back(t.step());
  ASSERT_FALSE(steps.empty());
  // The loss goes non-finite at step 2 (step 1's update with lr 1e9 wrecked the weights).
  std::int64_t firstNonFinite = 0;
  for (const auto& m : steps)
    if (!std::isfinite(m.loss)) {
      firstNonFinite = m.step;
      break;
    }
  ASSERT_EQ(firstNonFinite, 2);
  EXPECT_TRUE(t.diverged());
  EXPECT_LT(t.stepsDone(), 20);  // stopped within the streak, not after 150 steps
  const StepMetrics& last = steps.back();
  EXPECT_TRUE(last.diverged);
  EXPECT_HAS(last.divergence, "step 2: non-finite loss");
  EXPECT_HAS(last.divergence, "first non-finite tensor: ");
  int flagged = 0;
  for (const auto& m : steps) flagged += m.diverged;
  EXPECT_EQ(flagged, 1);  // one event, not one per step
}

TEST(Divergence, AScaleFallingBelowTheFloorIsDivergenceEvenWithFiniteLosses) {
  // Every step's gradient made inf: the loss stays finite, the scaler halves the scale each
  // step, from 2^0 to below 2^-24 after 25 skips.
  RunConfig c = smallMlp("0.1");
  setConfigValue(c, "scaler.init_scale", "1");
  std::string all;
  for (int s = 1; s <= 40; ++s) all += (s > 1 ? "," : "") + std::to_string(s);
  setConfigValue(c, "train.inject_nonfinite", all);
  Trainer t(c);
  StepMetrics last;
  while (!t.finished()) last = t.step();
  EXPECT_TRUE(t.diverged());
  EXPECT_TRUE(std::isfinite(last.loss));
  EXPECT_HAS(last.divergence, "loss scale");
  EXPECT_LT(t.stepsDone(), 40);
}

TEST(Divergence, AHealthyFp16RunWithOverflowSkipsDoesNotDiverge) {
  // A scale of 2^40 makes the first steps' gradients overflow in fp16: the scaler skips them and
  // backs off until they fit, then trains on. Diagnosed divergence would be a false alarm.
  RunConfig c = smallMlp("0.1");
  setConfigValue(c, "scaler.init_scale", "1099511627776");
  setConfigValue(c, "train.steps", "80");
  Trainer t(c);
  int skipped = 0;
  StepMetrics last;
  while (!t.finished()) {
    last = t.step();
    skipped += last.skipped;
    EXPECT_FALSE(last.diverged) << "step " << last.step << ": " << last.divergence;
  }
  EXPECT_GT(skipped, 3);
  EXPECT_FALSE(t.diverged());
  EXPECT_EQ(t.stepsDone(), 80);
}
