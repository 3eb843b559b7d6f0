// The multi-tensor AMP step in its host form: each op loops over the per-tensor ones and keeps
// the step's stats in host memory. The CPU backend uses these; the CUDA backend overrides them
// with single launches that keep found_inf and the stats on the device.
#include <cmath>
#include <stdexcept>

#include "engine/backend/backend.h"

namespace amp {

namespace {
void requireSameLength(std::size_t a, std::size_t b, const char* op) {
  if (a != b) throw std::invalid_argument(std::string(op) + ": tensor lists differ in length");
}
}  // namespace

void Backend::roundDeferred(std::span<Tensor* const> grads, std::span<const DType> roundFirst,
                            const char* op) {
  if (roundFirst.empty()) return;
  requireSameLength(grads.size(), roundFirst.size(), op);
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (roundFirst[i] != DType::F32) roundThrough(*grads[i], roundFirst[i]);
}

void Backend::writeWeightCopies(std::span<Tensor* const> params,
                                std::span<Tensor* const> lowCopies, const char* op) {
  if (lowCopies.empty()) return;
  requireSameLength(params.size(), lowCopies.size(), op);
  for (std::size_t i = 0; i < params.size(); ++i)
    if (lowCopies[i]) castInto(*params[i], *lowCopies[i]);
}

void Backend::beginStep() { m_stepStats = {}; }

void Backend::crossEntropyForwardIntoStep(const Tensor& logits, const Tensor& labels,
                                          Tensor& probs) {
  m_stepStats.lossSum += crossEntropyForward(logits, labels, probs);
}

void Backend::mseForwardIntoStep(const Tensor& pred, const Tensor& target) {
  m_stepStats.lossSum += mseForward(pred, target);
}

void Backend::foreachUnscaleAndCheck(std::span<Tensor* const> grads, float invScale,
                                     std::span<const DType> roundFirst) {
  roundDeferred(grads, roundFirst, "foreach unscale");
  const UnscaleResult r = unscaleAndCheck(grads, invScale);
  m_stepStats.unscaled = true;
  m_stepStats.foundInf = r.foundInf;
  m_stepStats.firstNonFinite = r.firstNonFinite;
  m_stepStats.unscaledSumOfSquares = r.sumOfSquares;
}

void Backend::foreachClipGradNorm(std::span<Tensor* const> grads, double maxNorm) {
  double sum = 0;
  if (m_stepStats.unscaled) sum = m_stepStats.unscaledSumOfSquares;
  else
    for (Tensor* g : grads) sum += sumOfSquares(*g);
  m_stepStats.normTaken = true;
  m_stepStats.normSumOfSquares = sum;
  const double norm = std::sqrt(sum);
  if (!std::isfinite(norm)) return;
  const double coef = maxNorm / (norm + 1e-6);  // clip_grad_norm_
  if (coef >= 1.0) return;
  for (Tensor* g : grads) scaleInPlace(*g, static_cast<float>(coef));
  m_stepStats.clipped = true;
}

void Backend::gateStep(const StepGate& gate) {
  const StepStats& s = m_stepStats;
  const bool nonFiniteAfterUnscale =
      s.unscaled && !s.foundInf && !std::isfinite(s.unscaledSumOfSquares);
  m_stepStats.stepped = !((gate.skipIfFoundInf && s.foundInf) ||
                          (gate.skipIfNonFiniteAfterUnscale && nonFiniteAfterUnscale));
}

void Backend::foreachSgdStep(std::span<Tensor* const> params, std::span<Tensor* const> grads,
                             std::span<Tensor* const> momentum, const SgdParams& p,
                             std::span<const DType> roundFirst,
                             std::span<Tensor* const> lowCopies) {
  requireSameLength(params.size(), grads.size(), "foreach sgd");
  requireSameLength(params.size(), momentum.size(), "foreach sgd");
  if (!m_stepStats.stepped) return;
  roundDeferred(grads, roundFirst, "foreach sgd");
  for (std::size_t i = 0; i < params.size(); ++i) {
    const UpdateResult r = sgdStep(*params[i], *grads[i], momentum[i], p);
    m_stepStats.lost += r.lost;
    m_stepStats.stepGradSumOfSquares += r.gradSumOfSquares;
  }
  writeWeightCopies(params, lowCopies, "foreach sgd");
}

void Backend::foreachAdamStep(std::span<Tensor* const> params, std::span<Tensor* const> grads,
                              std::span<Tensor* const> expAvg, std::span<Tensor* const> expAvgSq,
                              const AdamParams& p, std::span<const DType> roundFirst,
                              std::span<Tensor* const> lowCopies) {
  requireSameLength(params.size(), grads.size(), "foreach adam");
  requireSameLength(params.size(), expAvg.size(), "foreach adam");
  requireSameLength(params.size(), expAvgSq.size(), "foreach adam");
  if (!m_stepStats.stepped) return;
  roundDeferred(grads, roundFirst, "foreach adam");
  for (std::size_t i = 0; i < params.size(); ++i) {
    const UpdateResult r = adamStep(*params[i], *grads[i], *expAvg[i], *expAvgSq[i], p);
    m_stepStats.lost += r.lost;
    m_stepStats.stepGradSumOfSquares += r.gradSumOfSquares;
  }
  writeWeightCopies(params, lowCopies, "foreach adam");
}

void Backend::updateScale(const ScaleRule& rule, const ScaleCounters& current) {
  m_stepStats.scale = current;
  m_stepStats.scaleEvent = applyScaleRule(rule, m_stepStats.scale, m_stepStats.foundInf);
  m_stepStats.scaleUpdated = true;
}

StepStats Backend::readStepStats() { return m_stepStats; }

}  // namespace amp

namespace amp {

void Backend::beginStepCapture() {
  throw std::logic_error("beginStepCapture: " + name() + " does not record training steps");
}

void Backend::beginStepReplay(float) {
  throw std::logic_error("beginStepReplay: " + name() + " has no recorded training step");
}

void Backend::incrementInt(Tensor& counter) {
  if (counter.dtype() != DType::I32 || counter.numel() != 1)
    throw std::invalid_argument("incrementInt: needs a one-element int32 tensor, got " +
                                shapeString(counter.shape()) + " " + std::string(dtypeName(counter.dtype())));
  std::vector<std::int32_t> n = toHostInt(counter);
  n[0] += 1;
  uploadInt(counter, n);
}

}  // namespace amp
