// CPU backend: GEMM in a dtype, through kernels/cpu/onednn_matmul: fp32 natively; bf16 natively
// where oneDNN has a bf16 matmul for this CPU; fp16, and bf16 elsewhere, emulated with the same
// numerics as tensor cores (16-bit inputs widened exactly to fp32, products and sums in fp32,
// the result rounded once to its dtype). The emulation's fp32 copies count as workspace.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/common/bias_grad_order.h"
#include "kernels/cpu/chunked.h"
#include "kernels/cpu/onednn_matmul.h"

namespace amp {

namespace {

cpu::ElemType elemType(DType d) {
  switch (d) {
    case DType::F32: return cpu::ElemType::F32;
    case DType::F16: return cpu::ElemType::F16;
    case DType::BF16: return cpu::ElemType::BF16;
    default: break;
  }
  throw std::invalid_argument("gemm: unsupported dtype " + std::string(dtypeName(d)));
}

}  // namespace

void CpuBackend::gemm(const Tensor& a, bool transA, const Tensor& b, bool transB, Tensor& c,
                      const Tensor* bias) {
  const checks::GemmDims d = checks::gemm(a, transA, b, transB, c, bias);
  const cpu::MatmulShape s{d.m, d.n, d.k, transA, transB};
  const DType in = a.dtype();
  if (m_gemmSplitK >= 2 && in == DType::F32 && c.dtype() == DType::F32 && d.k >= m_gemmSplitK)
    return gemmSplitK(a, transA, b, transB, c, bias);

  const cpu::ElemType inType = elemType(in), outType = elemType(c.dtype());
  const cpu::ScratchAccount scratch(m_memory,
                                    cpu::matmulScratchBytes(inType, outType, s, bias != nullptr));
  const auto t0 = std::chrono::steady_clock::now();
  cpu::matmul(inType, outType, s, a.rawData(), b.rawData(), bias ? bias->rawData() : nullptr,
              c.rawData());
  m_gemm.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m_gemm.flops += 2.0 * double(s.m) * double(s.n) * double(s.k);
  ++m_gemm.calls;
}

void CpuBackend::gemmSplitK(const Tensor& a, bool transA, const Tensor& b, bool transB, Tensor& c,
                            const Tensor* bias) {
  const checks::GemmDims d = checks::gemm(a, transA, b, transB, c, bias);
  const float* av = a.data<float>();
  const float* bv = b.data<float>();
  // One slice of K copied out untransposed: a's columns [p0, p1) (m x kh), b's rows (kh x n).
  auto slice = [&](std::int64_t p0, std::int64_t p1, const float* biasData, std::vector<float>& out) {
    const std::int64_t kh = p1 - p0;
    std::vector<float> ah(std::size_t(d.m * kh)), bh(std::size_t(kh * d.n));
    for (std::int64_t i = 0; i < d.m; ++i)
      for (std::int64_t p = 0; p < kh; ++p)
        ah[i * kh + p] = transA ? av[(p0 + p) * d.m + i] : av[i * d.k + p0 + p];
    for (std::int64_t p = 0; p < kh; ++p)
      for (std::int64_t j = 0; j < d.n; ++j)
        bh[p * d.n + j] = transB ? bv[j * d.k + p0 + p] : bv[(p0 + p) * d.n + j];
    out.assign(std::size_t(d.m * d.n), 0.f);
    cpu::matmul(cpu::ElemType::F32, cpu::ElemType::F32, {d.m, d.n, kh, false, false}, ah.data(),
                bh.data(), biasData, out.data());
  };
  const std::int64_t parts = m_gemmSplitK;
  std::vector<float> sum, part;
  for (std::int64_t s = 0; s < parts; ++s) {
    const std::int64_t p0 = d.k * s / parts, p1 = d.k * (s + 1) / parts;
    slice(p0, p1, s == 0 && bias ? bias->data<float>() : nullptr, s == 0 ? sum : part);
    if (s > 0)
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
  }
  std::copy(sum.begin(), sum.end(), c.data<float>());
  m_gemm.flops += 2.0 * double(d.m) * double(d.n) * double(d.k);
  ++m_gemm.calls;
}

void CpuBackend::biasGrad(const Tensor& dy, Tensor& db) {
  const std::int64_t n = db.numel();
  if (dy.rank() != 2 || dy.dim(1) != n)
    throw std::invalid_argument("biasGrad: dy " + shapeString(dy.shape()) + " vs bias " +
                                shapeString(db.shape()));
  const std::int64_t m = dy.dim(0);
  const int gc = cpu::floatCode(dy), bc = cpu::floatCode(db);
  // The blocked order of kernels/common/bias_grad_order.h (the CUDA kernel's too, so both give
  // the same bits): per column, blocks of kBiasGradRowBlock rows summed in order from 0, then
  // the block sums added in order. Columns are split across threads, so the result does not
  // depend on the thread count; 16-bit rows are widened a block at a time with the vectorised
  // converters, and the sums stay in fp32 (autocast's fp32 accumulation).
  constexpr std::int64_t kBlock = 256;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  const int threads = cpu::loopThreads(blocks, m * kBlock);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kBlock, len = std::min(kBlock, n - j0);
    float sums[kBlock] = {}, part[kBlock], row[kBlock];
    for (std::int64_t r0 = 0; r0 < m; r0 += kBiasGradRowBlock) {
      const std::int64_t r1 = std::min(m, r0 + kBiasGradRowBlock);
      std::fill(part, part + len, 0.f);
      for (std::int64_t r = r0; r < r1; ++r) {
        const float* v = cpu::widenChunk(gc, dy.rawData(), r * n + j0, len, row);
        for (std::int64_t j = 0; j < len; ++j) part[j] += v[j];
      }
      for (std::int64_t j = 0; j < len; ++j) sums[j] += part[j];
    }
    cpu::narrowChunk(bc, db.rawData(), j0, len, sums);
  }
}

}  // namespace amp
