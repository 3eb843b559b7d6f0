// CPU backend: the AMP-specific passes (unscale-and-check, non-finite counts, norms) and the
// exponent histograms behind the gradient charts.
#include <cmath>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/backend/cpu_backend.h"
#include "kernels/common/scale_update.h"
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
    // Each chunk's sum of squares in its own slot, added in chunk order after the loop: the same
    // bits on any number of threads (a reduction clause's order follows the threads).
    std::vector<double> partial(static_cast<std::size_t>(chunks));
    // As PyTorch's kernel: check each value before scaling; x*1 is skipped (keeps NaN bits).
    const int threads = cpu::loopThreads(chunks, cpu::kChunk);
#pragma omp parallel for reduction(| : nonFinite) num_threads(threads) if (threads > 1)
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t b = c * cpu::kChunk, len = std::min(cpu::kChunk, n - b);
      float buf[cpu::kChunk];
      float* v = const_cast<float*>(cpu::widenChunk(code, g.rawData(), b, len, buf));
      int bad = 0;
      for (std::int64_t i = 0; i < len; ++i) bad |= !isFiniteFloat(v[i]);
      nonFinite |= bad;
      if (invScale != 1.f) {
        for (std::int64_t i = 0; i < len; ++i) v[i] *= invScale;
        cpu::narrowChunk(code, g.rawData(), b, len, v);
        if (code != 0) cpu::widenChunk(code, g.rawData(), b, len, v);  // the stored values
      }
      partial[static_cast<std::size_t>(c)] = cpu::sumOfSquaresF64(v, len);
    }
    double sumSq = 0;
    for (double p : partial) sumSq += p;
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
  const int threads = cpu::loopThreads(chunks, cpu::kChunk);
#pragma omp parallel for reduction(+ : count) num_threads(threads) if (threads > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t b = c * cpu::kChunk, len = std::min(cpu::kChunk, n - b);
    float buf[cpu::kChunk];
    const float* v = cpu::widenChunk(code, t.rawData(), b, len, buf);
    for (std::int64_t i = 0; i < len; ++i) count += !isFiniteFloat(v[i]);
  }
  return count;
}

double CpuBackend::sumOfSquares(const Tensor& t) {
  const int code = floatCode(t);
  return cpu::sumOverChunks(t.numel(), [&](std::int64_t b, std::int64_t len) {
    float buf[cpu::kChunk];
    return cpu::sumOfSquaresF64(cpu::widenChunk(code, t.rawData(), b, len, buf), len);
  });
}

namespace {

// Adds fp32 values times 2^shift to h, binned from their bits (binScaledByPowerOfTwo, shared
// with the CUDA histogram kernel).
void addScaledByPowerOfTwo(ExponentHistogram& h, const float* v, std::int64_t n, int shift) {
  for (std::int64_t i = 0; i < n; ++i) {
    const ScaledBin b = binScaledByPowerOfTwo(v[i], shift);
    ++h.counts[b.bin];
    h.nonFinite += b.nonFinite;
    h.overflow += b.overflow;
    h.underflow += b.underflow;
    h.subnormal += b.subnormal;
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
  const int threads = cpu::loopThreads(chunks, cpu::kChunk);
#pragma omp parallel num_threads(threads) if (threads > 1)
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
