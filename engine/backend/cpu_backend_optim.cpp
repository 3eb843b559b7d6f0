// CPU backend: optimizer updates, following PyTorch's single-tensor SGD and Adam/AdamW. The
// update is computed in fp32 from the widened parameter and stored in the parameter's dtype,
// so pure-fp16 training shows updates lost to rounding (counted and returned).
#include <cmath>
#include <stdexcept>

#include "engine/backend/cpu_backend.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

namespace {
void requireF32State(const Tensor* t, const Tensor& param, const char* what) {
  if (t && (t->dtype() != DType::F32 || t->numel() != param.numel()))
    throw std::invalid_argument(std::string(what) + " must be fp32 and match the parameter");
}
}  // namespace

std::int64_t CpuBackend::sgdStep(Tensor& param, const Tensor& grad, Tensor* momentumBuf,
                                 const SgdParams& p) {
  cpu::requireSameShape(param, grad, "sgd");
  requireF32State(momentumBuf, param, "momentum buffer");
  const std::int64_t n = param.numel();
  std::int64_t lost = 0;
  float* buf = momentumBuf ? momentumBuf->data<float>() : nullptr;
  cpu::dispatchFloatCode(floatCode(param), [&](auto pt) {
    cpu::dispatchFloatCode(floatCode(grad), [&](auto gt) {
      using P = decltype(pt);
      using G = decltype(gt);
      auto* w = param.data<typename P::Storage>();
      const auto* g = grad.data<typename G::Storage>();
#pragma omp parallel for reduction(+ : lost) if (n > kParallelThreshold)
      for (std::int64_t i = 0; i < n; ++i) {
        const auto old = w[i];
        const float wf = P::load(old);
        float d = G::load(g[i]);
        if (p.weightDecay != 0.f) d += p.weightDecay * wf;
        if (p.momentum != 0.f) {
          buf[i] = p.firstStep ? d : buf[i] * p.momentum + (1.f - p.dampening) * d;
          d = p.nesterov ? d + p.momentum * buf[i] : buf[i];
        }
        const float update = -p.lr * d;
        w[i] = P::store(wf + update);
        lost += (update != 0.f && w[i] == old);
      }
    });
  });
  return lost;
}

std::int64_t CpuBackend::adamStep(Tensor& param, const Tensor& grad, Tensor& expAvg,
                                  Tensor& expAvgSq, const AdamParams& p) {
  cpu::requireSameShape(param, grad, "adam");
  requireF32State(&expAvg, param, "adam exp_avg");
  requireF32State(&expAvgSq, param, "adam exp_avg_sq");
  if (p.step < 1) throw std::invalid_argument("adam: step count starts at 1");
  const std::int64_t n = param.numel();
  // Scalars in double as PyTorch computes them in Python, then used in fp32 arithmetic.
  const double bc1 = 1.0 - std::pow(double(p.beta1), double(p.step));
  const double bc2 = 1.0 - std::pow(double(p.beta2), double(p.step));
  const float stepSize = float(double(p.lr) / bc1);
  const float bc2Sqrt = float(std::sqrt(bc2));
  const float decay = p.decoupled ? float(1.0 - double(p.lr) * p.weightDecay) : 1.f;
  const float oneMinusB1 = float(1.0 - p.beta1), oneMinusB2 = float(1.0 - p.beta2);
  float* m = expAvg.data<float>();
  float* v = expAvgSq.data<float>();
  std::int64_t lost = 0;
  cpu::dispatchFloatCode(floatCode(param), [&](auto pt) {
    cpu::dispatchFloatCode(floatCode(grad), [&](auto gt) {
      using P = decltype(pt);
      using G = decltype(gt);
      auto* w = param.data<typename P::Storage>();
      const auto* g = grad.data<typename G::Storage>();
#pragma omp parallel for reduction(+ : lost) if (n > kParallelThreshold / 4)
      for (std::int64_t i = 0; i < n; ++i) {
        const auto old = w[i];
        float wf = P::load(old);
        float gi = G::load(g[i]);
        if (p.decoupled) wf *= decay;
        else if (p.weightDecay != 0.f) gi += p.weightDecay * wf;
        m[i] += (gi - m[i]) * oneMinusB1;  // exp_avg.lerp_(grad, 1 - beta1)
        v[i] = v[i] * p.beta2 + oneMinusB2 * gi * gi;
        const float denom = std::sqrt(v[i]) / bc2Sqrt + p.eps;
        const float target = wf - stepSize * (m[i] / denom);
        w[i] = P::store(target);
        lost += (target != wf && P::load(w[i]) == wf && !p.decoupled);
      }
    });
  });
  return lost;
}

}  // namespace amp
