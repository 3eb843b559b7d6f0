// CPU backend: convolution, max pooling and batch normalisation (NCHW).
// Convolutions: fp32 and bf16 through oneDNN (fp32 accumulation, one rounding of the output);
// fp16 emulated as gemm does it: fp16 inputs widened exactly to fp32, an fp32 convolution, the
// output rounded once to fp16. Pooling and batch norm compute in fp32 on widened inputs and
// round their outputs once, with statistics accumulated in double.
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/onednn_conv.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

namespace {

cpu::ConvShape convShape(const Conv2dGeometry& g) {
  cpu::ConvShape s;
  s.n = g.n, s.c = g.c, s.h = g.h, s.w = g.w, s.k = g.k, s.r = g.r, s.s = g.s;
  s.strideH = g.strideH, s.strideW = g.strideW, s.padH = g.padH, s.padW = g.padW;
  if (s.n <= 0 || s.c <= 0 || s.h <= 0 || s.w <= 0 || s.k <= 0 || s.r <= 0 || s.s <= 0 ||
      s.strideH <= 0 || s.strideW <= 0 || s.padH < 0 || s.padW < 0 || s.outH() <= 0 ||
      s.outW() <= 0)
    throw std::invalid_argument("conv2d: invalid geometry");
  return s;
}

void requireNumel(const Tensor& t, const Shape& expected, const char* what) {
  if (!t.defined() || t.numel() != shapeNumel(expected))
    throw std::invalid_argument(std::string("conv2d: ") + what + " is " +
                                (t.defined() ? shapeString(t.shape()) : "undefined") +
                                ", expected " + shapeString(expected));
}

cpu::MatType matType(DType d) { return d == DType::F32 ? cpu::MatType::F32 : cpu::MatType::BF16; }

// Inputs must share one dtype (autocast casts them first); outputs are that dtype or fp32.
DType convInputDtype(std::initializer_list<const Tensor*> inputs,
                     std::initializer_list<const Tensor*> outputs) {
  const DType in = (*inputs.begin())->dtype();
  if (!(in == DType::F32 || in == DType::F16 || in == DType::BF16))
    throw std::invalid_argument("conv2d: unsupported dtype " + std::string(dtypeName(in)));
  for (const Tensor* t : inputs)
    if (t && t->dtype() != in)
      throw std::invalid_argument("conv2d: inputs must share one dtype (autocast casts them first)");
  for (const Tensor* t : outputs)
    if (t && t->dtype() != in && t->dtype() != DType::F32)
      throw std::invalid_argument("conv2d: outputs must be fp32 or the input dtype");
  return in;
}

}  // namespace

// ---- convolution ---------------------------------------------------------------------------
// fp16 runs on fp32 copies of the inputs (exact widening) into fp32 scratch outputs that are
// rounded once at the end. The helpers below make such copies only where the dtypes differ.
namespace {
struct Staging {
  CpuBackend& be;
  // An input as `want` (a copy only when it differs).
  Tensor in(const Tensor& t, DType want) const {
    return t.dtype() == want ? t : be.cast(t, want, MemCategory::Workspace);
  }
  // Where oneDNN writes an output of type `want`: the tensor itself, or scratch.
  Tensor out(const Tensor& t, DType want) const {
    return t.dtype() == want ? t : be.empty(t.shape(), want, MemCategory::Workspace);
  }
  // Rounds scratch into its destination (once).
  void finish(const Tensor& scratch, Tensor& t) const {
    if (scratch.id() != t.id()) be.castInto(scratch, t);
  }
};

template <class Fn>
void timed(GemmCounters& c, double flops, Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  c.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.flops += flops;
  ++c.calls;
}

// oneDNN's compute dtype for input dtype `in` (fp16 is emulated in fp32) and its output dtype.
DType engineInput(DType in) { return in == DType::F16 ? DType::F32 : in; }
DType engineOutput(DType in, DType out) { return in == DType::F16 ? DType::F32 : out; }
}  // namespace

void CpuBackend::conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                               const Conv2dGeometry& g) {
  const cpu::ConvShape s = convShape(g);
  requireNumel(x, {s.n, s.c, s.h, s.w}, "input");
  requireNumel(w, {s.k, s.c, s.r, s.s}, "weight");
  requireNumel(y, {s.n, s.k, s.outH(), s.outW()}, "output");
  if (bias) requireNumel(*bias, {s.k}, "bias");
  const DType in = convInputDtype({&x, &w, bias}, {&y});
  const DType ei = engineInput(in), eo = engineOutput(in, y.dtype());
  const Staging st{*this};
  timed(m_gemm, s.flops(), [&] {
    const Tensor x1 = st.in(x, ei), w1 = st.in(w, ei);
    const Tensor b1 = bias ? st.in(*bias, ei) : Tensor();
    Tensor y1 = st.out(y, eo);
    cpu::convForward(matType(ei), matType(eo), s, x1.rawData(), w1.rawData(),
                     bias ? b1.rawData() : nullptr, y1.rawData());
    st.finish(y1, y);
  });
}

void CpuBackend::conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx,
                                    const Conv2dGeometry& g) {
  const cpu::ConvShape s = convShape(g);
  requireNumel(dy, {s.n, s.k, s.outH(), s.outW()}, "output gradient");
  requireNumel(w, {s.k, s.c, s.r, s.s}, "weight");
  requireNumel(dx, {s.n, s.c, s.h, s.w}, "input gradient");
  const DType in = convInputDtype({&dy, &w}, {&dx});
  const DType ei = engineInput(in), eo = engineOutput(in, dx.dtype());
  const Staging st{*this};
  timed(m_gemm, s.flops(), [&] {
    const Tensor dy1 = st.in(dy, ei), w1 = st.in(w, ei);
    Tensor dx1 = st.out(dx, eo);
    cpu::convBackwardData(matType(ei), matType(eo), s, dy1.rawData(), w1.rawData(),
                          dx1.rawData());
    st.finish(dx1, dx);
  });
}

void CpuBackend::conv2dBackwardWeights(const Tensor& dy, const Tensor& x, Tensor& dw,
                                       Tensor* dbias, const Conv2dGeometry& g) {
  const cpu::ConvShape s = convShape(g);
  requireNumel(dy, {s.n, s.k, s.outH(), s.outW()}, "output gradient");
  requireNumel(x, {s.n, s.c, s.h, s.w}, "input");
  requireNumel(dw, {s.k, s.c, s.r, s.s}, "weight gradient");
  if (dbias) requireNumel(*dbias, {s.k}, "bias gradient");
  const DType in = convInputDtype({&dy, &x}, {&dw, dbias});
  // oneDNN writes both gradients in one type: when dw and dbias differ, both go through fp32
  // scratch (still one rounding each).
  const bool split = dbias && dbias->dtype() != dw.dtype();
  const DType ei = engineInput(in), eo = split ? DType::F32 : engineOutput(in, dw.dtype());
  const Staging st{*this};
  timed(m_gemm, s.flops(), [&] {
    const Tensor dy1 = st.in(dy, ei), x1 = st.in(x, ei);
    Tensor dw1 = st.out(dw, eo);
    Tensor db1 = dbias ? st.out(*dbias, eo) : Tensor();
    cpu::convBackwardWeights(matType(ei), matType(eo), s, x1.rawData(), dy1.rawData(),
                             dw1.rawData(), dbias ? db1.rawData() : nullptr);
    st.finish(dw1, dw);
    if (dbias) st.finish(db1, *dbias);
  });
}

// ---- max pooling ---------------------------------------------------------------------------
// argmax holds the winner's index within its (n, c) plane (h * W + w), as PyTorch's indices.

void CpuBackend::maxPool2dForward(const Tensor& x, Tensor& y, Tensor& argmax,
                                  const Pool2dGeometry& g) {
  const std::int64_t oh = g.outH(), ow = g.outW(), planes = g.n * g.c;
  if (g.kernel <= 0 || g.stride <= 0 || oh <= 0 || ow <= 0)
    throw std::invalid_argument("max_pool2d: invalid geometry");
  if (x.numel() != planes * g.h * g.w || y.numel() != planes * oh * ow ||
      argmax.numel() != y.numel() || argmax.dtype() != DType::I32)
    throw std::invalid_argument("max_pool2d: input " + shapeString(x.shape()) + ", output " +
                                shapeString(y.shape()) + ", argmax " +
                                shapeString(argmax.shape()) + " (int32) do not fit the geometry");
  auto* idx = argmax.data<std::int32_t>();
  cpu::dispatchFloatCode(floatCode(x), [&](auto st) {
    cpu::dispatchFloatCode(floatCode(y), [&](auto dt) {
      using S = decltype(st);
      using D = decltype(dt);
      const auto* in = x.data<typename S::Storage>();
      auto* out = y.data<typename D::Storage>();
#pragma omp parallel for if (x.numel() > kParallelThreshold)
      for (std::int64_t p = 0; p < planes; ++p) {
        const auto* plane = in + p * g.h * g.w;
        for (std::int64_t i = 0; i < oh; ++i)
          for (std::int64_t j = 0; j < ow; ++j) {
            // PyTorch's CPU kernel: strict '>' so the first maximum wins ties; NaN propagates.
            std::int64_t best = i * g.stride * g.w + j * g.stride;
            float maxVal = -std::numeric_limits<float>::infinity();
            for (std::int64_t a = 0; a < g.kernel; ++a)
              for (std::int64_t b = 0; b < g.kernel; ++b) {
                const std::int64_t at = (i * g.stride + a) * g.w + j * g.stride + b;
                const float v = S::load(plane[at]);
                if (v > maxVal || std::isnan(v)) maxVal = v, best = at;
              }
            const std::int64_t o = (p * oh + i) * ow + j;
            out[o] = D::store(maxVal);
            idx[o] = static_cast<std::int32_t>(best);
          }
      }
    });
  });
}

void CpuBackend::maxPool2dBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx,
                                   const Pool2dGeometry& g) {
  const std::int64_t planes = g.n * g.c, outPlane = g.outH() * g.outW(), inPlane = g.h * g.w;
  if (dy.numel() != planes * outPlane || argmax.numel() != dy.numel() ||
      argmax.dtype() != DType::I32 || dx.numel() != planes * inPlane)
    throw std::invalid_argument("max_pool2d backward: shapes do not fit the geometry");
  const auto* idx = argmax.data<std::int32_t>();
  cpu::dispatchFloatCode(floatCode(dy), [&](auto st) {
    cpu::dispatchFloatCode(floatCode(dx), [&](auto dt) {
      using S = decltype(st);
      using D = decltype(dt);
      const auto* g1 = dy.data<typename S::Storage>();
      auto* out = dx.data<typename D::Storage>();
      // Overlapping windows may route several gradients to one input: sum them in fp32, then
      // round once.
#pragma omp parallel
      {
        std::vector<float> acc(static_cast<std::size_t>(inPlane));
#pragma omp for
        for (std::int64_t p = 0; p < planes; ++p) {
          std::fill(acc.begin(), acc.end(), 0.f);
          for (std::int64_t o = 0; o < outPlane; ++o)
            acc[idx[p * outPlane + o]] += S::load(g1[p * outPlane + o]);
          for (std::int64_t i = 0; i < inPlane; ++i) out[p * inPlane + i] = D::store(acc[i]);
        }
      }
    });
  });
}

// ---- batch normalisation -------------------------------------------------------------------
// x viewed as (N, C, HW); statistics per channel over N * HW values. Per-channel tensors
// (gamma, beta, running and saved statistics) may be fp32 or, in pure-fp16 mode, fp16: they are
// read and written through fp32 host vectors (they are small).
namespace {
struct BnDims {
  std::int64_t n, c, hw;
  std::int64_t count() const { return n * hw; }
  std::int64_t at(std::int64_t ni, std::int64_t ch) const { return (ni * c + ch) * hw; }
};

BnDims bnDims(const Tensor& x, const char* op) {
  if (x.rank() < 2) throw std::invalid_argument(std::string(op) + ": x must be (N, C[, H, W]), got " + shapeString(x.shape()));
  return {x.dim(0), x.dim(1), x.numel() / std::max<std::int64_t>(1, x.dim(0) * x.dim(1))};
}

void requireChannels(std::initializer_list<const Tensor*> ts, std::int64_t c, const char* op) {
  for (const Tensor* t : ts)
    if (!t->defined() || t->numel() != c)
      throw std::invalid_argument(std::string(op) + ": per-channel tensors need " +
                                  std::to_string(c) + " elements");
}

// y = x * scale[c] + shift[c], the form PyTorch's CPU kernel uses (one multiply-add).
void bnApply(const Tensor& x, Tensor& y, const BnDims& d, const std::vector<float>& scale,
             const std::vector<float>& shift) {
  if (y.dtype() != x.dtype() || y.numel() != x.numel())
    throw std::invalid_argument("batch_norm: y must match x in shape and dtype");
  cpu::dispatchFloatCode(floatCode(x), [&](auto tag) {
    using T = decltype(tag);
    const auto* in = x.data<typename T::Storage>();
    auto* out = y.data<typename T::Storage>();
#pragma omp parallel for collapse(2) if (x.numel() > kParallelThreshold)
    for (std::int64_t ni = 0; ni < d.n; ++ni)
      for (std::int64_t ch = 0; ch < d.c; ++ch) {
        const std::int64_t base = d.at(ni, ch);
        for (std::int64_t i = 0; i < d.hw; ++i)
          out[base + i] = T::store(T::load(in[base + i]) * scale[ch] + shift[ch]);
      }
  });
}
}  // namespace

void CpuBackend::batchNormForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       Tensor& runningMean, Tensor& runningVar, float momentum,
                                       float eps, Tensor& y, Tensor& saveMean,
                                       Tensor& saveInvStd) {
  const BnDims d = bnDims(x, "batch_norm");
  requireChannels({&gamma, &beta, &runningMean, &runningVar, &saveMean, &saveInvStd}, d.c,
                  "batch_norm");
  const std::int64_t m = d.count();
  if (m < 2)
    throw std::invalid_argument("batch_norm: expected more than 1 value per channel when training");
  const std::vector<float> g = toHostFloat(gamma), b = toHostFloat(beta);
  std::vector<float> rm = toHostFloat(runningMean), rv = toHostFloat(runningVar);
  std::vector<float> mean(d.c), invStd(d.c), scale(d.c), shift(d.c);
  cpu::dispatchFloatCode(floatCode(x), [&](auto tag) {
    using T = decltype(tag);
    const auto* in = x.data<typename T::Storage>();
#pragma omp parallel for if (x.numel() > kParallelThreshold)
    for (std::int64_t ch = 0; ch < d.c; ++ch) {
      // Two passes in double: the mean, then squared deviations (no cancellation).
      double sum = 0;
      for (std::int64_t ni = 0; ni < d.n; ++ni)
        for (std::int64_t i = 0; i < d.hw; ++i) sum += T::load(in[d.at(ni, ch) + i]);
      const double mu = sum / double(m);
      double sq = 0;
      for (std::int64_t ni = 0; ni < d.n; ++ni)
        for (std::int64_t i = 0; i < d.hw; ++i) {
          const double dev = T::load(in[d.at(ni, ch) + i]) - mu;
          sq += dev * dev;
        }
      // Normalise with the biased variance; the running estimate gets the unbiased one.
      const double inv = 1.0 / std::sqrt(sq / double(m) + double(eps));
      mean[ch] = float(mu);
      invStd[ch] = float(inv);
      rm[ch] = float((1.0 - momentum) * rm[ch] + momentum * mu);
      rv[ch] = float((1.0 - momentum) * rv[ch] + momentum * (sq / double(m - 1)));
      scale[ch] = float(inv * g[ch]);
      shift[ch] = float(b[ch] - mu * inv * g[ch]);
    }
  });
  bnApply(x, y, d, scale, shift);
  uploadFloat(runningMean, rm);
  uploadFloat(runningVar, rv);
  uploadFloat(saveMean, mean);
  uploadFloat(saveInvStd, invStd);
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

void CpuBackend::batchNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                   const Tensor& saveMean, const Tensor& saveInvStd, Tensor& dx,
                                   Tensor& dgamma, Tensor& dbeta) {
  const BnDims d = bnDims(x, "batch_norm backward");
  requireChannels({&gamma, &saveMean, &saveInvStd, &dgamma, &dbeta}, d.c, "batch_norm backward");
  if (dy.numel() != x.numel() || dx.numel() != x.numel() || dx.dtype() != dy.dtype())
    throw std::invalid_argument("batch_norm backward: dy and dx must match x, dx in dy's dtype");
  const std::vector<float> g = toHostFloat(gamma), mean = toHostFloat(saveMean),
                           inv = toHostFloat(saveInvStd);
  std::vector<float> dg(d.c), db(d.c);
  const double m = double(d.count());
  cpu::dispatchFloatCode(floatCode(x), [&](auto xt) {
    cpu::dispatchFloatCode(floatCode(dy), [&](auto gt) {
      using X = decltype(xt);
      using G = decltype(gt);
      const auto* xs = x.data<typename X::Storage>();
      const auto* gs = dy.data<typename G::Storage>();
      auto* out = dx.data<typename G::Storage>();
#pragma omp parallel for if (x.numel() > kParallelThreshold)
      for (std::int64_t ch = 0; ch < d.c; ++ch) {
        double sumDy = 0, sumDyXhat = 0;
        for (std::int64_t ni = 0; ni < d.n; ++ni)
          for (std::int64_t i = 0; i < d.hw; ++i) {
            const std::int64_t at = d.at(ni, ch) + i;
            const double gv = G::load(gs[at]);
            sumDy += gv;
            sumDyXhat += gv * (double(X::load(xs[at])) - mean[ch]) * inv[ch];
          }
        dg[ch] = float(sumDyXhat);
        db[ch] = float(sumDy);
        // dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), in fp32.
        const float k = g[ch] * inv[ch], meanDy = float(sumDy / m), meanDyXhat = float(sumDyXhat / m);
        for (std::int64_t ni = 0; ni < d.n; ++ni)
          for (std::int64_t i = 0; i < d.hw; ++i) {
            const std::int64_t at = d.at(ni, ch) + i;
            const float xhat = (X::load(xs[at]) - mean[ch]) * inv[ch];
            out[at] = G::store(k * (G::load(gs[at]) - meanDy - xhat * meanDyXhat));
          }
      }
    });
  });
  uploadFloat(dgamma, dg);
  uploadFloat(dbeta, db);
}

}  // namespace amp
