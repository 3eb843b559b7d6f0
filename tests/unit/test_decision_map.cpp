// The decision map behind the "Data" chart (TF Playground's regions): softmax and argmax by
// hand, the plane around the points, and a trained spirals model whose map classifies its own
// training points as the model does.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/train/decision_map.h"
#include "engine/train/trainer.h"

using namespace amp;

TEST(DecisionMap, ClassesAndProbabilitiesFromLogits) {
  std::vector<std::int32_t> cls;
  std::vector<float> p;
  // Rows: (0, ln 3) -> class 1 with 3/4; (2, 2) -> class 0 (first of a tie) with 1/2;
  // (1000, 0) -> class 0 with 1 (no overflow: the max is subtracted first).
  classesFromLogits(std::vector<float>{0.0f, std::log(3.0f), 2.0f, 2.0f, 1000.0f, 0.0f}, 2, cls, p);
  ASSERT_EQ(cls.size(), 3u);
  EXPECT_EQ(cls[0], 1);
  EXPECT_NEAR(p[0], 0.75f, 1e-6f);
  EXPECT_EQ(cls[1], 0);
  EXPECT_NEAR(p[1], 0.5f, 1e-6f);
  EXPECT_EQ(cls[2], 0);
  EXPECT_EQ(p[2], 1.0f);
  // Three classes: (1, 2, 3) -> class 2 with e^0 / (e^-2 + e^-1 + 1).
  classesFromLogits(std::vector<float>{1, 2, 3}, 3, cls, p);
  EXPECT_EQ(cls[0], 2);
  EXPECT_NEAR(p[0], 1.0 / (std::exp(-2.0) + std::exp(-1.0) + 1.0), 1e-6);
  // One output: a sigmoid logit of class 1.
  classesFromLogits(std::vector<float>{std::log(4.0f), -std::log(4.0f)}, 1, cls, p);
  EXPECT_EQ(cls[0], 1);
  EXPECT_NEAR(p[0], 0.8f, 1e-6f);
  EXPECT_EQ(cls[1], 0);
  EXPECT_NEAR(p[1], 0.8f, 1e-6f);
}

TEST(DecisionMap, ThePlaneIsASquareAroundThePoints) {
  float x0, x1, y0, y1;
  decisionPlane(std::vector<float>{0, 0, 2, 1, 1, -1}, 0.1f, x0, x1, y0, y1);
  // Box x [0, 2], y [-1, 1]: a 2 x 2 square centred at (1, 0), then 10% of it on each side.
  EXPECT_FLOAT_EQ(x0, 1 - 1.2f);
  EXPECT_FLOAT_EQ(x1, 1 + 1.2f);
  EXPECT_FLOAT_EQ(y0, -1.2f);
  EXPECT_FLOAT_EQ(y1, 1.2f);
}

TEST(DecisionMap, ATrainedSpiralsModelsMapAgreesWithItsLabels) {
  const Preset* spirals = findPreset("spirals");
  ASSERT_NE(spirals, nullptr);
  RunConfig c = presetConfig(*spirals);
  setConfigValue(c, "train.steps", "400");
  setConfigValue(c, "amp.mode", "fp16");  // under autocast, like the lesson's runs
  Trainer t(c);
  ASSERT_TRUE(hasDecisionPlane(t.data().train));
  const DecisionMap before = t.decisionMap(48);
  ASSERT_EQ(before.cls.size(), 48u * 48u);
  while (!t.finished()) t.step();
  const DecisionMap map = t.decisionMap(48);
  EXPECT_EQ(map.step, 400);
  EXPECT_EQ(map.classes, 2);
  // Every training point lies inside the plane; the cell it falls in mostly says its label.
  const Dataset& d = t.data().train;
  std::int64_t agree = 0;
  for (std::int64_t i = 0; i < d.count; ++i) {
    const float x = d.features[2 * i], y = d.features[2 * i + 1];
    ASSERT_TRUE(x > map.xMin && x < map.xMax && y > map.yMin && y < map.yMax);
    const int col = std::min(map.width - 1, int((x - map.xMin) / (map.xMax - map.xMin) * map.width));
    const int row = std::min(map.height - 1, int((map.yMax - y) / (map.yMax - map.yMin) * map.height));
    agree += map.cls[std::size_t(row * map.width + col)] == d.labels[std::size_t(i)];
  }
  for (float conf : map.confidence) ASSERT_TRUE(conf >= 0.5f && conf <= 1.0f);
  const double accuracy = t.evaluate().accuracy.value_or(0);
  // The map at 48 x 48 is coarser than the points: within a few percent of the test accuracy.
  EXPECT_GT(double(agree) / double(d.count), std::min(0.95, accuracy) - 0.1) << "test accuracy " << accuracy;
  EXPECT_NE(map.cls, before.cls);  // it learned: the regions moved
}

TEST(DecisionMap, TwoTokenSequencesAreNoPlane) {
  // A language model with a context of 2 has 2 "features" per sample: bytes, not coordinates.
  Dataset d;
  d.numClasses = 256;
  d.sequence = 2;
  d.sampleShape = {2};
  d.tokens = {'a', 'b', 'c', 'd'};
  d.count = 2;
  EXPECT_FALSE(hasDecisionPlane(d));
  d.sequence = 0;  // the same shape as points in a plane
  EXPECT_TRUE(hasDecisionPlane(d));
}
