// CPU backend: convolution and max pooling (NCHW); batch norm is cpu_backend_batch_norm.cpp.
// Channels-last activations (all of one op's in one format) run on NCHW copies (NchwScratch,
// cpu_backend_layout.cpp): the same results, bit for bit.
// Convolutions go to oneDNN (kernels/cpu/onednn_conv): fp32 and bf16 natively (fp32
// accumulation, one rounding of the output); fp16 emulated as gemm does it: fp16 inputs widened
// exactly to fp32, an fp32 convolution, the output rounded once to fp16. Pooling computes in fp32 on widened inputs
// and rounds its outputs once.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/common/activation_math.h"
#include "kernels/cpu/chunked.h"
#include "kernels/cpu/onednn_conv.h"

namespace amp {

using checks::checkedGeometry;
using checks::convInputDtype;
using checks::requireNumel;
using cpu::floatCode;
using cpu::kParallelThreshold;
using cpu::ScratchAccount;

namespace {


cpu::ConvType convType(DType d) {
  if (d == DType::F32) return cpu::ConvType::F32;
  return d == DType::BF16 ? cpu::ConvType::BF16 : cpu::ConvType::F16;
}

// Convolutions count in the GEMM counters (the benchmark's "GEMM GFLOP/s in the step").
template <class Fn>
void timed(GemmCounters& c, double flops, Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  c.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.flops += flops;
  ++c.calls;
}

}  // namespace

// ---- convolution ---------------------------------------------------------------------------

void CpuBackend::conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                               const Conv2dGeometry& g) {
  checks::requireContiguous(w, "conv2d", "weight");
  if (checks::sameFormat({&x, &y}, "conv2d") == MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    conv2dForward(s.in(x), w, bias, s.out(y), g);
    return s.finish();
  }
  const Conv2dGeometry& s = checkedGeometry(g);
  requireNumel(x, {s.n, s.c, s.h, s.w}, "input");
  requireNumel(w, {s.k, s.c, s.r, s.s}, "weight");
  requireNumel(y, {s.n, s.k, s.outH(), s.outW()}, "output");
  if (bias) requireNumel(*bias, {s.k}, "bias");
  const DType in = convInputDtype({&x, &w, bias}, {&y});
  const ScratchAccount scratch(m_memory, cpu::convScratchBytes(cpu::ConvPass::Forward, convType(in),
                                                               convType(y.dtype()), s, bias != nullptr));
  timed(m_gemm, s.flops(), [&] {
    cpu::convForward(convType(in), convType(y.dtype()), s, x.rawData(), w.rawData(),
                     bias ? bias->rawData() : nullptr, y.rawData());
  });
}

void CpuBackend::conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx,
                                    const Conv2dGeometry& g) {
  checks::requireContiguous(w, "conv2d backward", "weight");
  if (checks::sameFormat({&dy, &dx}, "conv2d backward") == MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    conv2dBackwardData(s.in(dy), w, s.out(dx), g);
    return s.finish();
  }
  const Conv2dGeometry& s = checkedGeometry(g);
  requireNumel(dy, {s.n, s.k, s.outH(), s.outW()}, "output gradient");
  requireNumel(w, {s.k, s.c, s.r, s.s}, "weight");
  requireNumel(dx, {s.n, s.c, s.h, s.w}, "input gradient");
  const DType in = convInputDtype({&dy, &w}, {&dx});
  const ScratchAccount scratch(m_memory, cpu::convScratchBytes(cpu::ConvPass::BackwardData, convType(in),
                                                               convType(dx.dtype()), s, false));
  timed(m_gemm, s.flops(), [&] {
    cpu::convBackwardData(convType(in), convType(dx.dtype()), s, dy.rawData(), w.rawData(),
                          dx.rawData());
  });
}

void CpuBackend::conv2dBackwardWeights(const Tensor& dy, const Tensor& x, Tensor& dw, Tensor* dbias,
                                       const Conv2dGeometry& g) {
  checks::requireContiguous(dw, "conv2d backward", "weight gradient");
  if (checks::sameFormat({&dy, &x}, "conv2d backward") == MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    conv2dBackwardWeights(s.in(dy), s.in(x), dw, dbias, g);
    return s.finish();
  }
  const Conv2dGeometry& s = checkedGeometry(g);
  requireNumel(dy, {s.n, s.k, s.outH(), s.outW()}, "output gradient");
  requireNumel(x, {s.n, s.c, s.h, s.w}, "input");
  requireNumel(dw, {s.k, s.c, s.r, s.s}, "weight gradient");
  if (dbias) requireNumel(*dbias, {s.k}, "bias gradient");
  const DType in = convInputDtype({&dy, &x}, {&dw, dbias});
  const bool oneType = !dbias || dbias->dtype() == dw.dtype();
  const ScratchAccount scratch(
      m_memory, cpu::convScratchBytes(cpu::ConvPass::BackwardWeights, convType(in),
                                      oneType ? convType(dw.dtype()) : cpu::ConvType::F32, s,
                                      dbias != nullptr));
  timed(m_gemm, s.flops(), [&] {
    if (oneType) {
      cpu::convBackwardWeights(convType(in), convType(dw.dtype()), s, x.rawData(), dy.rawData(),
                               dw.rawData(), dbias ? dbias->rawData() : nullptr);
      return;
    }
    // oneDNN writes both gradients in one type: for mixed dtypes both go through fp32 scratch
    // (still one rounding each).
    Tensor dw32 = empty(dw.shape(), DType::F32, MemCategory::Workspace);
    Tensor db32 = empty(dbias->shape(), DType::F32, MemCategory::Workspace);
    cpu::convBackwardWeights(convType(in), cpu::ConvType::F32, s, x.rawData(), dy.rawData(),
                             dw32.rawData(), db32.rawData());
    castInto(dw32, dw);
    castInto(db32, *dbias);
  });
}

void CpuBackend::conv2dBackward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor* dx,
                                Tensor& dw, Tensor* dbias, const Conv2dGeometry& g) {
  checks::requireContiguous(w, "conv2d backward", "weight");
  checks::requireContiguous(dw, "conv2d backward", "weight gradient");
  if (checks::sameFormat({&dy, &x, dx}, "conv2d backward") == MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    conv2dBackward(s.in(dy), s.in(x), w, s.out(dx), dw, dbias, g);
    return s.finish();
  }
  // Mixed weight and bias gradient dtypes take conv2dBackwardWeights' fp32 detour: no sharing.
  if (dbias && dbias->dtype() != dw.dtype()) return Backend::conv2dBackward(dy, x, w, dx, dw, dbias, g);
  const Conv2dGeometry& s = checkedGeometry(g);
  requireNumel(dy, {s.n, s.k, s.outH(), s.outW()}, "output gradient");
  requireNumel(x, {s.n, s.c, s.h, s.w}, "input");
  requireNumel(w, {s.k, s.c, s.r, s.s}, "weight");
  requireNumel(dw, {s.k, s.c, s.r, s.s}, "weight gradient");
  if (dbias) requireNumel(*dbias, {s.k}, "bias gradient");
  if (dx) requireNumel(*dx, {s.n, s.c, s.h, s.w}, "input gradient");
  const DType in = convInputDtype({&dy, &x, &w}, {&dw, dbias, dx});
  const cpu::ConvType outData = convType(dx ? dx->dtype() : in), outWeights = convType(dw.dtype());
  const ScratchAccount scratch(m_memory, cpu::convBackwardScratchBytes(convType(in), outData, outWeights,
                                                                       s, dbias != nullptr, dx != nullptr));
  timed(m_gemm, (dx ? 2 : 1) * s.flops(), [&] {
    cpu::convBackward(convType(in), outData, outWeights, s, x.rawData(), dy.rawData(), w.rawData(),
                      dx ? dx->rawData() : nullptr, dw.rawData(), dbias ? dbias->rawData() : nullptr);
  });
}

// ---- max pooling ---------------------------------------------------------------------------
// argmax holds the winner's index within its (n, c) plane (h * W + w), as PyTorch's indices.
// Each plane is widened to fp32 (exact, vectorised), pooled with branch-free selects that the
// compiler vectorises along the output row (on real data a branch per compare mispredicts
// often), and the results narrowed (exact: they are input values).
namespace {
// One plane of max pooling on fp32 values; S > 0 fixes the stride at compile time so the
// loops over an output row vectorise with the strided loads.
template <int S>
void poolPlane(const float* in, const Pool2dGeometry& g, std::int64_t oh, std::int64_t ow,
               float* out, std::int32_t* idx) {
  const std::int64_t stride = S > 0 ? S : g.stride;
  for (std::int64_t i = 0; i < oh; ++i) {
    float* best = out + i * ow;
    std::int32_t* at = idx + i * ow;
    for (std::int64_t j = 0; j < ow; ++j) {
      best[j] = -std::numeric_limits<float>::infinity();
      at[j] = std::int32_t(i * stride * g.w + j * stride);
    }
    // Window elements in row-major order with a strict '>', so the first maximum wins ties;
    // a NaN is taken whenever seen (PyTorch's CPU kernel: val > max || isnan(val)).
    for (std::int64_t a = 0; a < g.kernel; ++a)
      for (std::int64_t b = 0; b < g.kernel; ++b) {
        const std::int64_t base = (i * stride + a) * g.w + b;
        const float* row = in + base;
        for (std::int64_t j = 0; j < ow; ++j) {
          const float v = row[j * stride];
          const bool take = v > best[j] || v != v;
          best[j] = take ? v : best[j];
          at[j] = take ? std::int32_t(base + j * stride) : at[j];
        }
      }
  }
}

// A padded window (the ImageNet stem's 3x3 / stride 2 / padding 1): PyTorch's rule over the
// window's positions inside the input only, starting from -inf at the first of them; padding
// is never chosen, even over -inf inputs. Rare and small, so plain loops.
void poolPlanePadded(const float* in, const Pool2dGeometry& g, std::int64_t oh, std::int64_t ow,
                     float* out, std::int32_t* idx) {
  for (std::int64_t i = 0; i < oh; ++i) {
    const std::int64_t r0 = std::max<std::int64_t>(0, i * g.stride - g.padding);
    const std::int64_t r1 = std::min(g.h, i * g.stride - g.padding + g.kernel);
    for (std::int64_t j = 0; j < ow; ++j) {
      const std::int64_t c0 = std::max<std::int64_t>(0, j * g.stride - g.padding);
      const std::int64_t c1 = std::min(g.w, j * g.stride - g.padding + g.kernel);
      float best = -std::numeric_limits<float>::infinity();
      std::int64_t at = r0 * g.w + c0;
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) {
          const float v = in[r * g.w + c];
          if (v > best || v != v) {
            best = v;
            at = r * g.w + c;
          }
        }
      out[i * ow + j] = best;
      idx[i * ow + j] = std::int32_t(at);
    }
  }
}

// The common 2x2 / stride 2 window with the running maximum held in registers. Starting from
// the window's first element is the same as starting from -inf with the rule above.
void poolPlane2x2(const float* in, const Pool2dGeometry& g, std::int64_t oh, std::int64_t ow,
                  float* out, std::int32_t* idx) {
  for (std::int64_t i = 0; i < oh; ++i) {
    const float* r0 = in + 2 * i * g.w;
    const float* r1 = r0 + g.w;
    const auto base = std::int32_t(2 * i * g.w);
    const auto w = std::int32_t(g.w);
    // Bitwise '|' and selects, no arrays or short-circuits: the loop then vectorises.
    for (std::int64_t j = 0; j < ow; ++j) {
      const float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
      float m = a;
      std::int32_t k = 0;
      bool take = (b > m) | (b != b);
      m = take ? b : m;
      k = take ? 1 : k;
      take = (c > m) | (c != c);
      m = take ? c : m;
      k = take ? w : k;
      take = (d > m) | (d != d);
      m = take ? d : m;
      k = take ? w + 1 : k;
      out[i * ow + j] = m;
      idx[i * ow + j] = base + std::int32_t(2 * j) + k;
    }
  }
}
}  // namespace

void CpuBackend::maxPool2dForward(const Tensor& x, Tensor& y, Tensor& argmax,
                                  const Pool2dGeometry& g) {
  if (checks::sameFormat({&x, &y, &argmax}, "max_pool2d") == MemoryFormat::ChannelsLast) {
    // argmax keeps its meaning (the winner's index h * W + w within its plane) in either format.
    cpu::NchwScratch s(*this);
    maxPool2dForward(s.in(x), s.out(y), s.out(argmax), g);
    return s.finish();
  }
  checks::poolGeometry(g.kernel, g.stride, g.padding, g.h, g.w);
  const std::int64_t oh = g.outH(), ow = g.outW(), planes = g.n * g.c;
  if (x.numel() != planes * g.h * g.w || y.numel() != planes * oh * ow ||
      argmax.numel() != y.numel() || argmax.dtype() != DType::I32)
    throw std::invalid_argument("max_pool2d: input " + shapeString(x.shape()) + ", output " +
                                shapeString(y.shape()) + ", argmax " + shapeString(argmax.shape()) +
                                " (int32) do not fit the geometry");
  const int xc = floatCode(x), yc = floatCode(y);
  const std::int64_t inPlane = g.h * g.w, outPlane = oh * ow;
  const int threads = cpu::loopThreads(planes, inPlane);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> in(static_cast<std::size_t>(inPlane)),
        out(static_cast<std::size_t>(outPlane));
#pragma omp for
    for (std::int64_t p = 0; p < planes; ++p) {
      const float* plane = cpu::widenChunk(xc, x.rawData(), p * inPlane, inPlane, in.data());
      std::int32_t* idx = argmax.data<std::int32_t>() + p * outPlane;
      if (g.padding > 0)
        poolPlanePadded(plane, g, oh, ow, out.data(), idx);
      else if (g.kernel == 2 && g.stride == 2)
        poolPlane2x2(plane, g, oh, ow, out.data(), idx);
      else if (g.stride == 2)
        poolPlane<2>(plane, g, oh, ow, out.data(), idx);
      else
        poolPlane<0>(plane, g, oh, ow, out.data(), idx);
      cpu::narrowChunk(yc, y.rawData(), p * outPlane, outPlane, out.data());
    }
  }
}

void CpuBackend::maxPool2dBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx,
                                   const Pool2dGeometry& g) {
  if (checks::sameFormat({&dy, &argmax, &dx}, "max_pool2d backward") == MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    maxPool2dBackward(s.in(dy), s.in(argmax), s.out(dx), g);
    return s.finish();
  }
  const std::int64_t planes = g.n * g.c, outPlane = g.outH() * g.outW(), inPlane = g.h * g.w;
  if (dy.numel() != planes * outPlane || argmax.numel() != dy.numel() ||
      argmax.dtype() != DType::I32 || dx.numel() != planes * inPlane)
    throw std::invalid_argument("max_pool2d backward: shapes do not fit the geometry");
  const int gc = floatCode(dy), dc = floatCode(dx);
  const auto* idx = argmax.data<std::int32_t>();
  // Overlapping windows may route several gradients to one input: sum them in fp32, then
  // round once.
  const int threads = cpu::loopThreads(planes, inPlane);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> grad(static_cast<std::size_t>(outPlane)),
        acc(static_cast<std::size_t>(inPlane));
#pragma omp for
    for (std::int64_t p = 0; p < planes; ++p) {
      const float* gp = cpu::widenChunk(gc, dy.rawData(), p * outPlane, outPlane, grad.data());
      std::fill(acc.begin(), acc.end(), 0.f);
      for (std::int64_t o = 0; o < outPlane; ++o) acc[idx[p * outPlane + o]] += gp[o];
      cpu::narrowChunk(dc, dx.rawData(), p * inPlane, inPlane, acc.data());
    }
  }
}

}  // namespace amp
