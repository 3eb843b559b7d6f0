// CPU backend: the ops a GPT-style transformer adds (backend.h, "transformers"). Each row is
// widened to fp32 once, computed in fp32 and rounded once into its destination, so 16-bit inputs
// get fp32 statistics and sums, as PyTorch's kernels give them. Sums that become gradients run
// in a fixed order (rows in increasing index), so results never depend on the thread count.
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <exception>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/common/bias_grad_order.h"
#include "kernels/common/transformer_math.h"
#include "kernels/cpu/chunked.h"
#include "kernels/cpu/onednn_matmul.h"

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

void CpuBackend::layerNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                  float eps, Tensor& y, Tensor& mean, Tensor& rstd) {
  const auto d = checks::layerNorm(x, gamma, beta, y, mean, rstd, "layer_norm");
  const std::vector<float> g = widenAll(gamma), b = widenAll(beta);
  const int xc = floatCode(x), yc = floatCode(y);
  float* mu = mean.data<float>();
  float* rs = rstd.data<float>();
  const auto n = static_cast<float>(d.width);
  const int threads = cpu::loopThreads(d.rows, d.width);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> v(static_cast<std::size_t>(d.width));
#pragma omp for
    for (std::int64_t m = 0; m < d.rows; ++m) {
      readRow(x, xc, m * d.width, d.width, v.data());
      // Two passes (mean, then squared deviations): no cancellation on rows far from zero.
      float sum = 0.f;
      for (float e : v) sum += e;
      const float mm = sum / n;
      float sq = 0.f;
      for (float e : v) sq += (e - mm) * (e - mm);
      const float r = 1.f / std::sqrt(sq / n + eps);
      mu[m] = mm;
      rs[m] = r;
      for (std::int64_t c = 0; c < d.width; ++c)
        v[c] = layerNormOutput(layerNormXhat(v[c], mm, r), g[c], b[c]);
      cpu::narrowChunk(yc, y.rawData(), m * d.width, d.width, v.data());
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

void CpuBackend::causalSoftmaxForward(const Tensor& scores, float scale, Tensor& probs) {
  const auto d = checks::causalSoftmax(scores, probs, "softmax");
  const int sc = floatCode(scores), pc = floatCode(probs);
  const std::int64_t rows = d.matrices * d.t;
  const int threads = cpu::loopThreads(rows, d.t);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> v(static_cast<std::size_t>(d.t));
#pragma omp for
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t i = r % d.t, len = i + 1;  // row i sees columns 0..i
      readRow(scores, sc, r * d.t, len, v.data());
      float mx = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = 0; j < len; ++j) {
        v[j] = causalScore(sc, v[j], scale);
        mx = std::max(mx, v[j]);
      }
      float sum = 0.f;
      for (std::int64_t j = 0; j < len; ++j) {
        v[j] = std::exp(v[j] - mx);
        sum += v[j];
      }
      for (std::int64_t j = 0; j < len; ++j) v[j] /= sum;
      std::fill(v.begin() + len, v.end(), 0.f);
      cpu::narrowChunk(pc, probs.rawData(), r * d.t, d.t, v.data());
    }
  }
}

void CpuBackend::causalSoftmaxBackward(const Tensor& probs, const Tensor& dprobs, float scale,
                                       Tensor& dscores) {
  const auto d = checks::causalSoftmax(probs, dprobs, "softmax backward");
  checks::causalSoftmax(probs, dscores, "softmax backward");
  const int pc = floatCode(probs), gc = floatCode(dprobs), oc = floatCode(dscores);
  const std::int64_t rows = d.matrices * d.t;
  const int threads = cpu::loopThreads(rows, d.t);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> p(static_cast<std::size_t>(d.t)), g(p.size());
#pragma omp for
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t len = r % d.t + 1;
      readRow(probs, pc, r * d.t, len, p.data());
      readRow(dprobs, gc, r * d.t, len, g.data());
      float dot = 0.f;
      for (std::int64_t j = 0; j < len; ++j) dot += p[j] * g[j];
      for (std::int64_t j = 0; j < len; ++j)
        g[j] = causalScoreGrad(oc, p[j], g[j], dot, scale);
      std::fill(g.begin() + len, g.end(), 0.f);
      cpu::narrowChunk(oc, dscores.rawData(), r * d.t, d.t, g.data());
    }
  }
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
      const std::int64_t head = q * d.headDim;
      readRow(src, sc, split ? row : head, d.headDim, v.data());
      cpu::narrowChunk(dc, dst.rawData(), split ? head : row, d.headDim, v.data());
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

void CpuBackend::gemmBatched(const Tensor& a, bool transA, const Tensor& b, bool transB,
                             Tensor& c) {
  const auto d = checks::gemmBatched(a, transA, b, transB, c);
  const cpu::MatmulShape s{d.m, d.n, d.k, transA, transB};
  const auto t0 = std::chrono::steady_clock::now();
  // Attention's matrices are small (T x head width) and many: per-matrix 16-bit GEMMs paid
  // oneDNN's per-call conversions or its slow small-matrix bf16 kernels (12 s a step against
  // 0.4 s in fp32). 16-bit operands are widened once, all matrices run as fp32 GEMMs and the
  // results are rounded once: the emulation's numerics (exact inputs, fp32 sums, one rounding).
  const bool narrow = a.dtype() != DType::F32;
  std::vector<float> af, bf, cf;
  const float* av = a.data<float>();
  const float* bv = b.data<float>();
  if (narrow) {
    af.resize(static_cast<std::size_t>(a.numel()));
    bf.resize(static_cast<std::size_t>(b.numel()));
    readRow(a, floatCode(a), 0, a.numel(), af.data());
    readRow(b, floatCode(b), 0, b.numel(), bf.data());
    av = af.data();
    bv = bf.data();
  }
  const bool outF32 = c.dtype() == DType::F32;
  if (!outF32) cf.resize(static_cast<std::size_t>(c.numel()));
  float* cv = outF32 ? c.data<float>() : cf.data();
  const cpu::ScratchAccount scratch(
      m_memory, (af.size() + bf.size() + cf.size()) * sizeof(float) +
                    cpu::matmulScratchBytes(cpu::ElemType::F32, cpu::ElemType::F32, s, false));
  // The matrices are shared between the threads, each multiplied whole by one thread (oneDNN on
  // a single thread: its limit is 1 here and it never fans out inside a parallel region): one
  // fork and join for all of them instead of one per matrix (a GPT step has some 800 of these
  // small GEMMs, and on a busy machine every join can wait a scheduler slice for a descheduled
  // thread), and the same bits for any number of threads (no K split).
  {
    const int threads = cpu::loopThreads(d.batch, s.m * s.n * s.k);
    struct RestoreLimit {
      int n;
      ~RestoreLimit() { omp_set_num_threads(n); }
    } restore{omp_get_max_threads()};
    omp_set_num_threads(1);
    std::exception_ptr failure;  // an exception must not leave an OpenMP loop: kept, rethrown after
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (std::int64_t i = 0; i < d.batch; ++i) {
      try {
        cpu::matmul(cpu::ElemType::F32, cpu::ElemType::F32, s, av + i * d.m * d.k, bv + i * d.k * d.n,
                    nullptr, cv + i * d.m * d.n);
      } catch (...) {
#pragma omp critical(amp_gemm_batched_failure)
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
  }
  if (!outF32) cpu::narrowChunk(floatCode(c), c.rawData(), 0, c.numel(), cf.data());
  m_gemm.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m_gemm.flops += 2.0 * double(d.batch) * double(s.m) * double(s.n) * double(s.k);
  m_gemm.calls += d.batch;
}

}  // namespace amp
