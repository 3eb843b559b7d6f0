// The fake optimizer and iteration helper shared by the GradScaler tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/amp/grad_scaler.h"

namespace amp::scaler_test {


constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// An optimizer over a few fp32 gradient vectors, implementing the adaptor contract literally:
// check each element before multiplying, multiply every element even after a non-finite one.
class FakeOptimizer : public ScalableOptimizer {
 public:
  std::vector<std::vector<float>> grads;
  bool fp16 = false;
  int unscaleCalls = 0;
  int stepCalls = 0;
  std::vector<float> invScales;  // every invScale received, in order

  bool hasFp16Grads() const override { return fp16 && hasGrads(); }
  bool hasGrads() const override { return !grads.empty(); }
  // Records the outcome and, like a device optimizer, applies the skip itself in step().
  void unscaleGrads(float invScale) override {
    ++unscaleCalls;
    invScales.push_back(invScale);
    UnscaleOutcome out;
    for (size_t p = 0; p < grads.size(); ++p) {
      for (float& g : grads[p]) {
        if (!std::isfinite(g) && !out.foundInf) {
          out.foundInf = true;
          out.firstNonFinite = static_cast<int>(p);
        }
        g *= invScale;
      }
    }
    recorded = out;
  }
  void step(bool skipIfFoundInf) override {
    if (skipIfFoundInf && recorded.foundInf) ++skippedCalls;
    else ++stepCalls;
  }
  UnscaleOutcome unscaleOutcome() const override { return recorded; }
  UnscaleOutcome recorded;
  int skippedCalls = 0;

  // Gradients as a backward pass of the scaled loss would leave them; optionally one overflow.
  void setScaledGrads(float scale, bool overflow) {
    grads = {{1.0f * scale, -0.5f * scale}, {0.25f * scale}};  // finite even at scale 2^127
    if (overflow) grads[1][0] = kInf;
  }
};

ScalerConfig dynamicConfig(double init, int interval) {
  ScalerConfig c;
  c.initScale = init;
  c.growthInterval = interval;
  return c;
}

// scaler.step(opt), returning whether the optimizer step ran.
bool stepRan(GradScaler& scaler, FakeOptimizer& opt) {
  const int before = opt.stepCalls;
  scaler.step(opt);
  return opt.stepCalls > before;
}

// One full iteration: scaled backward, step, update. Returns whether the optimizer step ran.
bool iterate(GradScaler& scaler, FakeOptimizer& opt, bool overflow) {
  opt.setScaledGrads(scaler.scale(), overflow);
  const bool ran = stepRan(scaler, opt);
  scaler.update();
  return ran;
}

template <typename Fn>
std::string errorOf(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}

}  // namespace amp::scaler_test
