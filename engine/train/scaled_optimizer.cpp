#include "engine/train/scaled_optimizer.h"

#include "engine/nn/layer.h"

namespace amp {

ScaledOptimizer::ScaledOptimizer(Backend& be, Optimizer& opt)
    : m_be(be), m_opt(opt), m_backwardOrder(opt.params().rbegin(), opt.params().rend()) {}

bool ScaledOptimizer::hasFp16Grads() const {
  for (Parameter* p : m_backwardOrder)
    if (p->grad.defined() && p->grad.dtype() == DType::F16) return true;
  return false;
}

bool ScaledOptimizer::hasGrads() const {
  for (Parameter* p : m_backwardOrder)
    if (p->grad.defined()) return true;
  return false;
}

std::vector<Tensor*> ScaledOptimizer::gradients() const {
  std::vector<Tensor*> grads;
  for (Parameter* p : m_backwardOrder)
    if (p->grad.defined()) grads.push_back(&p->grad);
  return grads;
}

void ScaledOptimizer::beginStep(double lr, bool skipIfNonFiniteAfterUnscale) {
  m_lr = lr;
  m_skipIfNonFiniteAfterUnscale = skipIfNonFiniteAfterUnscale;
  m_stats.reset();
  m_optimizerStats = {};
  m_launched = false;
  m_be.beginStep();
}

void ScaledOptimizer::unscaleGrads(float invScale) {
  m_unscaledIndex.clear();
  for (std::size_t i = 0; i < m_backwardOrder.size(); ++i)
    if (m_backwardOrder[i]->grad.defined()) m_unscaledIndex.push_back(static_cast<int>(i));
  const std::vector<Tensor*> grads = gradients();
  // Deferred roundings are applied by the unscale's read and its write keeps them.
  std::vector<DType> rounds;
  for (Parameter* p : m_backwardOrder)
    if (p->grad.defined()) rounds.push_back(p->gradRoundThrough);
  m_be.foreachUnscaleAndCheck(grads, invScale, rounds);
  for (Parameter* p : m_backwardOrder) p->gradRoundThrough = DType::F32;
}

void ScaledOptimizer::settleGrads() {
  for (Parameter* p : m_backwardOrder) settleGrad(m_be, *p);
}

void ScaledOptimizer::clipGradNorm(double maxNorm) {
  settleGrads();  // the clip has no fused form: it sees rounded gradients
  const std::vector<Tensor*> grads = gradients();
  m_be.foreachClipGradNorm(grads, maxNorm);
}

void ScaledOptimizer::step(bool skipIfFoundInf) {
  StepGate gate;
  gate.skipIfFoundInf = skipIfFoundInf;
  gate.skipIfNonFiniteAfterUnscale = m_skipIfNonFiniteAfterUnscale;
  m_be.gateStep(gate);
  m_opt.launchStep(m_lr);
  m_launched = true;
  m_stats.reset();  // read before the step (a second synchronisation): read again after it
}

void ScaledOptimizer::updateScale(const ScaleRule& rule, const ScaleCounters& current) {
  m_be.updateScale(rule, current);
}

const StepStats& ScaledOptimizer::stats() const {
  if (!m_stats) {
    m_stats = m_be.readStepStats();
    if (m_launched) m_optimizerStats = m_opt.finishStep(*m_stats);
    m_launched = false;
  }
  return *m_stats;
}

const OptimizerStepStats& ScaledOptimizer::optimizerStats() const {
  stats();
  return m_optimizerStats;
}

UnscaleOutcome ScaledOptimizer::unscaleOutcome() const {
  const StepStats& s = stats();
  return {s.foundInf, unscaledIndex(s.firstNonFinite)};
}

}  // namespace amp

