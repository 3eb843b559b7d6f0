// CPU backend: losses and accuracy. Autocast puts the losses on its fp32 list, so inputs arrive
// in fp32; reductions accumulate in double, as PyTorch's CPU kernels do for float.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/chunked.h"

namespace amp {

using checks::requireF32;

double CpuBackend::crossEntropyForward(const Tensor& logits, const Tensor& labels,
                                       Tensor& probs) {
  checks::labelsMatch(logits, labels);
  requireF32(probs, "cross-entropy probabilities");
  const std::int64_t m = logits.dim(0), c = logits.dim(1);
  const std::int32_t* y = labels.data<std::int32_t>();
  float* p = probs.data<float>();
  double total = 0;
  // 16-bit logits are widened as they are read (exact), which is what casting them to fp32
  // first would give, without materialising the fp32 copy.
  cpu::dispatchFloatCode(cpu::floatCode(logits), [&](auto tag) {
    using T = decltype(tag);
    const auto* zs = logits.data<typename T::Storage>();
    std::vector<float> zr(static_cast<std::size_t>(c));
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t j = 0; j < c; ++j) zr[j] = T::load(zs[r * c + j]);
      float mx = zr[0];
      for (std::int64_t j = 1; j < c; ++j) mx = std::fmax(mx, zr[j]);
      double sum = 0;
      for (std::int64_t j = 0; j < c; ++j) sum += std::exp(double(zr[j]) - mx);
      const double logSum = std::log(sum) + mx;
      for (std::int64_t j = 0; j < c; ++j) p[r * c + j] = float(std::exp(double(zr[j]) - logSum));
      const std::int32_t label = y[r];
      if (label < 0 || label >= c)
        throw std::invalid_argument("cross-entropy: label " + std::to_string(label) +
                                    " out of range [0, " + std::to_string(c) + ")");
      total += logSum - zr[label];
    }
  });
  return total / double(m);
}

void CpuBackend::crossEntropyBackward(const Tensor& probs, const Tensor& labels,
                                      float gradScale, Tensor& dlogits) {
  requireF32(probs, "cross-entropy probabilities");
  const std::int64_t m = probs.dim(0), c = probs.dim(1);
  const float* p = probs.data<float>();
  const std::int32_t* y = labels.data<std::int32_t>();
  const float k = gradScale / float(m);
  // The fp32 gradient is rounded once into dlogits' dtype (the cast's backward, fused).
  cpu::dispatchFloatCode(cpu::floatCode(dlogits), [&](auto tag) {
    using T = decltype(tag);
    auto* g = dlogits.data<typename T::Storage>();
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t j = 0; j < c; ++j)
        g[r * c + j] = T::store((p[r * c + j] - (j == y[r] ? 1.f : 0.f)) * k);
  });
}

double CpuBackend::mseForward(const Tensor& pred, const Tensor& target) {
  requireF32(target, "mse target");
  cpu::requireSameShape(pred, target, "mse");
  const float* b = target.data<float>();
  const std::int64_t n = pred.numel();
  double sum = 0;
  cpu::dispatchFloatCode(cpu::floatCode(pred), [&](auto tag) {
    using T = decltype(tag);
    const auto* a = pred.data<typename T::Storage>();
    // Chunk by chunk, in chunk order: the same bits on any number of threads (chunked.h).
    sum = cpu::sumOverChunks(n, [&](std::int64_t begin, std::int64_t len) {
      double s = 0;
      for (std::int64_t i = begin; i < begin + len; ++i) {
        const double d = double(T::load(a[i])) - double(b[i]);
        s += d * d;
      }
      return s;
    });
  });
  return sum / double(n);
}

void CpuBackend::mseBackward(const Tensor& pred, const Tensor& target, float gradScale,
                             Tensor& dpred) {
  const float* b = target.data<float>();
  const std::int64_t n = pred.numel();
  const float k = 2.f * gradScale / float(n);
  const int pc = cpu::floatCode(pred), gc = cpu::floatCode(dpred);
  // Chunks widened and narrowed with the vectorised converters: the same per-element math as
  // converting one value at a time, at vector speed.
  cpu::forEachChunk(n, [&](std::int64_t at, std::int64_t len) {
    float in[cpu::kChunk], out[cpu::kChunk];
    const float* a = cpu::widenChunk(pc, pred.rawData(), at, len, in);
    float* g = cpu::outputChunk(gc, dpred.rawData(), at, out);
    for (std::int64_t i = 0; i < len; ++i) g[i] = (a[i] - b[at + i]) * k;
    cpu::narrowChunk(gc, dpred.rawData(), at, len, g);
  });
}

std::int64_t CpuBackend::countCorrect(const Tensor& logits, const Tensor& labels) {
  checks::labelsMatch(logits, labels);
  const std::int64_t m = logits.dim(0), c = logits.dim(1);
  const std::int32_t* y = labels.data<std::int32_t>();
  std::int64_t correct = 0;
  cpu::dispatchFloatCode(cpu::floatCode(logits), [&](auto tag) {
    using T = decltype(tag);
    const auto* z = logits.data<typename T::Storage>();
    for (std::int64_t r = 0; r < m; ++r) {
      std::int64_t best = 0;  // first maximum wins, as torch.argmax
      float bestV = T::load(z[r * c]);
      for (std::int64_t j = 1; j < c; ++j) {
        const float v = T::load(z[r * c + j]);
        if (v > bestV) {
          bestV = v;
          best = j;
        }
      }
      correct += best == y[r];
    }
  });
  return correct;
}

}  // namespace amp
