// CPU backend: the attention's ops (backend.h, "transformers"): the causal softmax, the batched
// GEMMs of the heads, and the attention fused a matrix at a time, forward and backward. Each row
// is widened to fp32 once, computed in fp32 and rounded once into its destination, as the rest
// of the transformer ops (cpu_backend_transformer.cpp). The fused ops run the same per-row code
// as the separate ops, with the same roundings between them: the same bits
// (tests/unit/test_fused_transformer_ops.cpp). Every matrix is multiplied whole by one thread,
// so results never depend on the thread count.
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/common/activation_math.h"  // expApprox
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

// For the scope of a loop that gives each thread whole matrices: OpenMP's thread limit at 1, so
// that oneDNN, which reads it, never fans out inside the parallel region; restored after.
struct OneThreadPerMatrix {
  const int saved = omp_get_max_threads();
  OneThreadPerMatrix() { omp_set_num_threads(1); }
  ~OneThreadPerMatrix() { omp_set_num_threads(saved); }
  OneThreadPerMatrix(const OneThreadPerMatrix&) = delete;
  OneThreadPerMatrix& operator=(const OneThreadPerMatrix&) = delete;
};

// The end of a fused op's loop over matrices: a matrix's exception (kept: it must not leave an
// OpenMP loop) thrown now, else the products' work added to the GEMM counters.
void finishProducts(const std::exception_ptr& failure, GemmCounters& gemm, std::chrono::steady_clock::time_point t0,
                    double flops, std::int64_t calls) {
  if (failure) std::rethrow_exception(failure);
  gemm.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  gemm.flops += flops;
  gemm.calls += calls;
}

}  // namespace

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
    const OneThreadPerMatrix oneThread;
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
  const OneThreadPerMatrix oneThread;
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
  // The two products' work; the time includes the softmax between them.
  finishProducts(failure, m_gemm, t0, 4.0 * double(N) * double(T) * double(T) * double(D), 2 * N);
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
  const OneThreadPerMatrix oneThread;
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
  // The four products' work; the time includes the softmax backward between them.
  finishProducts(failure, m_gemm, t0, 8.0 * double(N) * double(T) * double(T) * double(D), 4 * N);
}

}  // namespace amp
