// CPU backend: the ops a GPT-style transformer adds (backend.h, "transformers"). Each row is
// widened to fp32 once, computed in fp32 and rounded once into its destination, so 16-bit inputs
// get fp32 statistics and sums, as PyTorch's kernels give them. Sums that become gradients run
// in a fixed order (rows in increasing index), so results never depend on the thread count.
// The fused ops (the attention's forward and backward a matrix at a time, the residual add with
// the LayerNorm after it) run the same per-row code as the separate ops, with the same roundings
// between them: the same bits (tests/unit/test_fused_transformer_ops.cpp).
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/common/activation_math.h"  // expApprox
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

// The causal softmax of one row (backend.h): s holds the row's first len scores widened, out
// receives T fp32 values (zeros past len) before their rounding to probs' dtype. Vectorised: the
// row's max in 8 lanes (exact, so any order gives the same max; NaN ignored as std::max ignores
// it), exp by expApprox (activation_math.h: within 2 ulp, branch-free), the sum of the
// exponentials in 8 lanes (lane l adds columns l, l+8, ... in order) added pairwise at the end.
// The same function serves the softmax op and the fused attention (the same bits).
constexpr int kLanes = 8;

inline float laneSum(const float* l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

void causalSoftmaxRow(int sc, const float* s, std::int64_t len, std::int64_t T, float scale,
                      float* out) {
  if (sc == 0) {
    for (std::int64_t j = 0; j < len; ++j) out[j] = s[j] * scale;  // causalScore in fp32
  } else {
    for (std::int64_t j = 0; j < len; ++j) out[j] = causalScore(sc, s[j], scale);
  }
  float lane[kLanes];
  std::fill_n(lane, kLanes, -std::numeric_limits<float>::infinity());
  std::int64_t j = 0;
  for (; j + kLanes <= len; j += kLanes)  // std::max as a bit select: it vectorises
    for (int l = 0; l < kLanes; ++l) lane[l] = selectf(lane[l] < out[j + l], out[j + l], lane[l]);
  for (int l = 0; j < len; ++j, ++l) lane[l] = std::max(lane[l], out[j]);
  float mx = lane[0];
  for (int l = 1; l < kLanes; ++l) mx = std::max(mx, lane[l]);
  for (j = 0; j < len; ++j) out[j] = expApprox(out[j] - mx);
  std::fill_n(lane, kLanes, 0.f);
  for (j = 0; j + kLanes <= len; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += out[j + l];
  for (int l = 0; j < len; ++j, ++l) lane[l] += out[j];
  const float sum = laneSum(lane);
  for (j = 0; j < len; ++j) out[j] = softmaxProb(out[j], sum);
  std::fill(out + len, out + T, 0.f);
}

// The softmax backward of one row: p and g hold the row's first len probabilities and their
// gradients widened; g is overwritten with dscores before the rounding to oc (zeros past len).
// The dot product in 8 lanes, as the forward's sum.
void causalSoftmaxBackwardRow(int oc, const float* p, float* g, std::int64_t len, std::int64_t T,
                              float scale) {
  float lane[kLanes] = {};
  std::int64_t j = 0;
  for (; j + kLanes <= len; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += p[j + l] * g[j + l];
  for (int l = 0; j < len; ++j, ++l) lane[l] += p[j] * g[j];
  const float dot = laneSum(lane);
  if (oc == 0) {
    for (j = 0; j < len; ++j) g[j] = softmaxInputGrad(p[j], g[j], dot) * scale;
  } else {
    for (j = 0; j < len; ++j) g[j] = causalScoreGrad(oc, p[j], g[j], dot, scale);
  }
  std::fill(g + len, g + T, 0.f);
}

}  // namespace

void CpuBackend::causalSoftmaxForward(const Tensor& scores, float scale, Tensor& probs) {
  const auto d = checks::causalSoftmax(scores, probs, "softmax");
  const int sc = floatCode(scores), pc = floatCode(probs);
  const std::int64_t rows = d.matrices * d.t;
  const int threads = cpu::loopThreads(rows, d.t);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> in(static_cast<std::size_t>(d.t)), v(in.size());
#pragma omp for
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t len = r % d.t + 1;  // row i sees columns 0..i
      const float* s = cpu::widenChunk(sc, scores.rawData(), r * d.t, len, in.data());
      causalSoftmaxRow(sc, s, len, d.t, scale, v.data());
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
      const float* pv = cpu::widenChunk(pc, probs.rawData(), r * d.t, len, p.data());
      readRow(dprobs, gc, r * d.t, len, g.data());
      causalSoftmaxBackwardRow(oc, pv, g.data(), len, d.t, scale);
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

void CpuBackend::causalAttentionForward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        float scale, Tensor& probs, Tensor* pv, Tensor& y) {
  const auto d = checks::gemmBatched(q, false, k, true, probs);  // q, k (N, T, D); probs (N, T, T)
  if (d.m != d.n || q.dtype() != k.dtype())
    throw std::invalid_argument("attention: q " + shapeString(q.shape()) + " and k " +
                                shapeString(k.shape()) + " must be one dtype and length");
  const Tensor& operand = pv ? *pv : probs;  // what the product reads: v's dtype
  checks::gemmBatched(operand, false, v, false, y);
  if (operand.dtype() != v.dtype() || y.dtype() != v.dtype() || (pv && pv->shape() != probs.shape()))
    throw std::invalid_argument(std::string("attention: the probabilities' ") +
                                (pv ? "copy" : "tensor") + " and y must be of v's dtype, " +
                                std::string(dtypeName(v.dtype())));
  const std::int64_t N = d.batch, T = d.m, D = d.k;
  const int qc = floatCode(q), pc = floatCode(probs), mc = floatCode(v);
  const cpu::MatmulShape scoresShape{T, T, D, false, true}, productShape{T, D, T, false, false};
  const auto t0 = std::chrono::steady_clock::now();
  // Per matrix, the unfused ops' steps with their roundings: q·kᵀ in fp32 (16-bit operands
  // widened exactly, as gemmBatched does), the scores rounded to q's dtype and widened again
  // (the scores tensor's values), the softmax rows (the same causalSoftmaxRow), rounded to probs'
  // dtype (the stored probabilities), converted to v's dtype (castInto: widened, rounded), the
  // product p·v in fp32 and its rounding to y's dtype. One thread per matrix, oneDNN on one
  // thread, the same primitives as gemmBatched's: the same bits for any thread count.
  const std::size_t td = std::size_t(T * D), tt = std::size_t(T * T);
  const int threads = cpu::loopThreads(N, T * T * D);
  const cpu::ScratchAccount scratch(
      m_memory, std::size_t(std::max(threads, 1)) * (4 * td + 2 * tt) * sizeof(float) +
                    cpu::matmulScratchBytes(cpu::ElemType::F32, cpu::ElemType::F32, scoresShape, false));
  struct RestoreLimit {
    int n;
    ~RestoreLimit() { omp_set_num_threads(n); }
  } restore{omp_get_max_threads()};
  omp_set_num_threads(1);
  std::exception_ptr failure;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> qs(td), ks(td), vs(td), ys(td), scores(tt), p(tt);
    std::vector<std::uint16_t> narrow(tt);
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < N; ++i) {
      try {
        const float* qf = cpu::widenChunk(qc, q.rawData(), i * T * D, T * D, qs.data());
        const float* kf = cpu::widenChunk(qc, k.rawData(), i * T * D, T * D, ks.data());
        cpu::matmul(cpu::ElemType::F32, cpu::ElemType::F32, scoresShape, qf, kf, nullptr, scores.data());
        if (qc != 0) {  // the scores tensor's values: rounded to q's dtype
          cpu::narrowChunk(qc, narrow.data(), 0, T * T, scores.data());
          cpu::widenChunk(qc, narrow.data(), 0, T * T, scores.data());
        }
        float* pr = cpu::outputChunk(pc, probs.rawData(), i * T * T, p.data());
        for (std::int64_t r = 0; r < T; ++r) causalSoftmaxRow(qc, scores.data() + r * T, r + 1, T, scale, pr + r * T);
        cpu::narrowChunk(pc, probs.rawData(), i * T * T, T * T, pr);
        const float* a = pr;  // the product's operand, widened
        if (pc != 0) a = cpu::widenChunk(pc, probs.rawData(), i * T * T, T * T, p.data());
        if (pv) {
          cpu::narrowChunk(mc, pv->rawData(), i * T * T, T * T, a);
          a = cpu::widenChunk(mc, pv->rawData(), i * T * T, T * T, p.data());
        }
        const float* vf = cpu::widenChunk(mc, v.rawData(), i * T * D, T * D, vs.data());
        float* yf = cpu::outputChunk(mc, y.rawData(), i * T * D, ys.data());
        cpu::matmul(cpu::ElemType::F32, cpu::ElemType::F32, productShape, a, vf, nullptr, yf);
        cpu::narrowChunk(mc, y.rawData(), i * T * D, T * D, yf);
      } catch (...) {
#pragma omp critical(amp_attention_failure)
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
  // The two products' work; the time includes the softmax between them.
  m_gemm.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m_gemm.flops += 4.0 * double(N) * double(T) * double(T) * double(D);
  m_gemm.calls += 2 * N;
}

void CpuBackend::causalAttentionBackward(const Tensor& dy, const Tensor& q, const Tensor& k,
                                         const Tensor& v, const Tensor& probs, const Tensor& p,
                                         float scale, Tensor& dq, Tensor& dk, Tensor& dv) {
  const auto d = checks::gemmBatched(dy, false, v, true, p);  // dy, v (N, T, D); p (N, T, T)
  checks::gemmBatched(p, true, dy, false, dv);
  checks::causalSoftmax(probs, p, "attention backward");
  for (const Tensor* t : {&q, &k, static_cast<const Tensor*>(&dq), static_cast<const Tensor*>(&dk)})
    if (t->shape() != dy.shape())
      throw std::invalid_argument("attention backward: q, k, dq and dk must be shaped as dy " +
                                  shapeString(dy.shape()) + ", got " + shapeString(t->shape()));
  if (p.dtype() != v.dtype() || dy.dtype() != v.dtype() || dv.dtype() != v.dtype() ||
      q.dtype() != k.dtype() || dq.dtype() != q.dtype() || dk.dtype() != q.dtype())
    throw std::invalid_argument("attention backward: dy, p and dv must be of v's dtype, dq and "
                                "dk of q's (and k's)");
  const std::int64_t N = d.batch, T = d.m, D = d.k;
  const int gc = floatCode(dy), sc = floatCode(q), pc = floatCode(probs);
  const cpu::MatmulShape dpShape{T, T, D, false, true}, dvShape{T, D, T, true, false},
      dqShape{T, D, T, false, false}, dkShape{T, D, T, true, false};
  const auto t0 = std::chrono::steady_clock::now();
  // Per matrix, gemmBatched's and causalSoftmaxBackward's steps with their roundings: dp in
  // fp32 rounded to v's dtype (the dp tensor's values), dv, the softmax backward's rows (the
  // same causalSoftmaxBackwardRow) rounded to q's dtype (the ds tensor's values), dq and dk.
  const std::size_t td = std::size_t(T * D), tt = std::size_t(T * T);
  const int threads = cpu::loopThreads(N, T * T * D);
  const cpu::ScratchAccount scratch(
      m_memory, std::size_t(std::max(threads, 1)) * (5 * td + 2 * tt + T) * sizeof(float) +
                    cpu::matmulScratchBytes(cpu::ElemType::F32, cpu::ElemType::F32, dpShape, false));
  struct RestoreLimit {
    int n;
    ~RestoreLimit() { omp_set_num_threads(n); }
  } restore{omp_get_max_threads()};
  omp_set_num_threads(1);
  std::exception_ptr failure;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> gs(td), vs(td), qs(td), ks(td), out(td), ps(tt), grad(tt), row(static_cast<std::size_t>(T));
    std::vector<std::uint16_t> narrow(tt);
    auto roundThrough = [&](int code, float* m, std::int64_t n) {  // a 16-bit tensor's values
      if (code == 0) return;
      cpu::narrowChunk(code, narrow.data(), 0, n, m);
      cpu::widenChunk(code, narrow.data(), 0, n, m);
    };
    auto product = [&](const cpu::MatmulShape& s, const float* a, const float* b, Tensor& c, std::int64_t i) {
      const int cc = floatCode(c);
      float* cf = cpu::outputChunk(cc, c.rawData(), i * T * D, out.data());
      cpu::matmul(cpu::ElemType::F32, cpu::ElemType::F32, s, a, b, nullptr, cf);
      cpu::narrowChunk(cc, c.rawData(), i * T * D, T * D, cf);
    };
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < N; ++i) {
      try {
        const float* g = cpu::widenChunk(gc, dy.rawData(), i * T * D, T * D, gs.data());
        const float* vf = cpu::widenChunk(gc, v.rawData(), i * T * D, T * D, vs.data());
        const float* pf = cpu::widenChunk(gc, p.rawData(), i * T * T, T * T, ps.data());
        cpu::matmul(cpu::ElemType::F32, cpu::ElemType::F32, dpShape, g, vf, nullptr, grad.data());
        roundThrough(gc, grad.data(), T * T);
        product(dvShape, pf, g, dv, i);
        for (std::int64_t r = 0; r < T; ++r) {
          const float* pr = cpu::widenChunk(pc, probs.rawData(), i * T * T + r * T, r + 1, row.data());
          causalSoftmaxBackwardRow(sc, pr, grad.data() + r * T, r + 1, T, scale);
        }
        roundThrough(sc, grad.data(), T * T);
        const float* qf = cpu::widenChunk(sc, q.rawData(), i * T * D, T * D, qs.data());
        const float* kf = cpu::widenChunk(sc, k.rawData(), i * T * D, T * D, ks.data());
        product(dqShape, grad.data(), kf, dq, i);
        product(dkShape, grad.data(), qf, dk, i);
      } catch (...) {
#pragma omp critical(amp_attention_failure)
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
  // The four products' work; the time includes the softmax backward between them.
  m_gemm.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m_gemm.flops += 8.0 * double(N) * double(T) * double(T) * double(D);
  m_gemm.calls += 4 * N;
}

}  // namespace amp
