// CPU backend: the AMP-specific passes (unscale-and-check, non-finite counts, norms) and the
// exponent histograms behind the gradient charts.
#include <cmath>

#include <algorithm>
#include <cstring>

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
    double sumSq = 0;
    // As PyTorch's kernel: check each value before scaling; x*1 is skipped (keeps NaN bits).
#pragma omp parallel for reduction(| : nonFinite) reduction(+ : sumSq) if (n > kParallelThreshold)
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
        if (code != 0) cpu::widenChunk(code, g.rawData(), b, len, v);  // the stored values
      }
      sumSq += cpu::sumOfSquaresF64(v, len);
    }
    result.sumOfSquares += sumSq;
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
    sum += cpu::sumOfSquaresF64(v, len);
  }
  return sum;
}

namespace {

// Adds fp32 values times 2^shift to h, from their bits: exact (a power-of-two multiplier only
// moves the exponent), branch-light, no double arithmetic. Values whose scaled magnitude would
// leave fp32's normal range still bin correctly: the exponent is computed as an integer.
void addScaledByPowerOfTwo(ExponentHistogram& h, const float* v, std::int64_t n, int shift) {
  constexpr std::uint32_t kFp16MaxMantissa = 0x7FE000;  // 65504 = 1.11111111110b x 2^15
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    const std::uint32_t a = bits & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) {
      ++h.nonFinite;
      if (a == 0x7F800000u) {
        ++h.overflow;
        ++h.counts[kHistBinInf];
      } else {
        ++h.counts[kHistBinNan];
      }
      continue;
    }
    if (a == 0) {
      ++h.counts[kHistBinZero];
      continue;
    }
    int e = static_cast<int>(a >> 23);
    std::uint32_t mant = a & 0x7FFFFFu;
    if (e == 0) {  // fp32 subnormal: normalise the mantissa
      const int lead = 31 - __builtin_clz(mant);  // position of the leading 1 (0..22)
      e = lead - 149 + 127;
      mant = (mant << (23 - lead)) & 0x7FFFFFu;
    }
    const int exp = e - 127 + shift;
    h.counts[std::clamp(exp, kHistMinExp, kHistMaxExp) - kHistMinExp] += 1;
    if (exp < -24) ++h.underflow;
    if (exp < -14) ++h.subnormal;
    if (exp > 15 || (exp == 15 && mant > kFp16MaxMantissa)) ++h.overflow;
  }
  h.total += n;
}

}  // namespace

ExponentHistogram CpuBackend::histogram(const Tensor& t, double multiplier) {
  const int code = floatCode(t);
  const std::int64_t n = t.numel(), chunks = (n + cpu::kChunk - 1) / cpu::kChunk;
  int e2 = 0;
  const bool powerOfTwo = multiplier > 0 && std::frexp(multiplier, &e2) == 0.5;
  ExponentHistogram total;
#pragma omp parallel if (n > kParallelThreshold)
  {
    ExponentHistogram local;
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t b = c * cpu::kChunk, len = std::min(cpu::kChunk, n - b);
      float buf[cpu::kChunk];
      const float* v = cpu::widenChunk(code, t.rawData(), b, len, buf);
      if (powerOfTwo) addScaledByPowerOfTwo(local, v, len, e2 - 1);
      else
        for (std::int64_t i = 0; i < len; ++i) local.add(double(v[i]) * multiplier);
    }
#pragma omp critical
    total.merge(local);
  }
  return total;
}

}  // namespace amp
