// CPU backend: activations and dropout. Each op computes in fp32 on the widened inputs and
// rounds its output once to the output's dtype, as a GPU kernel with fp32 "opmath" does.
#include <cmath>
#include <stdexcept>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/common/activation_math.h"
#include "kernels/common/dropout_math.h"
#include "kernels/cpu/chunked.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

void CpuBackend::activationForward(Activation a, const Tensor& x, Tensor& y) {
  cpu::requireSameShape(x, y, "activation");
  checks::sameFormat({&x, &y}, "activation");
  const int xc = floatCode(x), yc = floatCode(y);
  const void* xs = x.rawData();
  void* ys = y.rawData();
  cpu::forEachChunk(x.numel(), [&](std::int64_t b, std::int64_t n) {
    float in[cpu::kChunk], out[cpu::kChunk];
    const float* v = cpu::widenChunk(xc, xs, b, n, in);
    float* o = cpu::outputChunk(yc, ys, b, out);
    if (a == Activation::ReLU) {  // its own loop, which the compiler vectorises
      for (std::int64_t i = 0; i < n; ++i) o[i] = reluForward(v[i]);
    } else if (a == Activation::GELU) {  // so is GELU's (its erf is branch-free)
      for (std::int64_t i = 0; i < n; ++i) o[i] = geluForward(v[i]);
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
  checks::sameFormat({&x, &y, &dy, &dx}, "activation backward");
  const int vc = floatCode(y), gc = floatCode(dy), dc = floatCode(dx);
  cpu::forEachChunk(dy.numel(), [&](std::int64_t b, std::int64_t n) {
    float xb[cpu::kChunk], yb[cpu::kChunk], gb[cpu::kChunk], ob[cpu::kChunk];
    const float* ys = cpu::widenChunk(vc, y.rawData(), b, n, yb);
    const float* g = cpu::widenChunk(gc, dy.rawData(), b, n, gb);
    float* o = cpu::outputChunk(dc, dx.rawData(), b, ob);
    if (a == Activation::ReLU) {
      // Both operands are loaded unconditionally so the select becomes a vector blend.
      for (std::int64_t i = 0; i < n; ++i) {
        const float gi = g[i];
        o[i] = reluBackward(ys[i], gi);
      }
    } else if (a == Activation::GELU) {  // needs only x; vectorised (branch-free erf and exp)
      const float* xs = cpu::widenChunk(vc, x.rawData(), b, n, xb);
      for (std::int64_t i = 0; i < n; ++i) o[i] = g[i] * geluDerivative(xs[i]);
    } else {
      const float* xs = cpu::widenChunk(vc, x.rawData(), b, n, xb);
      for (std::int64_t i = 0; i < n; ++i) o[i] = g[i] * activationDerivative(a, xs[i], ys[i]);
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
  if (checks::sameFormat({&x, &mask, &y}, "dropout") == MemoryFormat::ChannelsLast) {
    // The mask is drawn per logical (NCHW) index, so a channels-last tensor drops the same
    // elements as a contiguous one (and as the GPU): run on NCHW copies.
    cpu::NchwScratch s(*this);
    dropoutForward(s.in(x), s.out(mask), s.out(y), p, seed);
    return s.finish();
  }
  const std::int64_t n = x.numel();
  const float keepScale = dropoutKeepScale(p);
  const std::uint64_t threshold = dropoutThreshold(p);
  auto* m = mask.data<std::uint8_t>();
  cpu::dispatchFloatCode(floatCode(x), [&](auto tag) {
    using T = decltype(tag);
    const auto* in = x.data<typename T::Storage>();
    auto* out = y.data<typename T::Storage>();
    const int threads = cpu::loopThreads(n);
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (std::int64_t i = 0; i < n; ++i) {
      // Counter-based: the mask depends only on (seed, index), as on the GPU.
      const bool keep = dropoutKeeps(seed, i, threshold, p);
      m[i] = keep ? 1 : 0;
      out[i] = T::store(keep ? T::load(in[i]) * keepScale : 0.f);
    }
  });
}

void CpuBackend::dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx, float p) {
  cpu::requireSameShape(dy, dx, "dropout backward");
  checks::sameFormat({&dy, &mask, &dx}, "dropout backward");  // then the mask lines up
  const std::int64_t n = dy.numel();
  const float keepScale = dropoutKeepScale(p);
  const auto* m = mask.data<std::uint8_t>();
  cpu::dispatchFloatCode(floatCode(dy), [&](auto tag) {
    using T = decltype(tag);
    const auto* g = dy.data<typename T::Storage>();
    auto* out = dx.data<typename T::Storage>();
    const int threads = cpu::loopThreads(n);
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (std::int64_t i = 0; i < n; ++i)
      out[i] = T::store(m[i] ? T::load(g[i]) * keepScale : 0.f);
  });
}

}  // namespace amp
