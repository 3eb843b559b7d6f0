// CPU backend: optimizer updates, following PyTorch's single-tensor SGD and Adam/AdamW. The
// update is computed in fp32 from the widened parameter and stored in the parameter's dtype,
// so pure-fp16 training shows updates lost to rounding (counted and returned).
#include <cmath>
#include <stdexcept>

#include <algorithm>
#include <cstring>

#include "engine/backend/cpu_backend.h"
#include "kernels/common/optimizer_math.h"
#include "kernels/cpu/chunked.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

namespace {
void requireF32State(const Tensor* t, const Tensor& param, const char* what) {
  if (t && (t->dtype() != DType::F32 || t->numel() != param.numel()))
    throw std::invalid_argument(std::string(what) + " must be fp32 and match the parameter");
}
}  // namespace

namespace {

// Runs `update(w, g, globalIndex, delta)` over chunks of a parameter and its gradient (any
// float dtypes), writing the parameter back in its dtype. `update` returns the new fp32 value
// and sets `delta` to the change it intended before any rounding; a non-zero delta that left
// the stored weight unchanged is a lost update (|delta| below half an ulp of the weight).
// The gradient's sum of squares is taken on the way: the step reads every gradient anyway.
template <class Update>
UpdateResult updateInChunks(Tensor& param, const Tensor& grad, Update update) {
  const int pc = cpu::floatCode(param), gc = cpu::floatCode(grad);
  const std::int64_t n = param.numel(), chunks = (n + cpu::kChunk - 1) / cpu::kChunk;
  std::int64_t lost = 0;
  // Each chunk's sum of squares in its own slot, added in chunk order after the loop: the same
  // bits on any number of threads (a reduction clause's order follows the threads).
  std::vector<double> partial(static_cast<std::size_t>(chunks));
  // An optimizer touches about four arrays an element: four times an elementwise op's work.
  const int threads = cpu::loopThreads(chunks, 4 * cpu::kChunk);
#pragma omp parallel for reduction(+ : lost) num_threads(threads) if (threads > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t b = c * cpu::kChunk, len = std::min(cpu::kChunk, n - b);
    // A private copy of the functor: its captured scalars then live in registers, where the
    // shared one would be re-read after every store (it might alias) and block vectorising.
    const Update fn = update;
    float gb[cpu::kChunk];
    const float* g = cpu::widenChunk(gc, grad.rawData(), b, len, gb);
    partial[static_cast<std::size_t>(c)] = cpu::sumOfSquaresF64(g, len);
    std::int64_t l = 0;
    if (pc == 0) {
      // fp32 weights (masters): one in-place pass; what is stored is exactly the fp32 result.
      float* w = param.data<float>() + b;
      for (std::int64_t i = 0; i < len; ++i) {
        float delta;
        const float next = fn(w[i], g[i], b + i, delta);
        l += (delta != 0.f) & (next == w[i]);
        w[i] = next;
      }
    } else {
      // 16-bit weights (pure fp16): compare what the rounding stored with the old weight.
      float wb[cpu::kChunk], old[cpu::kChunk], delta[cpu::kChunk];
      float* w = const_cast<float*>(cpu::widenChunk(pc, param.rawData(), b, len, wb));
      std::memcpy(old, w, static_cast<std::size_t>(len) * 4);
      for (std::int64_t i = 0; i < len; ++i) w[i] = fn(w[i], g[i], b + i, delta[i]);
      cpu::narrowChunk(pc, param.rawData(), b, len, w);
      cpu::widenChunk(pc, param.rawData(), b, len, w);
      for (std::int64_t i = 0; i < len; ++i) l += (delta[i] != 0.f && w[i] == old[i]);
    }
    lost += l;
  }
  double sumSq = 0;
  for (double p : partial) sumSq += p;
  return {lost, sumSq};
}

}  // namespace

UpdateResult CpuBackend::sgdStep(Tensor& param, const Tensor& grad, Tensor* momentumBuf,
                                 const SgdParams& p) {
  cpu::requireSameShape(param, grad, "sgd");
  requireF32State(momentumBuf, param, "momentum buffer");
  float* buf = momentumBuf ? momentumBuf->data<float>() : nullptr;
  // Scalars are copied into the lambdas: read through `p`, every store to the weights could
  // alias them, which keeps the compiler from vectorising the loop. The element math is
  // kernels/common/optimizer_math.h, shared with the CUDA kernels.
  const float lr = p.lr, wd = p.weightDecay, mom = p.momentum, keep = 1.f - p.dampening;
  const bool first = p.firstStep, nesterov = p.nesterov;
  if (mom == 0.f) {  // plain SGD (the AMP recipe's): the common case gets a branch-free loop
    if (wd == 0.f)
      return updateInChunks(param, grad, [lr](float w, float g, std::int64_t, float& delta) {
        delta = sgdDelta(lr, g, g, 0.f, false);
        return w + delta;
      });
    return updateInChunks(param, grad, [lr, wd](float w, float g, std::int64_t, float& delta) {
      const float d = sgdDecayedGrad(w, g, wd);
      delta = sgdDelta(lr, d, d, 0.f, false);
      return w + delta;
    });
  }
  return updateInChunks(param, grad, [=](float w, float g, std::int64_t k, float& delta) {
    const float d = sgdDecayedGrad(w, g, wd);
    const float b = sgdMomentumBuffer(buf[k], d, mom, keep, first);
    buf[k] = b;
    delta = sgdDelta(lr, d, b, mom, nesterov);
    return w + delta;
  });
}

UpdateResult CpuBackend::adamStep(Tensor& param, const Tensor& grad, Tensor& expAvg,
                                  Tensor& expAvgSq, const AdamParams& p) {
  cpu::requireSameShape(param, grad, "adam");
  requireF32State(&expAvg, param, "adam exp_avg");
  requireF32State(&expAvgSq, param, "adam exp_avg_sq");
  if (p.step < 1) throw std::invalid_argument("adam: step count starts at 1");
  const AdamScalars s =
      makeAdamScalars(p.lr, p.beta1, p.beta2, p.eps, p.weightDecay, p.decoupled, p.step);
  float* m = expAvg.data<float>();
  float* v = expAvgSq.data<float>();
  return updateInChunks(param, grad, [=](float w, float g, std::int64_t k, float& delta) {
    return adamUpdate(s, w, g, m[k], v[k], delta);
  });
}

}  // namespace amp
