// CPU backend: the ops a GPT-style transformer adds (backend.h, "transformers"). Each row is
// widened to fp32 once, computed in fp32 and rounded once into its destination, so 16-bit inputs
// get fp32 statistics and sums, as PyTorch's kernels give them. Sums that become gradients run
// in a fixed order (rows in increasing index), so results never depend on the thread count.
// The residual add fused with the LayerNorm after it runs the same per-row code as the separate
// ops, with the same roundings between them: the same bits (tests/unit/test_fused_transformer_ops.cpp).
// The causal softmax, the batched GEMMs and the fused attention are in cpu_backend_attention.cpp.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/common/bias_grad_order.h"
#include "kernels/common/transformer_math.h"
#include "kernels/cpu/chunked.h"

namespace amp {

using cpu::floatCode;

namespace {

// n values of a tensor from element `offset`, widened to fp32 into `out`.
void readRow(const Tensor& t, int code, std::int64_t offset, std::int64_t n, float* out) {
  const float* v = cpu::widenChunk(code, t.rawData(), offset, n, out);
  if (v != out) std::copy_n(v, n, out);
}

std::vector<float> widenAll(const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  readRow(t, floatCode(t), 0, t.numel(), out.data());
  return out;
}

}  // namespace

void CpuBackend::embeddingForward(const Tensor& tokens, const Tensor& wte, const Tensor& wpe,
                                  std::int64_t T, Tensor& y) {
  const auto d = checks::embedding(tokens, wte, wpe, T, y);
  const std::int32_t* tok = tokens.data<std::int32_t>();
  for (std::int64_t m = 0; m < d.rows; ++m)
    if (tok[m] < 0 || tok[m] >= d.vocab)
      throw std::invalid_argument("embedding: token " + std::to_string(tok[m]) +
                                  " outside the vocabulary of " + std::to_string(d.vocab));
  const int tc = floatCode(wte), pc = floatCode(wpe), yc = floatCode(y);
  const int threads = cpu::loopThreads(d.rows, d.width);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> a(static_cast<std::size_t>(d.width)), b(a.size());
#pragma omp for
    for (std::int64_t m = 0; m < d.rows; ++m) {
      readRow(wte, tc, std::int64_t(tok[m]) * d.width, d.width, a.data());
      readRow(wpe, pc, (m % T) * d.width, d.width, b.data());
      for (std::int64_t c = 0; c < d.width; ++c) a[c] += b[c];
      cpu::narrowChunk(yc, y.rawData(), m * d.width, d.width, a.data());
    }
  }
}

void CpuBackend::embeddingBackward(const Tensor& dy, const Tensor& tokens, std::int64_t T,
                                   Tensor& dwte, Tensor& dwpe) {
  const auto d = checks::embedding(tokens, dwte, dwpe, T, dy);
  const std::int32_t* tok = tokens.data<std::int32_t>();
  for (std::int64_t m = 0; m < d.rows; ++m)
    if (tok[m] < 0 || tok[m] >= d.vocab)
      throw std::invalid_argument("embedding backward: token " + std::to_string(tok[m]) +
                                  " outside the vocabulary of " + std::to_string(d.vocab));
  // fp32 accumulators, rows added in increasing m: every thread count gives the same sums.
  std::vector<float> gte(static_cast<std::size_t>(d.vocab * d.width), 0.f);
  std::vector<float> gpe(static_cast<std::size_t>(d.positions * d.width), 0.f);
  const int gc = floatCode(dy);
  std::vector<float> row(static_cast<std::size_t>(d.width));
  for (std::int64_t m = 0; m < d.rows; ++m) {
    readRow(dy, gc, m * d.width, d.width, row.data());
    float* e = gte.data() + std::int64_t(tok[m]) * d.width;
    float* p = gpe.data() + (m % T) * d.width;
    for (std::int64_t c = 0; c < d.width; ++c) {
      e[c] += row[c];
      p[c] += row[c];
    }
  }
  cpu::narrowChunk(floatCode(dwte), dwte.rawData(), 0, dwte.numel(), gte.data());
  cpu::narrowChunk(floatCode(dwpe), dwpe.rawData(), 0, dwpe.numel(), gpe.data());
}

namespace {

// One LayerNorm row (backend.h): v holds the row's C values widened and receives y before its
// rounding; mean and rstd as the op keeps them. Two passes (mean, then squared deviations): no
// cancellation on rows far from zero. layerNormForward and addLayerNormForward share it.
void layerNormRow(float* v, std::int64_t C, const float* g, const float* b, float eps, float& mean,
                  float& rstd) {
  const auto n = static_cast<float>(C);
  float sum = 0.f;
  for (std::int64_t c = 0; c < C; ++c) sum += v[c];
  const float mm = sum / n;
  float sq = 0.f;
  for (std::int64_t c = 0; c < C; ++c) sq += (v[c] - mm) * (v[c] - mm);
  const float r = 1.f / std::sqrt(sq / n + eps);
  mean = mm;
  rstd = r;
  for (std::int64_t c = 0; c < C; ++c) v[c] = layerNormOutput(layerNormXhat(v[c], mm, r), g[c], b[c]);
}

}  // namespace

void CpuBackend::layerNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                  float eps, Tensor& y, Tensor& mean, Tensor& rstd) {
  const auto d = checks::layerNorm(x, gamma, beta, y, mean, rstd, "layer_norm");
  const std::vector<float> g = widenAll(gamma), b = widenAll(beta);
  const int xc = floatCode(x), yc = floatCode(y);
  float* mu = mean.data<float>();
  float* rs = rstd.data<float>();
  const int threads = cpu::loopThreads(d.rows, d.width);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> v(static_cast<std::size_t>(d.width));
#pragma omp for
    for (std::int64_t m = 0; m < d.rows; ++m) {
      readRow(x, xc, m * d.width, d.width, v.data());
      layerNormRow(v.data(), d.width, g.data(), b.data(), eps, mu[m], rs[m]);
      cpu::narrowChunk(yc, y.rawData(), m * d.width, d.width, v.data());
    }
  }
}

void CpuBackend::addLayerNormForward(const Tensor& a, const Tensor& b, const Tensor& gamma,
                                     const Tensor& beta, float eps, Tensor& sum, Tensor& y,
                                     Tensor& mean, Tensor& rstd) {
  checks::add(a, b, sum);
  const auto d = checks::layerNorm(sum, gamma, beta, y, mean, rstd, "layer_norm");
  const std::vector<float> g = widenAll(gamma), be = widenAll(beta);
  const int ac = floatCode(a), bc = floatCode(b), sc = floatCode(sum), yc = floatCode(y);
  float* mu = mean.data<float>();
  float* rs = rstd.data<float>();
  const int threads = cpu::loopThreads(d.rows, d.width);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> va(static_cast<std::size_t>(d.width)), vb(va.size()), v(va.size());
#pragma omp for
    for (std::int64_t m = 0; m < d.rows; ++m) {
      const std::int64_t at = m * d.width;
      const float* pa = cpu::widenChunk(ac, a.rawData(), at, d.width, va.data());
      const float* pb = cpu::widenChunk(bc, b.rawData(), at, d.width, vb.data());
      for (std::int64_t c = 0; c < d.width; ++c) v[c] = pa[c] + pb[c];  // add's sum
      cpu::narrowChunk(sc, sum.rawData(), at, d.width, v.data());
      if (sc != 0) readRow(sum, sc, at, d.width, v.data());  // the stored sum, widened
      layerNormRow(v.data(), d.width, g.data(), be.data(), eps, mu[m], rs[m]);
      cpu::narrowChunk(yc, y.rawData(), at, d.width, v.data());
    }
  }
}

void CpuBackend::layerNormBackward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                   const Tensor& mean, const Tensor& rstd, Tensor& dx,
                                   Tensor& dgamma, Tensor& dbeta) {
  const auto d = checks::layerNorm(x, gamma, dgamma, dx, mean, rstd, "layer_norm backward");
  if (dy.numel() != x.numel() || dbeta.numel() != d.width)
    throw std::invalid_argument("layer_norm backward: dy " + shapeString(dy.shape()) +
                                " or the bias gradient does not match x " + shapeString(x.shape()));
  const std::vector<float> g = widenAll(gamma);
  const int xc = floatCode(x), gc = floatCode(dy), dc = floatCode(dx);
  const float* mu = mean.data<float>();
  const float* rs = rstd.data<float>();
  const auto n = static_cast<float>(d.width);
  const int threads = cpu::loopThreads(d.rows, d.width);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> xv(static_cast<std::size_t>(d.width)), gv(xv.size()), out(xv.size());
#pragma omp for
    for (std::int64_t m = 0; m < d.rows; ++m) {
      readRow(x, xc, m * d.width, d.width, xv.data());
      readRow(dy, gc, m * d.width, d.width, gv.data());
      float sumG = 0.f, sumGX = 0.f;
      for (std::int64_t c = 0; c < d.width; ++c) {
        xv[c] = (xv[c] - mu[m]) * rs[m];  // xhat
        gv[c] *= g[c];
        sumG += gv[c];
        sumGX += gv[c] * xv[c];
      }
      const float meanG = sumG / n, meanGX = sumGX / n;
      for (std::int64_t c = 0; c < d.width; ++c)
        out[c] = layerNormInputGrad(gv[c], xv[c], meanG, meanGX, rs[m]);
      cpu::narrowChunk(dc, dx.rawData(), m * d.width, d.width, out.data());
    }
  }
  // The weight's and bias' gradients: column sums over the rows in the blocked order of
  // kernels/common/bias_grad_order.h (each 32-row block's sums from 0 in row order, then the
  // block sums in order), which the CUDA backend shares: the same bits on both.
  std::vector<float> sg(static_cast<std::size_t>(d.width), 0.f), sb(sg.size(), 0.f);
  std::vector<float> pg(sg.size()), pb(sg.size());
  std::vector<float> xv(sg.size()), gv(sg.size());
  for (std::int64_t b = 0; b < biasGradRowBlocks(d.rows); ++b) {
    std::fill(pg.begin(), pg.end(), 0.f);
    std::fill(pb.begin(), pb.end(), 0.f);
    const std::int64_t r0 = b * kBiasGradRowBlock, r1 = std::min(d.rows, r0 + kBiasGradRowBlock);
    for (std::int64_t m = r0; m < r1; ++m) {
      readRow(x, xc, m * d.width, d.width, xv.data());
      readRow(dy, gc, m * d.width, d.width, gv.data());
      for (std::int64_t c = 0; c < d.width; ++c) {
        pg[c] += gv[c] * layerNormXhat(xv[c], mu[m], rs[m]);
        pb[c] += gv[c];
      }
    }
    for (std::int64_t c = 0; c < d.width; ++c) {
      sg[c] += pg[c];
      sb[c] += pb[c];
    }
  }
  cpu::narrowChunk(floatCode(dgamma), dgamma.rawData(), 0, d.width, sg.data());
  cpu::narrowChunk(floatCode(dbeta), dbeta.rawData(), 0, d.width, sb.data());
}

namespace {

// One head row of D values per (b, h, t) between the token rows and the per-head matrices:
// `split` reads the rows and writes the heads, else the other way round.
void copyHeads(const checks::HeadDims& d, int part, bool split, const Tensor& src, Tensor& dst) {
  const int sc = floatCode(src), dc = floatCode(dst);
  const std::int64_t width = d.parts * d.heads * d.headDim;
  const std::int64_t pieces = d.batch * d.heads * d.t;
  const int threads = cpu::loopThreads(pieces, d.headDim);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> v(static_cast<std::size_t>(d.headDim));
#pragma omp for
    for (std::int64_t q = 0; q < pieces; ++q) {  // q = (b*H + h)*T + t, the heads' row order
      const std::int64_t t = q % d.t, bh = q / d.t, b = bh / d.heads, h = bh % d.heads;
      const std::int64_t row = (b * d.t + t) * width + (part * d.heads + h) * d.headDim;
      const std::int64_t head = q * d.headDim, from = split ? row : head, to = split ? head : row;
      if (sc == dc) {  // the same dtype: a copy of the bytes
        const std::size_t size = dtypeSize(src.dtype());
        std::memcpy(static_cast<char*>(dst.rawData()) + to * size,
                    static_cast<const char*>(src.rawData()) + from * size, d.headDim * size);
        continue;
      }
      readRow(src, sc, from, d.headDim, v.data());
      cpu::narrowChunk(dc, dst.rawData(), to, d.headDim, v.data());
    }
  }
}

}  // namespace

void CpuBackend::splitHeads(const Tensor& x, std::int64_t heads, int part, Tensor& y) {
  const auto d = checks::heads(x, y, heads, part, "split_heads");
  copyHeads(d, part, /*split=*/true, x, y);
}

void CpuBackend::mergeHeads(const Tensor& x, std::int64_t heads, int part, Tensor& y) {
  const auto d = checks::heads(y, x, heads, part, "merge_heads");
  copyHeads(d, part, /*split=*/false, x, y);
}

}  // namespace amp
