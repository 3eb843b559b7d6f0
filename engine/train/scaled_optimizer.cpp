#include "engine/train/scaled_optimizer.h"

#include <utility>

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

UnscaleOutcome ScaledOptimizer::unscaleGrads(float invScale) {
  std::vector<Tensor*> grads;
  std::vector<int> index;
  for (std::size_t i = 0; i < m_backwardOrder.size(); ++i)
    if (m_backwardOrder[i]->grad.defined()) {
      grads.push_back(&m_backwardOrder[i]->grad);
      index.push_back(static_cast<int>(i));
    }
  const UnscaleResult r = m_be.unscaleAndCheck(grads, invScale);
  m_unscaledSumSq = r.sumOfSquares;
  return {r.foundInf, r.firstNonFinite < 0 ? -1 : index[r.firstNonFinite]};
}

std::optional<double> ScaledOptimizer::takeUnscaledSumOfSquares() {
  return std::exchange(m_unscaledSumSq, std::nullopt);
}

void ScaledOptimizer::prepare(double lr, bool holdBack) {
  m_lr = lr;
  m_holdBack = holdBack;
  m_ran = false;
  m_stats = {};
}

void ScaledOptimizer::step() {
  if (m_holdBack) return;
  m_stats = m_opt.step(m_lr);
  m_ran = true;
}

}  // namespace amp
