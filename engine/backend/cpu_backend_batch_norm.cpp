// CPU backend: batch normalisation (NCHW), training and eval forward, backward, and the fused
// batch norm + (add +) ReLU passes of residual blocks.
//
// x is viewed as N * C rows of HW values; statistics are per channel over N * HW values. Rows
// are visited in memory order: each thread takes a contiguous range of rows and widens spans
// of consecutive rows (about kChunk values, a whole row when rows are longer) to fp32 at once.
// A channel's rows lie C * HW values apart (8 KiB for a bf16 8x8 map of 64 channels), too far
// for the hardware prefetcher, so walking channel by channel waited on memory for every short
// row; in memory order the reads stream.
//
// Reductions stay independent of the thread count and bit for bit what a channel-by-channel
// walk gives: every row's sum is computed alone (8 fp32 lanes, returned in double) into a slot
// of its own, then each channel adds its rows' sums in sample order, in double. Per-channel
// tensors (gamma, beta, running and saved statistics) may be fp32 or, in pure-fp16 mode, fp16:
// they are read and written through fp32 host vectors (they are small). Channels-last
// activations (x, y, dy, dx, residual and reluOut in one format) run on NCHW copies
// (NchwScratch): the same results, bit for bit.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/common/activation_math.h"
#include "kernels/cpu/chunked.h"
#include "kernels/cpu/convert.h"

namespace amp {

using cpu::floatCode;
using cpu::kParallelThreshold;

namespace {
struct BnDims {
  std::int64_t n, c, hw;
  std::int64_t count() const { return n * hw; }
  std::int64_t rows() const { return n * c; }
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

// Sum over i < n of v[i] (or of f(i)), in 8 fp32 lanes, returned in double.
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

// A thread's fp32 buffers for one span: up to three widened inputs and the output.
struct SpanScratch {
  explicit SpanScratch(std::size_t n) : a(n), b(n), c(n), out(n) {}
  std::vector<float> a, b, c, out;
};

// A span: rows [first, first + count) of the N * C rows, first * HW values into the tensors.
struct RowSpan {
  std::int64_t first, count, hw;
  std::int64_t offset() const { return first * hw; }
  std::int64_t values() const { return count * hw; }
  std::int64_t channel(std::int64_t r, std::int64_t c) const { return (first + r) % c; }
};

// Calls fn(span, scratch) for spans covering all rows, in parallel when there is enough work;
// threads take contiguous ranges of spans (schedule(static)), so each streams its share.
template <class Fn>
void forEachRowSpan(const BnDims& d, std::int64_t numel, Fn&& fn) {
  const std::int64_t rows = d.rows();
  const std::int64_t perSpan = std::max<std::int64_t>(1, cpu::kChunk / std::max<std::int64_t>(1, d.hw));
  const std::int64_t spans = (rows + perSpan - 1) / perSpan;
  const int threads = cpu::loopThreads(spans, perSpan * d.hw);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    SpanScratch s(static_cast<std::size_t>(perSpan * d.hw));
#pragma omp for schedule(static)
    for (std::int64_t k = 0; k < spans; ++k)
      fn(RowSpan{k * perSpan, std::min(perSpan, rows - k * perSpan), d.hw}, s);
  }
}

// Per-channel totals of per-row sums, each channel's rows added in sample order.
std::vector<double> channelTotals(const BnDims& d, const std::vector<double>& rowSums) {
  std::vector<double> total(static_cast<std::size_t>(d.c), 0.0);
  for (std::int64_t ni = 0; ni < d.n; ++ni)
    for (std::int64_t ch = 0; ch < d.c; ++ch) total[ch] += rowSums[ni * d.c + ch];
  return total;
}

const float* widen(const Tensor& t, const RowSpan& sp, std::vector<float>& buf) {
  return cpu::widenChunk(floatCode(t), t.rawData(), sp.offset(), sp.values(), buf.data());
}

// y = x * scale[c] + shift[c], the form PyTorch's CPU kernel uses (one multiply-add).
void bnApply(const Tensor& x, Tensor& y, const BnDims& d, const std::vector<float>& scale,
             const std::vector<float>& shift) {
  if (y.dtype() != x.dtype() || y.numel() != x.numel())
    throw std::invalid_argument("batch_norm: y must match x in shape and dtype");
  const int yc = floatCode(y);
  forEachRowSpan(d, x.numel(), [&](const RowSpan& sp, SpanScratch& s) {
    const float* v = widen(x, sp, s.a);
    float* out = cpu::outputChunk(yc, y.rawData(), sp.offset(), s.out.data());
    for (std::int64_t r = 0; r < sp.count; ++r) {
      const std::int64_t ch = sp.channel(r, d.c), o = r * d.hw;
      for (std::int64_t i = 0; i < d.hw; ++i) out[o + i] = v[o + i] * scale[ch] + shift[ch];
    }
    cpu::narrowChunk(yc, y.rawData(), sp.offset(), sp.values(), out);
  });
}

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
  std::vector<double> rowSums(static_cast<std::size_t>(d.rows()));
  forEachRowSpan(d, x.numel(), [&](const RowSpan& sp, SpanScratch& s) {
    const float* v = widen(x, sp, s.a);
    for (std::int64_t r = 0; r < sp.count; ++r)
      rowSums[sp.first + r] = laneSum(d.hw, [&](std::int64_t i) { return v[r * d.hw + i]; });
  });
  const std::vector<double> sum = channelTotals(d, rowSums);
  std::vector<float> mean(d.c), invStd(d.c);
  for (std::int64_t ch = 0; ch < d.c; ++ch) mean[ch] = float(sum[ch] / double(m));
  forEachRowSpan(d, x.numel(), [&](const RowSpan& sp, SpanScratch& s) {
    const float* v = widen(x, sp, s.a);
    for (std::int64_t r = 0; r < sp.count; ++r) {
      const float mu = mean[sp.channel(r, d.c)];
      const float* row = v + r * d.hw;
      rowSums[sp.first + r] =
          laneSum(d.hw, [&](std::int64_t i) { return (row[i] - mu) * (row[i] - mu); });
    }
  });
  const std::vector<double> sq = channelTotals(d, rowSums);
  BnTrainStats st{std::vector<float>(d.c), std::vector<float>(d.c)};
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
  forEachRowSpan(d, x.numel(), [&](const RowSpan& sp, SpanScratch& s) {
    const float* v = widen(x, sp, s.a);
    // With a residual, results stay in scratch until the sum is done: y may be the residual.
    float* out = residual ? s.out.data() : cpu::outputChunk(yc, y.rawData(), sp.offset(), s.out.data());
    for (std::int64_t r = 0; r < sp.count; ++r) {
      const std::int64_t ch = sp.channel(r, d.c), o = r * d.hw;
      for (std::int64_t i = 0; i < d.hw; ++i) out[o + i] = v[o + i] * scale[ch] + shift[ch];
    }
    const std::int64_t n = sp.values();
    if (residual) {
      roundToCode(yc, out, n);
      const float* add = widen(*residual, sp, s.b);
      for (std::int64_t i = 0; i < n; ++i) out[i] += add[i];
    }
    for (std::int64_t i = 0; i < n; ++i) out[i] = reluForward(out[i]);
    cpu::narrowChunk(yc, y.rawData(), sp.offset(), n, out);
  });
}
}  // namespace

void CpuBackend::batchNormForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       Tensor& runningMean, Tensor& runningVar, float momentum,
                                       float eps, Tensor& y, Tensor& saveMean, Tensor& saveInvStd) {
  if (checks::sameFormat({&x, &y}, "batch_norm") == MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    batchNormForwardTrain(s.in(x), gamma, beta, runningMean, runningVar, momentum, eps, s.out(y),
                          saveMean, saveInvStd);
    return s.finish();
  }
  const BnDims d = bnDims(x, "batch_norm");
  const BnTrainStats st = bnTrainStats(*this, x, d, gamma, beta, runningMean, runningVar, momentum,
                                       eps, saveMean, saveInvStd);
  bnApply(x, y, d, st.scale, st.shift);
}

void CpuBackend::batchNormReluForwardTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                           Tensor& runningMean, Tensor& runningVar, float momentum,
                                           float eps, const Tensor* residual, Tensor& y,
                                           Tensor& saveMean, Tensor& saveInvStd) {
  if (checks::sameFormat({&x, residual, &y}, "batch_norm") == MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    batchNormReluForwardTrain(s.in(x), gamma, beta, runningMean, runningVar, momentum, eps,
                              s.in(residual), s.out(y), saveMean, saveInvStd);
    return s.finish();
  }
  const BnDims d = bnDims(x, "batch_norm");
  const BnTrainStats st = bnTrainStats(*this, x, d, gamma, beta, runningMean, runningVar, momentum,
                                       eps, saveMean, saveInvStd);
  bnApplyRelu(x, residual, y, d, st.scale, st.shift);
}

void CpuBackend::batchNormForwardEval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      const Tensor& runningMean, const Tensor& runningVar,
                                      float eps, Tensor& y) {
  if (checks::sameFormat({&x, &y}, "batch_norm") == MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    batchNormForwardEval(s.in(x), gamma, beta, runningMean, runningVar, eps, s.out(y));
    return s.finish();
  }
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
  const int dc = floatCode(dx);
  const double m = double(d.count());
  // A span's dy in fp32, masked by the ReLU's output when fused.
  auto dySpan = [&](const RowSpan& sp, SpanScratch& s) -> const float* {
    const float* gr = widen(dy, sp, s.b);
    if (!reluOut) return gr;
    const float* y = widen(*reluOut, sp, s.c);
    float* masked = s.out.data();
    for (std::int64_t i = 0, n = sp.values(); i < n; ++i) masked[i] = reluBackward(y[i], gr[i]);
    return masked;
  };
  std::vector<double> rowDy(static_cast<std::size_t>(d.rows())), rowDyXhat(rowDy.size());
  forEachRowSpan(d, x.numel(), [&](const RowSpan& sp, SpanScratch& s) {
    const float* v = widen(x, sp, s.a);
    const float* gs = dySpan(sp, s);
    for (std::int64_t r = 0; r < sp.count; ++r) {
      const std::int64_t ch = sp.channel(r, d.c);
      const float mu = mean[ch], is = inv[ch];
      const float *row = v + r * d.hw, *gr = gs + r * d.hw;
      rowDy[sp.first + r] = laneSum(d.hw, [&](std::int64_t i) { return gr[i]; });
      rowDyXhat[sp.first + r] =
          laneSum(d.hw, [&](std::int64_t i) { return gr[i] * ((row[i] - mu) * is); });
    }
  });
  const std::vector<double> sumDy = channelTotals(d, rowDy), sumDyXhat = channelTotals(d, rowDyXhat);
  // dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), in fp32.
  forEachRowSpan(d, x.numel(), [&](const RowSpan& sp, SpanScratch& s) {
    const float* v = widen(x, sp, s.a);
    const float* gs = dySpan(sp, s);
    // gs may be s.out (fused): the results go to s.c, whose widened ReLU output is spent.
    float* out = cpu::outputChunk(dc, dx.rawData(), sp.offset(), s.c.data());
    for (std::int64_t r = 0; r < sp.count; ++r) {
      const std::int64_t ch = sp.channel(r, d.c), o = r * d.hw;
      const float k = g[ch] * inv[ch], mu = mean[ch], is = inv[ch];
      const float meanDy = float(sumDy[ch] / m), meanDyXhat = float(sumDyXhat[ch] / m);
      for (std::int64_t i = 0; i < d.hw; ++i)
        out[o + i] = k * (gs[o + i] - meanDy - (v[o + i] - mu) * is * meanDyXhat);
    }
    cpu::narrowChunk(dc, dx.rawData(), sp.offset(), sp.values(), out);
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
  if (checks::sameFormat({&dy, &x, &dx}, "batch_norm backward") == MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    batchNormBackward(s.in(dy), s.in(x), gamma, saveMean, saveInvStd, s.out(dx), dgamma, dbeta);
    return s.finish();
  }
  bnBackward(*this, dy, nullptr, x, gamma, saveMean, saveInvStd, dx, dgamma, dbeta);
}

void CpuBackend::batchNormReluBackward(const Tensor& dy, const Tensor& reluOut, const Tensor& x,
                                       const Tensor& gamma, const Tensor& saveMean,
                                       const Tensor& saveInvStd, Tensor& dx, Tensor& dgamma,
                                       Tensor& dbeta) {
  if (checks::sameFormat({&dy, &reluOut, &x, &dx}, "batch_norm backward") ==
      MemoryFormat::ChannelsLast) {
    cpu::NchwScratch s(*this);
    batchNormReluBackward(s.in(dy), s.in(reluOut), s.in(x), gamma, saveMean, saveInvStd,
                          s.out(dx), dgamma, dbeta);
    return s.finish();
  }
  bnBackward(*this, dy, &reluOut, x, gamma, saveMean, saveInvStd, dx, dgamma, dbeta);
}

}  // namespace amp
