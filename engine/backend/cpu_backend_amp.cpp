// CPU backend: the AMP-specific passes (unscale-and-check, non-finite counts, norms) and the
// exponent histograms behind the gradient charts.
#include <cmath>

#include <algorithm>

#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/chunked.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

UnscaleResult CpuBackend::unscaleAndCheck(std::span<Tensor* const> grads, float invScale) {
  UnscaleResult result;
  for (std::size_t gi = 0; gi < grads.size(); ++gi) {
    Tensor& g = *grads[gi];
    const int code = floatCode(g);
    const std::int64_t n = g.numel();
    const std::int64_t chunks = (n + cpu::kChunk - 1) / cpu::kChunk;
    int nonFinite = 0;
    // As PyTorch's kernel: check each value before scaling; x*1 is skipped (keeps NaN bits).
#pragma omp parallel for reduction(| : nonFinite) if (n > kParallelThreshold)
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t b = c * cpu::kChunk, len = std::min(cpu::kChunk, n - b);
      float buf[cpu::kChunk];
      float* v = const_cast<float*>(cpu::widenChunk(code, g.rawData(), b, len, buf));
      int bad = 0;
      for (std::int64_t i = 0; i < len; ++i) bad |= !std::isfinite(v[i]);
      nonFinite |= bad;
      if (invScale != 1.f) {
        for (std::int64_t i = 0; i < len; ++i) v[i] *= invScale;
        cpu::narrowChunk(code, g.rawData(), b, len, v);
      }
    }
    if (nonFinite && !result.foundInf) {
      result.foundInf = true;
      result.firstNonFinite = static_cast<int>(gi);
    }
  }
  return result;
}

std::int64_t CpuBackend::countNonFinite(const Tensor& t) {
  const int code = floatCode(t);
  const std::int64_t n = t.numel(), chunks = (n + cpu::kChunk - 1) / cpu::kChunk;
  std::int64_t count = 0;
#pragma omp parallel for reduction(+ : count) if (n > kParallelThreshold)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t b = c * cpu::kChunk, len = std::min(cpu::kChunk, n - b);
    float buf[cpu::kChunk];
    const float* v = cpu::widenChunk(code, t.rawData(), b, len, buf);
    for (std::int64_t i = 0; i < len; ++i) count += !std::isfinite(v[i]);
  }
  return count;
}

double CpuBackend::sumOfSquares(const Tensor& t) {
  const int code = floatCode(t);
  const std::int64_t n = t.numel(), chunks = (n + cpu::kChunk - 1) / cpu::kChunk;
  double sum = 0;
#pragma omp parallel for reduction(+ : sum) if (n > kParallelThreshold)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t b = c * cpu::kChunk, len = std::min(cpu::kChunk, n - b);
    float buf[cpu::kChunk];
    const float* v = cpu::widenChunk(code, t.rawData(), b, len, buf);
    double s = 0;
    for (std::int64_t i = 0; i < len; ++i) s += double(v[i]) * double(v[i]);
    sum += s;
  }
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
