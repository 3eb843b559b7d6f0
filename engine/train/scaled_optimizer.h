// Connects the GradScaler (which knows no tensors) to the optimizer and the backend: unscaling
// walks the gradients in backward order, so "first non-finite" names the gradient that went bad
// first in time.
#pragma once

#include <optional>

#include "engine/amp/grad_scaler.h"
#include "engine/backend/backend.h"
#include "engine/optim/optimizer.h"

namespace amp {

class ScaledOptimizer final : public ScalableOptimizer {
 public:
  ScaledOptimizer(Backend& be, Optimizer& opt);

  bool hasFp16Grads() const override;
  bool hasGrads() const override;
  UnscaleOutcome unscaleGrads(float invScale) override;
  void step() override;

  // Set before GradScaler::step: the learning rate to use, and whether to hold the step back
  // (the post-unscale check in "skip" mode).
  void prepare(double lr, bool holdBack);
  bool ran() const { return m_ran; }
  const OptimizerStepStats& stats() const { return m_stats; }
  // The gradients' sum of squares after the last unscaleGrads (taken in the same pass), once:
  // the next call returns nothing until gradients are unscaled again.
  std::optional<double> takeUnscaledSumOfSquares();
  // Parameters in backward order (last layer first).
  const std::vector<Parameter*>& backwardOrder() const { return m_backwardOrder; }

 private:
  Backend& m_be;
  Optimizer& m_opt;
  std::vector<Parameter*> m_backwardOrder;
  double m_lr = 0;
  bool m_holdBack = false;
  bool m_ran = false;
  OptimizerStepStats m_stats;
  std::optional<double> m_unscaledSumSq;
};

}  // namespace amp
