// CPU backend: convolution, max pooling and batch normalisation (NCHW).
// Convolutions go to oneDNN (kernels/cpu/onednn_conv): fp32 and bf16 natively (fp32
// accumulation, one rounding of the output); fp16 emulated as gemm does it: fp16 inputs widened
// exactly to fp32, an fp32 convolution, the output rounded once to fp16. Pooling and batch norm
// compute in fp32 on widened inputs and round their outputs once.
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
  checks::poolGeometry(g.kernel, g.stride, g.padding, g.h, g.w);
  const std::int64_t oh = g.outH(), ow = g.outW(), planes = g.n * g.c;
  if (x.numel() != planes * g.h * g.w || y.numel() != planes * oh * ow ||
      argmax.numel() != y.numel() || argmax.dtype() != DType::I32)
    throw std::invalid_argument("max_pool2d: input " + shapeString(x.shape()) + ", output " +
                                shapeString(y.shape()) + ", argmax " + shapeString(argmax.shape()) +
                                " (int32) do not fit the geometry");
  const int xc = floatCode(x), yc = floatCode(y);
  const std::int64_t inPlane = g.h * g.w, outPlane = oh * ow;
#pragma omp parallel if (x.numel() > kParallelThreshold)
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
  const std::int64_t planes = g.n * g.c, outPlane = g.outH() * g.outW(), inPlane = g.h * g.w;
  if (dy.numel() != planes * outPlane || argmax.numel() != dy.numel() ||
      argmax.dtype() != DType::I32 || dx.numel() != planes * inPlane)
    throw std::invalid_argument("max_pool2d backward: shapes do not fit the geometry");
  const int gc = floatCode(dy), dc = floatCode(dx);
  const auto* idx = argmax.data<std::int32_t>();
  // Overlapping windows may route several gradients to one input: sum them in fp32, then
  // round once.
#pragma omp parallel if (dx.numel() > kParallelThreshold)
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

// ---- batch normalisation -------------------------------------------------------------------
// x viewed as (N, C, HW); statistics per channel over N * HW values. Rows of HW values are
// widened to fp32 with the vectorised converters and reduced in 8 fp32 lanes (so the compiler
// vectorises them), each row's result then accumulated in double. Per-channel tensors (gamma,
// beta, running and saved statistics) may be fp32 or, in pure-fp16 mode, fp16: they are read
// and written through fp32 host vectors (they are small).
namespace {
struct BnDims {
  std::int64_t n, c, hw;
  std::int64_t count() const { return n * hw; }
  std::int64_t at(std::int64_t ni, std::int64_t ch) const { return (ni * c + ch) * hw; }
};

BnDims bnDims(const Tensor& x, const char* op) {
  if (x.rank() < 2)
    throw std::invalid_argument(std::string(op) + ": x must be (N, C[, H, W]), got " +
                                shapeString(x.shape()));
  return {x.dim(0), x.dim(1), x.numel() / std::max<std::int64_t>(1, x.dim(0) * x.dim(1))};
}

void requireChannels(std::initializer_list<const Tensor*> ts, std::int64_t c, const char* op) {
  for (const Tensor* t : ts)
    if (!t->defined() || t->numel() != c)
      throw std::invalid_argument(std::string(op) + ": per-channel tensors need " +
                                  std::to_string(c) + " elements");
}

// Sum over i < n of f(i), in 8 fp32 lanes, returned in double.
template <class F>
double laneSum(std::int64_t n, F&& f) {
  float acc[8] = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += f(i + l);
  double total = 0;
  for (; i < n; ++i) total += f(i);
  for (float a : acc) total += a;
  return total;
}

// Calls fn(ch, ni, row) for every row of channels handled by this thread, row = x's fp32 values.
// Channels are split across threads; rows of one channel run in order.
template <class Fn>
void forEachChannel(const Tensor& x, const BnDims& d, Fn&& fn) {
  const int code = floatCode(x);
#pragma omp parallel if (x.numel() > kParallelThreshold)
  {
    std::vector<float> buf(static_cast<std::size_t>(d.hw));
#pragma omp for
    for (std::int64_t ch = 0; ch < d.c; ++ch)
      for (std::int64_t ni = 0; ni < d.n; ++ni)
        fn(ch, ni, cpu::widenChunk(code, x.rawData(), d.at(ni, ch), d.hw, buf.data()));
  }
}

// y = x * scale[c] + shift[c], the form PyTorch's CPU kernel uses (one multiply-add).
void bnApply(const Tensor& x, Tensor& y, const BnDims& d, const std::vector<float>& scale,
             const std::vector<float>& shift) {
  if (y.dtype() != x.dtype() || y.numel() != x.numel())
    throw std::invalid_argument("batch_norm: y must match x in shape and dtype");
  const int yc = floatCode(y);
  std::vector<std::vector<float>> outs(static_cast<std::size_t>(omp_get_max_threads()));
  forEachChannel(x, d, [&](std::int64_t ch, std::int64_t ni, const float* row) {
    auto& out = outs[static_cast<std::size_t>(omp_get_thread_num())];
    out.resize(static_cast<std::size_t>(d.hw));
    for (std::int64_t i = 0; i < d.hw; ++i) out[i] = row[i] * scale[ch] + shift[ch];
    cpu::narrowChunk(yc, y.rawData(), d.at(ni, ch), d.hw, out.data());
  });
}
}  // namespace

namespace {
// The training forward's statistics: the batch mean and inverse std per channel (saved for
// backward), the running estimates updated, and the per-channel scale and shift of the output.
struct BnTrainStats {
  std::vector<float> scale, shift;
};

BnTrainStats bnTrainStats(CpuBackend& be, const Tensor& x, const BnDims& d, const Tensor& gamma,
                          const Tensor& beta, Tensor& runningMean, Tensor& runningVar,
                          float momentum, float eps, Tensor& saveMean, Tensor& saveInvStd) {
  requireChannels({&gamma, &beta, &runningMean, &runningVar, &saveMean, &saveInvStd}, d.c,
                  "batch_norm");
  const std::int64_t m = d.count();
  if (m < 2)
    throw std::invalid_argument("batch_norm: expected more than 1 value per channel when training");
  const std::vector<float> g = be.toHostFloat(gamma), b = be.toHostFloat(beta);
  std::vector<float> rm = be.toHostFloat(runningMean), rv = be.toHostFloat(runningVar);
  // Two passes: the mean, then squared deviations from it (no cancellation).
  std::vector<double> sum(d.c, 0.0), sq(d.c, 0.0);
  forEachChannel(x, d, [&](std::int64_t ch, std::int64_t, const float* row) {
    sum[ch] += laneSum(d.hw, [&](std::int64_t i) { return row[i]; });
  });
  std::vector<float> mean(d.c), invStd(d.c);
  BnTrainStats st{std::vector<float>(d.c), std::vector<float>(d.c)};
  for (std::int64_t ch = 0; ch < d.c; ++ch) mean[ch] = float(sum[ch] / double(m));
  forEachChannel(x, d, [&](std::int64_t ch, std::int64_t, const float* row) {
    const float mu = mean[ch];
    sq[ch] += laneSum(d.hw, [&](std::int64_t i) { return (row[i] - mu) * (row[i] - mu); });
  });
  for (std::int64_t ch = 0; ch < d.c; ++ch) {
    // Normalise with the biased variance; the running estimate gets the unbiased one.
    const double mu = sum[ch] / double(m), inv = 1.0 / std::sqrt(sq[ch] / double(m) + eps);
    invStd[ch] = float(inv);
    rm[ch] = float((1.0 - momentum) * rm[ch] + momentum * mu);
    rv[ch] = float((1.0 - momentum) * rv[ch] + momentum * (sq[ch] / double(m - 1)));
    st.scale[ch] = float(inv * g[ch]);
    st.shift[ch] = float(b[ch] - mu * inv * g[ch]);
  }
  be.uploadFloat(runningMean, rm);
  be.uploadFloat(runningVar, rv);
  be.uploadFloat(saveMean, mean);
  be.uploadFloat(saveInvStd, invStd);
  return st;
}

// Rounds fp32 values in place to what a tensor of dtype `code` would hold (nothing for fp32).
void roundToCode(int code, float* v, std::int64_t n) {
  if (code == 1) roundF32ThroughF16(v, static_cast<std::size_t>(n));
  else if (code == 2) roundF32ThroughBf16(v, static_cast<std::size_t>(n));
}

// y = relu(x * scale[c] + shift[c] [+ residual]) in one pass, with the roundings of the separate
// ops: the normalised value rounded to y's dtype, the sum rounded again, then the ReLU (exact).
void bnApplyRelu(const Tensor& x, const Tensor* residual, Tensor& y, const BnDims& d,
                 const std::vector<float>& scale, const std::vector<float>& shift) {
  if (y.dtype() != x.dtype() || y.numel() != x.numel() ||
      (residual && (residual->dtype() != y.dtype() || residual->numel() != y.numel())))
    throw std::invalid_argument("batch_norm + relu: y and the residual must match x in shape and dtype");
  const int yc = floatCode(y);
  const auto threads = static_cast<std::size_t>(omp_get_max_threads());
  std::vector<std::vector<float>> outs(threads), adds(threads);
  forEachChannel(x, d, [&](std::int64_t ch, std::int64_t ni, const float* row) {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    auto& out = outs[t];
    out.resize(static_cast<std::size_t>(d.hw));
    for (std::int64_t i = 0; i < d.hw; ++i) out[i] = row[i] * scale[ch] + shift[ch];
    if (residual) {
      roundToCode(yc, out.data(), d.hw);
      adds[t].resize(static_cast<std::size_t>(d.hw));
      const float* r = cpu::widenChunk(yc, residual->rawData(), d.at(ni, ch), d.hw, adds[t].data());
      for (std::int64_t i = 0; i < d.hw; ++i) out[i] += r[i];
    }
    for (std::int64_t i = 0; i < d.hw; ++i) out[i] = reluForward(out[i]);
    cpu::narrowChunk(yc, y.rawData(), d.at(ni, ch), d.hw, out.data());
  });
}
}  // namespace

void CpuBackend::batchNormForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       Tensor& runningMean, Tensor& runningVar, float momentum,
                                       float eps, Tensor& y, Tensor& saveMean, Tensor& saveInvStd) {
  const BnDims d = bnDims(x, "batch_norm");
  const BnTrainStats st = bnTrainStats(*this, x, d, gamma, beta, runningMean, runningVar, momentum,
                                       eps, saveMean, saveInvStd);
  bnApply(x, y, d, st.scale, st.shift);
}

void CpuBackend::batchNormReluForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                           Tensor& runningMean, Tensor& runningVar, float momentum,
                                           float eps, const Tensor* residual, Tensor& y,
                                           Tensor& saveMean, Tensor& saveInvStd) {
  const BnDims d = bnDims(x, "batch_norm");
  const BnTrainStats st = bnTrainStats(*this, x, d, gamma, beta, runningMean, runningVar, momentum,
                                       eps, saveMean, saveInvStd);
  bnApplyRelu(x, residual, y, d, st.scale, st.shift);
}

void CpuBackend::batchNormForwardEval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      const Tensor& runningMean, const Tensor& runningVar,
                                      float eps, Tensor& y) {
  const BnDims d = bnDims(x, "batch_norm");
  requireChannels({&gamma, &beta, &runningMean, &runningVar}, d.c, "batch_norm");
  const std::vector<float> g = toHostFloat(gamma), b = toHostFloat(beta);
  const std::vector<float> rm = toHostFloat(runningMean), rv = toHostFloat(runningVar);
  std::vector<float> scale(d.c), shift(d.c);
  for (std::int64_t ch = 0; ch < d.c; ++ch) {
    const double inv = 1.0 / std::sqrt(double(rv[ch]) + double(eps));
    scale[ch] = float(inv * g[ch]);
    shift[ch] = float(b[ch] - rm[ch] * inv * g[ch]);
  }
  bnApply(x, y, d, scale, shift);
}

namespace {
// Batch norm's backward; with `reluOut`, dy first goes through the backward of the ReLU that
// produced reluOut (dy where reluOut > 0, else 0: exact, so the fused pass equals the two ops).
void bnBackward(CpuBackend& be, const Tensor& dy, const Tensor* reluOut, const Tensor& x,
                const Tensor& gamma, const Tensor& saveMean, const Tensor& saveInvStd, Tensor& dx,
                Tensor& dgamma, Tensor& dbeta) {
  const BnDims d = bnDims(x, "batch_norm backward");
  requireChannels({&gamma, &saveMean, &saveInvStd, &dgamma, &dbeta}, d.c, "batch_norm backward");
  if (dy.numel() != x.numel() || dx.numel() != x.numel() || dx.dtype() != dy.dtype())
    throw std::invalid_argument("batch_norm backward: dy and dx must match x, dx in dy's dtype");
  if (reluOut && (reluOut->numel() != x.numel()))
    throw std::invalid_argument("batch_norm backward: the ReLU's output must match x");
  const std::vector<float> g = be.toHostFloat(gamma), mean = be.toHostFloat(saveMean),
                           inv = be.toHostFloat(saveInvStd);
  const int gc = floatCode(dy), dc = floatCode(dx), rc = reluOut ? floatCode(*reluOut) : 0;
  std::vector<double> sumDy(d.c, 0.0), sumDyXhat(d.c, 0.0);
  const double m = double(d.count());
  // Per thread: a row of dy (masked by the ReLU's output when fused), and a row of dx, in fp32.
  const auto threads = static_cast<std::size_t>(omp_get_max_threads());
  std::vector<std::vector<float>> gBufs(threads), rBufs(threads), oBufs(threads);
  auto dyRow = [&](std::int64_t ni, std::int64_t ch) -> const float* {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    auto& buf = gBufs[t];
    buf.resize(static_cast<std::size_t>(d.hw));
    const float* row = cpu::widenChunk(gc, dy.rawData(), d.at(ni, ch), d.hw, buf.data());
    if (!reluOut) return row;
    rBufs[t].resize(static_cast<std::size_t>(d.hw));
    const float* y = cpu::widenChunk(rc, reluOut->rawData(), d.at(ni, ch), d.hw, rBufs[t].data());
    if (row != buf.data()) std::copy_n(row, d.hw, buf.data());  // fp32 dy: not in place
    for (std::int64_t i = 0; i < d.hw; ++i) {
      const float gi = buf[i];
      buf[i] = reluBackward(y[i], gi);
    }
    return buf.data();
  };
  forEachChannel(x, d, [&](std::int64_t ch, std::int64_t ni, const float* row) {
    const float* gr = dyRow(ni, ch);
    const float mu = mean[ch], is = inv[ch];
    sumDy[ch] += laneSum(d.hw, [&](std::int64_t i) { return gr[i]; });
    sumDyXhat[ch] += laneSum(d.hw, [&](std::int64_t i) { return gr[i] * ((row[i] - mu) * is); });
  });
  // dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), in fp32.
  forEachChannel(x, d, [&](std::int64_t ch, std::int64_t ni, const float* row) {
    const float* gr = dyRow(ni, ch);
    auto& out = oBufs[static_cast<std::size_t>(omp_get_thread_num())];
    out.resize(static_cast<std::size_t>(d.hw));
    const float k = g[ch] * inv[ch], mu = mean[ch], is = inv[ch];
    const float meanDy = float(sumDy[ch] / m), meanDyXhat = float(sumDyXhat[ch] / m);
    for (std::int64_t i = 0; i < d.hw; ++i)
      out[i] = k * (gr[i] - meanDy - (row[i] - mu) * is * meanDyXhat);
    cpu::narrowChunk(dc, dx.rawData(), d.at(ni, ch), d.hw, out.data());
  });
  std::vector<float> dg(d.c), db(d.c);
  for (std::int64_t ch = 0; ch < d.c; ++ch) {
    dg[ch] = float(sumDyXhat[ch]);
    db[ch] = float(sumDy[ch]);
  }
  be.uploadFloat(dgamma, dg);
  be.uploadFloat(dbeta, db);
}
}  // namespace

void CpuBackend::batchNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                   const Tensor& saveMean, const Tensor& saveInvStd, Tensor& dx,
                                   Tensor& dgamma, Tensor& dbeta) {
  bnBackward(*this, dy, nullptr, x, gamma, saveMean, saveInvStd, dx, dgamma, dbeta);
}

void CpuBackend::batchNormReluBackward(const Tensor& dy, const Tensor& reluOut, const Tensor& x,
                                       const Tensor& gamma, const Tensor& saveMean,
                                       const Tensor& saveInvStd, Tensor& dx, Tensor& dgamma,
                                       Tensor& dbeta) {
  bnBackward(*this, dy, &reluOut, x, gamma, saveMean, saveInvStd, dx, dgamma, dbeta);
}

}  // namespace amp
