// Connects the GradScaler (which knows no tensors) to the optimizer and the backend's
// multi-tensor AMP step: unscaling walks the gradients in backward order, so "first non-finite"
// names the gradient that went bad first in time. found_inf, the skip decision, clipping and
// the scale update stay where the gradients live; stats() reads the step's figures back once.
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
  void unscaleGrads(float invScale) override;
  void step(bool skipIfFoundInf) override;
  UnscaleOutcome unscaleOutcome() const override;  // reads the step's stats (once)

  // Starts a step: lr is the learning rate to use; skipIfNonFiniteAfterUnscale holds the step
  // back when unscaling made a finite gradient non-finite (the post-unscale check, "skip").
  void beginStep(double lr, bool skipIfNonFiniteAfterUnscale);
  // clip_grad_norm_ over every gradient (after unscaling, where the scaler runs).
  void clipGradNorm(double maxNorm);
  // Applies every deferred gradient rounding now (Parameter::gradRoundThrough).
  void settleGrads();
  // The scale update on the backend, beside found_inf (its result comes back in stats()).
  void updateScale(const ScaleRule& rule, const ScaleCounters& current);
  // The step's figures, read from the backend on first use (the step's one synchronisation),
  // after which the optimizer keeps or takes back the step.
  const StepStats& stats() const;
  const OptimizerStepStats& optimizerStats() const;
  bool ran() const { return stats().stepped; }
  // Parameters in backward order (last layer first).
  const std::vector<Parameter*>& backwardOrder() const { return m_backwardOrder; }
  // The backward-order index of the unscaled list's entry i (gradients that exist).
  int unscaledIndex(int i) const { return i < 0 ? -1 : m_unscaledIndex.at(std::size_t(i)); }

 private:
  std::vector<Tensor*> gradients() const;

  Backend& m_be;
  Optimizer& m_opt;
  std::vector<Parameter*> m_backwardOrder;
  std::vector<int> m_unscaledIndex;
  double m_lr = 0;
  bool m_skipIfNonFiniteAfterUnscale = false;
  mutable std::optional<StepStats> m_stats;  // read once per step, on demand
  mutable OptimizerStepStats m_optimizerStats;
  mutable bool m_launched = false;  // a step was launched and not yet finished
};

}  // namespace amp
