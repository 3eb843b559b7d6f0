// CPU backend: activations and dropout. Each op computes in fp32 on the widened inputs and
// rounds its output once to the output's dtype, as a GPU kernel with fp32 "opmath" does.
#include <cmath>
#include <stdexcept>

#include "engine/backend/cpu_backend.h"
#include "kernels/common/mix64.h"
#include "kernels/cpu/chunked.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

namespace {

inline float activate(Activation a, float x) {
  switch (a) {
    case Activation::ReLU: return x <= 0.f ? 0.f : x;  // NaN stays NaN, as clamp_min
    case Activation::Tanh: return std::tanh(x);
    case Activation::Sigmoid: return 1.f / (1.f + std::exp(-x));
    case Activation::GELU: return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
  }
  return x;
}

// f'(x) from x and y = f(x); each form is the one PyTorch's backward uses.
inline float derivative(Activation a, float x, float y) {
  switch (a) {
    case Activation::ReLU: return y <= 0.f ? 0.f : 1.f;  // threshold_backward on the result
    case Activation::Tanh: return 1.f - y * y;
    case Activation::Sigmoid: return y * (1.f - y);
    case Activation::GELU: {
      const float cdf = 0.5f * (1.f + std::erf(x * 0.70710678118654752f));
      const float pdf = 0.39894228040143268f * std::exp(-0.5f * x * x);
      return cdf + x * pdf;
    }
  }
  return 1.f;
}


}  // namespace

void CpuBackend::activationForward(Activation a, const Tensor& x, Tensor& y) {
  cpu::requireSameShape(x, y, "activation");
  const int xc = floatCode(x), yc = floatCode(y);
  const void* xs = x.rawData();
  void* ys = y.rawData();
  cpu::forEachChunk(x.numel(), [&](std::int64_t b, std::int64_t n) {
    float in[cpu::kChunk], out[cpu::kChunk];
    const float* v = cpu::widenChunk(xc, xs, b, n, in);
    float* o = cpu::outputChunk(yc, ys, b, out);
    if (a == Activation::ReLU) {
      // PyTorch's relu is clamp_min(x, 0): NaN propagates (an overflow must reach the loss).
      for (std::int64_t i = 0; i < n; ++i) o[i] = v[i] <= 0.f ? 0.f : v[i];
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i] = activate(a, v[i]);
    }
    cpu::narrowChunk(yc, ys, b, n, o);
  });
}

void CpuBackend::activationBackward(Activation a, const Tensor& x, const Tensor& y,
                                    const Tensor& dy, Tensor& dx) {
  cpu::requireSameShape(y, dy, "activation backward");
  cpu::requireSameShape(dy, dx, "activation backward");
  if (x.dtype() != y.dtype()) throw std::invalid_argument("activation backward: x/y dtypes");
  const int vc = floatCode(y), gc = floatCode(dy), dc = floatCode(dx);
  cpu::forEachChunk(dy.numel(), [&](std::int64_t b, std::int64_t n) {
    float xb[cpu::kChunk], yb[cpu::kChunk], gb[cpu::kChunk], ob[cpu::kChunk];
    const float* ys = cpu::widenChunk(vc, y.rawData(), b, n, yb);
    const float* g = cpu::widenChunk(gc, dy.rawData(), b, n, gb);
    float* o = cpu::outputChunk(dc, dx.rawData(), b, ob);
    if (a == Activation::ReLU) {
      // threshold_backward(dy, y, 0) = where(y <= 0, 0, dy). Both operands are loaded
      // unconditionally so the compiler can turn the select into a vector blend.
      for (std::int64_t i = 0; i < n; ++i) {
        const float gi = g[i];
        o[i] = ys[i] <= 0.f ? 0.f : gi;
      }
    } else {
      const float* xs = cpu::widenChunk(vc, x.rawData(), b, n, xb);
      for (std::int64_t i = 0; i < n; ++i) o[i] = g[i] * derivative(a, xs[i], ys[i]);
    }
    cpu::narrowChunk(dc, dx.rawData(), b, n, o);
  });
}

void CpuBackend::dropoutForward(const Tensor& x, Tensor& mask, Tensor& y, float p,
                                std::uint64_t seed) {
  if (mask.dtype() != DType::U8) throw std::invalid_argument("dropout: mask must be uint8");
  cpu::requireSameShape(x, y, "dropout");
  cpu::requireSameShape(x, mask, "dropout");
  if (!(p >= 0.f && p < 1.f)) throw std::invalid_argument("dropout: p must be in [0, 1)");
  const std::int64_t n = x.numel();
  const float keepScale = 1.f / (1.f - p);
  const auto threshold = static_cast<std::uint64_t>(double(p) * 18446744073709551616.0);
  auto* m = mask.data<std::uint8_t>();
  cpu::dispatchFloatCode(floatCode(x), [&](auto tag) {
    using T = decltype(tag);
    const auto* in = x.data<typename T::Storage>();
    auto* out = y.data<typename T::Storage>();
#pragma omp parallel for if (n > kParallelThreshold)
    for (std::int64_t i = 0; i < n; ++i) {
      // Counter-based random bits: the mask depends only on (seed, index), so it is
      // reproducible and independent of threading.
      const bool keep = p == 0.f || mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) >= threshold;
      m[i] = keep ? 1 : 0;
      out[i] = T::store(keep ? T::load(in[i]) * keepScale : 0.f);
    }
  });
}

void CpuBackend::dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx, float p) {
  cpu::requireSameShape(dy, dx, "dropout backward");
  const std::int64_t n = dy.numel();
  const float keepScale = 1.f / (1.f - p);
  const auto* m = mask.data<std::uint8_t>();
  cpu::dispatchFloatCode(floatCode(dy), [&](auto tag) {
    using T = decltype(tag);
    const auto* g = dy.data<typename T::Storage>();
    auto* out = dx.data<typename T::Storage>();
#pragma omp parallel for if (n > kParallelThreshold)
    for (std::int64_t i = 0; i < n; ++i)
      out[i] = T::store(m[i] ? T::load(g[i]) * keepScale : 0.f);
  });
}

}  // namespace amp
