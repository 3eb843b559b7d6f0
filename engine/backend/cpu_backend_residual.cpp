// CPU backend: the two ops residual networks add to a CNN. The residual add (PyTorch's add with
// type promotion: each input widened exactly, the fp32 sum rounded once to the output's dtype)
// and global average pooling (adaptive_avg_pool2d to 1x1). Pooling sums each plane in fp32 in
// row-major order, one plane at a time, so the CUDA kernel (kernels/cuda/global_avg_pool.cu),
// which gives each plane to one thread in the same order, agrees with it bit for bit. The add is
// elementwise (its operands share a format: checks::add); pooling runs channels-last tensors on
// NCHW copies (NchwScratch).
#include <algorithm>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/chunked.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  checks::add(a, b, y);
  const int ac = floatCode(a), bc = floatCode(b), yc = floatCode(y);
  const void* as = a.rawData();
  const void* bs = b.rawData();
  void* ys = y.rawData();
  cpu::forEachChunk(y.numel(), [&](std::int64_t begin, std::int64_t n) {
    float ab[cpu::kChunk], bb[cpu::kChunk], ob[cpu::kChunk];
    const float* va = cpu::widenChunk(ac, as, begin, n, ab);
    const float* vb = cpu::widenChunk(bc, bs, begin, n, bb);
    float* o = cpu::outputChunk(yc, ys, begin, ob);
    for (std::int64_t i = 0; i < n; ++i) o[i] = va[i] + vb[i];
    cpu::narrowChunk(yc, ys, begin, n, o);
  });
}

void CpuBackend::globalAvgPoolForward(const Tensor& x, Tensor& y) {
  if (x.channelsLast()) {  // the planes' sums in the same order, from an NCHW copy
    cpu::NchwScratch s(*this);
    return globalAvgPoolForward(s.in(x), y);
  }
  const auto d = checks::globalAvgPool(x, y, "adaptive_avg_pool2d");
  const int xc = floatCode(x), yc = floatCode(y);
  const auto count = static_cast<float>(d.planeSize);
  std::vector<float> means(static_cast<std::size_t>(d.planes));
  const int threads = cpu::loopThreads(d.planes, d.planeSize);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> scratch(static_cast<std::size_t>(std::min(d.planeSize, cpu::kChunk)));
#pragma omp for
    for (std::int64_t p = 0; p < d.planes; ++p) {
      // One running fp32 sum in element order (no lanes): the order the GPU kernel repeats.
      float sum = 0.f;
      for (std::int64_t begin = 0; begin < d.planeSize; begin += cpu::kChunk) {
        const std::int64_t n = std::min(cpu::kChunk, d.planeSize - begin);
        const float* v = cpu::widenChunk(xc, x.rawData(), p * d.planeSize + begin, n, scratch.data());
        for (std::int64_t i = 0; i < n; ++i) sum += v[i];
      }
      means[static_cast<std::size_t>(p)] = sum / count;
    }
  }
  cpu::narrowChunk(yc, y.rawData(), 0, d.planes, means.data());
}

void CpuBackend::globalAvgPoolBackward(const Tensor& dy, Tensor& dx) {
  if (dx.channelsLast()) {
    cpu::NchwScratch s(*this);
    globalAvgPoolBackward(dy, s.out(dx));
    return s.finish();
  }
  const auto d = checks::globalAvgPool(dx, dy, "adaptive_avg_pool2d backward");
  const int gc = floatCode(dy), dc = floatCode(dx);
  std::vector<float> scratch(static_cast<std::size_t>(d.planes));
  const float* grads = cpu::widenChunk(gc, dy.rawData(), 0, d.planes, scratch.data());
  const auto count = static_cast<float>(d.planeSize);
  const int threads = cpu::loopThreads(d.planes, d.planeSize);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> plane(static_cast<std::size_t>(std::min(d.planeSize, cpu::kChunk)));
#pragma omp for
    for (std::int64_t p = 0; p < d.planes; ++p) {
      const float g = grads[p] / count;
      for (std::int64_t begin = 0; begin < d.planeSize; begin += cpu::kChunk) {
        const std::int64_t n = std::min(cpu::kChunk, d.planeSize - begin);
        std::fill_n(plane.data(), n, g);
        cpu::narrowChunk(dc, dx.rawData(), p * d.planeSize + begin, n, plane.data());
      }
    }
  }
}

}  // namespace amp
