// Per-element activation math shared by the CPU loops and the CUDA kernels: the forward value in
// fp32, and f'(x) in the form PyTorch's backward uses. The transcendental ones call the C math
// library on the host and CUDA's libdevice on the device, which differ in the last bits (the
// op-by-op tests state the bound); ReLU is exact on both.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/host_device.h"

namespace amp {

enum class Activation : std::uint8_t { ReLU, Tanh, Sigmoid, GELU };

// PyTorch's relu is clamp_min(x, 0): NaN propagates (an overflow must reach the loss).
AMP_HD inline float reluForward(float x) { return x <= 0.f ? 0.f : x; }
// threshold_backward(dy, y, 0) = where(y <= 0, 0, dy), on the forward result.
AMP_HD inline float reluBackward(float y, float dy) { return y <= 0.f ? 0.f : dy; }

AMP_HD inline float activate(Activation a, float x) {
  switch (a) {
    case Activation::ReLU: return reluForward(x);
    case Activation::Tanh: return tanhf(x);
    case Activation::Sigmoid: return 1.f / (1.f + expf(-x));
    case Activation::GELU: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  }
  return x;
}

// f'(x) from x and y = f(x); each form is the one PyTorch's backward uses.
AMP_HD inline float activationDerivative(Activation a, float x, float y) {
  switch (a) {
    case Activation::ReLU: return y <= 0.f ? 0.f : 1.f;
    case Activation::Tanh: return 1.f - y * y;
    case Activation::Sigmoid: return y * (1.f - y);
    case Activation::GELU: {
      const float cdf = 0.5f * (1.f + erff(x * 0.70710678118654752f));
      const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
      return cdf + x * pdf;
    }
  }
  return 1.f;
}

}  // namespace amp
