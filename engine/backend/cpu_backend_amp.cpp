// CPU backend: the AMP-specific passes (unscale-and-check, non-finite counts, norms) and the
// exponent histograms behind the gradient charts.
#include <cmath>

#include "engine/backend/cpu_backend.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

UnscaleResult CpuBackend::unscaleAndCheck(std::span<Tensor* const> grads, float invScale) {
  UnscaleResult result;
  for (std::size_t gi = 0; gi < grads.size(); ++gi) {
    Tensor& g = *grads[gi];
    const std::int64_t n = g.numel();
    int nonFinite = 0;
    cpu::dispatchFloatCode(floatCode(g), [&](auto tag) {
      using T = decltype(tag);
      auto* p = g.data<typename T::Storage>();
      // As PyTorch's kernel: check the value before scaling; x*1 is skipped (keeps NaN bits).
#pragma omp parallel for reduction(| : nonFinite) if (n > kParallelThreshold)
      for (std::int64_t i = 0; i < n; ++i) {
        const float v = T::load(p[i]);
        nonFinite |= !std::isfinite(v);
        if (invScale != 1.f) p[i] = T::store(v * invScale);
      }
    });
    if (nonFinite && !result.foundInf) {
      result.foundInf = true;
      result.firstNonFinite = static_cast<int>(gi);
    }
  }
  return result;
}

std::int64_t CpuBackend::countNonFinite(const Tensor& t) {
  const std::int64_t n = t.numel();
  std::int64_t count = 0;
  cpu::dispatchFloatCode(floatCode(t), [&](auto tag) {
    using T = decltype(tag);
    const auto* p = t.data<typename T::Storage>();
#pragma omp parallel for reduction(+ : count) if (n > kParallelThreshold)
    for (std::int64_t i = 0; i < n; ++i) count += !std::isfinite(T::load(p[i]));
  });
  return count;
}

double CpuBackend::sumOfSquares(const Tensor& t) {
  const std::int64_t n = t.numel();
  double sum = 0;
  cpu::dispatchFloatCode(floatCode(t), [&](auto tag) {
    using T = decltype(tag);
    const auto* p = t.data<typename T::Storage>();
#pragma omp parallel for reduction(+ : sum) if (n > kParallelThreshold)
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = T::load(p[i]);
      sum += v * v;
    }
  });
  return sum;
}

ExponentHistogram CpuBackend::histogram(const Tensor& t, double multiplier) {
  ExponentHistogram h;
  const std::int64_t n = t.numel();
  cpu::dispatchFloatCode(floatCode(t), [&](auto tag) {
    using T = decltype(tag);
    const auto* p = t.data<typename T::Storage>();
    for (std::int64_t i = 0; i < n; ++i) h.add(double(T::load(p[i])) * multiplier);
  });
  return h;
}

}  // namespace amp
