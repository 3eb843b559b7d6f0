// Per-element activation math shared by the CPU loops and the CUDA kernels: the forward value in
// fp32, and f'(x) in the form PyTorch's backward uses. tanh and sigmoid call the C math library
// on the host and CUDA's libdevice on the device, which differ in the last bits (the op-by-op
// tests state the bound); ReLU is exact on both, and so is GELU, whose erf and exp are ours
// (below): plain float multiplies, adds and selects, which GCC vectorises and which give the
// same bits on every CPU build and on the GPU (no contraction on either side: -ffp-contract=off,
// nvcc --fmad=false).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/float16.h"  // floatBits, bitsToFloat
#include "kernels/common/host_device.h"

namespace amp {

enum class Activation : std::uint8_t { ReLU, Tanh, Sigmoid, GELU };

// PyTorch's relu is clamp_min(x, 0): NaN propagates (an overflow must reach the loss).
AMP_HD inline float reluForward(float x) { return x <= 0.f ? 0.f : x; }
// threshold_backward(dy, y, 0) = where(y <= 0, 0, dy), on the forward result.
AMP_HD inline float reluBackward(float y, float dy) { return y <= 0.f ? 0.f : dy; }

// c ? x : y as a bit mask, so that the compiler keeps both operands' computations unconditional
// (with a ?: GCC sinks an operand's arithmetic under the condition, and under trapping math it
// then keeps the loop scalar: "control flow in loop").
AMP_HD inline float selectf(bool c, float x, float y) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return bitsToFloat((floatBits(x) & m) | (floatBits(y) & ~m));
}

// erf(x) in float, within 1 ulp of the correctly rounded result for every float (measured
// exhaustively: tests/unit/test_gelu_erf.cpp; the constants from tests/unit/fit_gelu_erf.py).
// Branch-free, so a loop over it vectorises: every region is computed and the answer selected.
// With a = |x| and s = a * a:
//   a < 0.75:          a + a * qA(s), qA(s) ~ erf(a) / a - 1 (degree 6 in s)
//   0.75 <= a < 1.45:  M0 + pM(a - 0.99), M0 = erf(0.99) in float (degree 13)
//   1.45 <= a < ONE:   1 + pB(a - BMID) (pB ~ -erfc; BMID the middle of the interval, degree 13)
//   a >= ONE = 3.9192059: 1 (erf rounds to 1 from there); NaN stays NaN
// pM and pB are one Horner loop whose coefficients are selected per element.
AMP_HD inline float erfApprox(float x) {
  const float a = fabsf(x), s = a * a;
  const float q =
      0.128379166f +
      s * (-0.37612626f +
           s * (0.112835169f +
                s * (-0.0268447939f +
                     s * (0.00514799636f + s * (-0.000726625673f + s * (2.99046533e-05f))))));
  const float rA = a + a * q;
  const bool b = a >= 1.45f;
  const float d = a - selectf(b, 2.68460295f, 0.99f);
  float p = selectf(b, 2.35103994e-06f, -0.41242376f);
  p = selectf(b, -6.07721495e-06f, 0.46389094f) + d * p;
  p = selectf(b, -1.10643532e-05f, -0.0492348745f) + d * p;
  p = selectf(b, 6.93733527e-05f, -0.10728474f) + d * p;
  p = selectf(b, -0.000114451948f, 0.0290971939f) + d * p;
  p = selectf(b, -3.86972642e-05f, 0.00330202817f) + d * p;
  p = selectf(b, 0.00068207056f, 0.0123052672f) + d * p;
  p = selectf(b, -0.00196052901f, 0.00332743768f) + d * p;
  p = selectf(b, 0.00346456468f, -0.0692990497f) + d * p;
  p = selectf(b, -0.00427225837f, 0.0726516545f) + d * p;
  p = selectf(b, 0.00374033651f, 0.135530427f) + d * p;
  p = selectf(b, -0.0022455859f, -0.419216365f) + d * p;
  p = selectf(b, 0.000836472842f, 0.423450887f) + d * p;
  p = selectf(b, -0.000146693419f, 4.01410294e-11f) + d * p;
  float r = selectf(b, 1.f, 0.83850807f) + p;
  r = selectf(a < 0.75f, rA, r);
  r = selectf(a >= 3.9192059f, 1.f, r);
  return copysignf(r, x);
}

// exp(y) in float, within 2 ulp for normal results (0 below -104, inf above 88.73, NaN kept):
// k = nearest integer to y / ln 2, r = y - k ln 2 in two steps (the first exact), exp(r) by a
// polynomial, times 2^k as two powers of two (so that results down to the subnormals need no
// branch).
AMP_HD inline float expApprox(float y) {
  float v = selectf(y < -110.f, -110.f, y);  // a select, not fmaxf: NaN passes through
  v = selectf(v > 90.f, 90.f, v);
  const float shifter = 12582912.f;   // 1.5 * 2^23: adding it rounds to an integer
  const float t = v * 1.44269502f + shifter;
  const float kf = t - shifter;
  const std::int32_t k = static_cast<std::int32_t>(floatBits(t) - floatBits(shifter));
  const float r = (v - kf * 0.693145752f) - kf * 1.42860677e-06f;
  const float h =
      0.5f + r * (0.166666672f +
                  r * (0.0416664965f +
                       r * (0.00833320618f + r * (0.00139328674f + r * (0.000199457601f)))));
  const float e = 1.f + (r + r * r * h);
  const std::int32_t k1 = k / 2, k2 = k - k1;
  const float s1 = bitsToFloat(static_cast<std::uint32_t>(k1 + 127) << 23);
  const float s2 = bitsToFloat(static_cast<std::uint32_t>(k2 + 127) << 23);
  return e * s1 * s2;
}

// GELU (PyTorch's exact form, approximate='none') and its derivative as its backward writes them.
AMP_HD inline float geluForward(float x) {
  return 0.5f * x * (1.f + erfApprox(x * 0.70710678118654752f));
}
AMP_HD inline float geluDerivative(float x) {
  const float cdf = 0.5f * (1.f + erfApprox(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * expApprox(-0.5f * x * x);
  return cdf + x * pdf;
}

AMP_HD inline float activate(Activation a, float x) {
  switch (a) {
    case Activation::ReLU: return reluForward(x);
    case Activation::Tanh: return tanhf(x);
    case Activation::Sigmoid: return 1.f / (1.f + expf(-x));
    case Activation::GELU: return geluForward(x);
  }
  return x;
}

// f'(x) from x and y = f(x); each form is the one PyTorch's backward uses.
AMP_HD inline float activationDerivative(Activation a, float x, float y) {
  switch (a) {
    case Activation::ReLU: return y <= 0.f ? 0.f : 1.f;
    case Activation::Tanh: return 1.f - y * y;
    case Activation::Sigmoid: return y * (1.f - y);
    case Activation::GELU: return geluDerivative(x);
  }
  return 1.f;
}

}  // namespace amp
