// The lessons' texts make claims a student will check against the charts: each claim here is
// measured on the lesson's own settings, so a preset change that breaks its point fails.
#include <gtest/gtest.h>

#include <string>

#include "engine/config/presets.h"
#include "engine/train/trainer.h"

namespace amp {
namespace {

struct Outcome {
  double firstLoss = 0, lastLoss = 0, meanLost = 0;
};

Outcome train(const Preset& p, const std::string& variant) {
  for (const PresetVariant& v : p.variants)
    if (v.label == variant) {
      RunConfig c = presetConfig(p, &v);
      c.train.threads = 1;
      Trainer t(c);
      Outcome o;
      std::int64_t n = 0;
      while (!t.finished()) {
        const StepMetrics m = t.step();
        if (n == 0) o.firstLoss = m.loss;
        o.lastLoss = m.loss;
        o.meanLost += m.lostUpdateFrac;
        ++n;
      }
      o.meanLost /= double(n);
      return o;
    }
  ADD_FAILURE() << p.name << " has no variant " << variant;
  return {};
}

// "in pure fp16 about nine in ten updates are lost … its loss falls about a third as fast as
// with AMP": the curves must visibly part, not both sit at the same value.
TEST(LessonClaims, PureFp16LosesUpdatesAndFallsSlower) {
  const Preset* p = findPreset("pure-fp16");
  ASSERT_NE(p, nullptr);
  const Outcome pure = train(*p, "pure_fp16");
  const Outcome amp = train(*p, "amp_fp16");
  EXPECT_GT(pure.meanLost, 0.8);
  EXPECT_LT(amp.meanLost, 0.01);
  const double pureDrop = pure.firstLoss - pure.lastLoss, ampDrop = amp.firstLoss - amp.lastLoss;
  EXPECT_GT(ampDrop, 0.03) << "AMP's loss must visibly fall";
  EXPECT_GT(ampDrop, 2.0 * pureDrop) << "AMP " << ampDrop << " vs pure fp16 " << pureDrop;
}

}  // namespace
}  // namespace amp
