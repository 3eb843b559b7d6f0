// fp8.recipe=unscaled (issue 39, the "fp8 needs a scale" lesson): a per-tensor recipe whose scale
// is always 1, so small gradients flush to zero as they are; current scaling on the same run keeps
// them. Refused with a what-if recipe; named in the run's recipe text.
#include <gtest/gtest.h>

#include "engine/amp/fp8_context.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/train/trainer.h"

using namespace amp;

namespace {

RunConfig spirals(const std::string& recipe) {
  RunConfig c;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model.name", "mlp"}, {"model.hidden", "16,16"}, {"model.activation", "tanh"},
           {"data.name", "spirals"}, {"data.samples", "400"}, {"train.batch_size", "100"},
           {"optimizer.name", "adam"}, {"optimizer.lr", "0.01"}, {"train.steps", "5"},
           {"train.loss_weight", "0.001"}, {"amp.mode", "fp8"}, {"fp8.keep_bf16", "none"},
           {"fp8.recipe", recipe}, {"train.threads", "1"}})
    setConfigValue(c, k, v);
  return c;
}

}  // namespace

TEST(Fp8Unscaled, EveryScaleIsOneAndTheTinyGradientsFlush) {
  Trainer unscaled(spirals("unscaled"));
  double flushed = 0;
  int dy = 0;
  while (!unscaled.finished()) {
    const StepMetrics m = unscaled.step();
    ASSERT_FALSE(m.fp8.empty());
    for (const Fp8TensorRecord& r : m.fp8) {
      EXPECT_EQ(r.scale, 1.0) << r.tensor << " at step " << m.step;
      if (r.tensor == "4.dy") flushed += r.underflow, ++dy;
    }
  }
  ASSERT_GT(dy, 0);
  EXPECT_GE(flushed / dy, 0.75) << "most of the output layer's gradient (x 0.001, over 100 samples) is below half E5M2's 2^-16";
  Trainer current(spirals("current"));
  while (!current.finished())
    for (const Fp8TensorRecord& r : current.step().fp8)
      if (r.tensor == "4.dy") {
        EXPECT_GT(r.scale, 1e6);
        EXPECT_LT(r.underflow, 0.05);
      }
}

TEST(Fp8Unscaled, NamedAndRefusedWithAWhatIf) {
  Fp8Config c;
  c.recipe = "unscaled";
  EXPECT_EQ(describeFp8Recipe(c), "fp8 unscaled (hybrid, scale 1)");
  EXPECT_NO_THROW(validateFp8Config(c));
  c.whatIf = "mxfp8";
  EXPECT_THROW(validateFp8Config(c), ConfigError);
}

// Every fp8 lesson's variants validate and quantise every Linear layer.
TEST(Fp8Unscaled, TheFp8LessonsValidate) {
  for (const char* name : {"fp8-needs-a-scale", "fp8-outlier", "fp8-delayed-lag", "fp8-gradients-e5m2", "fp4",
                           "fp8-accumulator"}) {
    const Preset* p = findPreset(name);
    ASSERT_NE(p, nullptr) << name;
    for (const auto& v : p->variants) {
      const RunConfig c = presetConfig(*p, &v);
      EXPECT_FALSE(validateRunConfig(c).has_value()) << name << "/" << v.label;
      if (c.mode == PrecisionMode::Fp8) EXPECT_EQ(c.fp8.keepBf16, "none") << name;
    }
  }
}
