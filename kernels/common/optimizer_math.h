// Per-element optimizer updates shared by the CPU loops and the CUDA multi-tensor kernels,
// following PyTorch's single-tensor SGD and Adam/AdamW in fp32. Each returns the new fp32 weight
// and sets `delta` to the change it intended before any rounding to the weight's dtype: a
// non-zero delta that leaves the stored weight unchanged is a lost update. With no contraction
// (-ffp-contract=off on the host, -fmad=false on the device) and IEEE division and sqrt on both,
// the CPU and CUDA results are identical bit for bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/host_device.h"

namespace amp {

// The gradient with L2 weight decay folded in (SGD, and Adam without decoupling).
AMP_HD inline float sgdDecayedGrad(float w, float g, float weightDecay) {
  return weightDecay != 0.f ? g + weightDecay * w : g;
}

// The momentum buffer's next value; PyTorch seeds it with the gradient on its first use.
AMP_HD inline float sgdMomentumBuffer(float buf, float d, float momentum, float keep,
                                      bool firstStep) {
  return firstStep ? d : buf * momentum + keep * d;
}

// -lr times the direction: the buffer b (d itself without momentum), or d + momentum * b
// (Nesterov).
AMP_HD inline float sgdDelta(float lr, float d, float b, float momentum, bool nesterov) {
  return -lr * (nesterov ? d + momentum * b : b);
}

// Adam's per-step scalars, computed on the host in double as PyTorch computes them in Python,
// then used in fp32 arithmetic.
struct AdamScalars {
  float stepSize = 0, bc2Sqrt = 1, decay = 1, oneMinusB1 = 0, oneMinusB2 = 0;
  float beta2 = 0, eps = 0, weightDecay = 0;
  bool decoupled = false;
};

inline AdamScalars makeAdamScalars(float lr, float beta1, float beta2, float eps,
                                   float weightDecay, bool decoupled, std::int64_t step) {
  AdamScalars s;
  const double bc1 = 1.0 - std::pow(double(beta1), double(step));
  const double bc2 = 1.0 - std::pow(double(beta2), double(step));
  s.stepSize = float(double(lr) / bc1);
  s.bc2Sqrt = float(std::sqrt(bc2));
  s.decay = decoupled ? float(1.0 - double(lr) * weightDecay) : 1.f;
  s.oneMinusB1 = float(1.0 - beta1);
  s.oneMinusB2 = float(1.0 - beta2);
  s.beta2 = beta2;
  s.eps = eps;
  s.weightDecay = weightDecay;
  s.decoupled = decoupled;
  return s;
}

// One Adam/AdamW element: updates the moments m and v in place and returns the new weight.
AMP_HD inline float adamUpdate(const AdamScalars& s, float w, float g, float& m, float& v,
                               float& delta) {
  const float w0 = w;
  if (s.decoupled) w *= s.decay;
  else if (s.weightDecay != 0.f) g += s.weightDecay * w;
  const float mk = m + (g - m) * s.oneMinusB1;  // exp_avg.lerp_(grad, 1 - beta1)
  const float vk = v * s.beta2 + s.oneMinusB2 * g * g;
  m = mk;
  v = vk;
  const float denom = sqrtf(vk) / s.bc2Sqrt + s.eps;
  const float step = s.stepSize * (mk / denom);
  delta = (w - w0) - step;  // decoupled decay and the Adam step together
  return w - step;
}

}  // namespace amp
