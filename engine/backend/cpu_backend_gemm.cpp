// CPU backend: GEMM in a dtype. fp32 and bf16 go to oneDNN (fp32 accumulation, one rounding
// of the output); fp16 is emulated with the same numerics as tensor cores: the fp16 inputs are
// widened exactly to fp32, multiplied and summed in fp32, and the result rounded once to fp16.
#include <chrono>
#include <stdexcept>
#include <vector>

#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/onednn_matmul.h"

namespace amp {

namespace {

cpu::MatmulShape gemmShape(const Tensor& a, bool transA, const Tensor& b, bool transB,
                           const Tensor& c) {
  if (a.rank() != 2 || b.rank() != 2 || c.rank() != 2)
    throw std::invalid_argument("gemm: operands must be 2-D, got " + shapeString(a.shape()) +
                                ", " + shapeString(b.shape()) + ", " + shapeString(c.shape()));
  cpu::MatmulShape s;
  s.m = transA ? a.dim(1) : a.dim(0);
  s.k = transA ? a.dim(0) : a.dim(1);
  const std::int64_t kb = transB ? b.dim(1) : b.dim(0);
  s.n = transB ? b.dim(0) : b.dim(1);
  s.transA = transA;
  s.transB = transB;
  if (kb != s.k || c.dim(0) != s.m || c.dim(1) != s.n)
    throw std::invalid_argument("gemm: shapes do not chain: " + shapeString(a.shape()) +
                                (transA ? "^T" : "") + " x " + shapeString(b.shape()) +
                                (transB ? "^T" : "") + " -> " + shapeString(c.shape()));
  return s;
}

}  // namespace

void CpuBackend::gemm(const Tensor& a, bool transA, const Tensor& b, bool transB, Tensor& c,
                      const Tensor* bias) {
  const cpu::MatmulShape s = gemmShape(a, transA, b, transB, c);
  const DType in = a.dtype();
  if (b.dtype() != in || (bias && bias->dtype() != in))
    throw std::invalid_argument("gemm: inputs must share one dtype (autocast casts them first)");
  if (c.dtype() != in && c.dtype() != DType::F32)
    throw std::invalid_argument("gemm: output must be fp32 or the input dtype");
  if (bias && bias->numel() != s.n) throw std::invalid_argument("gemm: bias size mismatch");

  const auto t0 = std::chrono::steady_clock::now();
  if (in == DType::F32 || in == DType::BF16) {
    const auto mt = in == DType::F32 ? cpu::MatType::F32 : cpu::MatType::BF16;
    const auto ot = c.dtype() == DType::F32 ? cpu::MatType::F32 : cpu::MatType::BF16;
    cpu::matmul(mt, ot, s, a.rawData(), b.rawData(), bias ? bias->rawData() : nullptr,
                c.rawData());
  } else if (in == DType::F16) {
    // Widening fp16 -> fp32 is exact, so the fp32 GEMM sees exactly the fp16 values.
    Tensor a32 = cast(a, DType::F32, MemCategory::Workspace);
    Tensor b32 = cast(b, DType::F32, MemCategory::Workspace);
    Tensor bias32 = bias ? cast(*bias, DType::F32, MemCategory::Workspace) : Tensor();
    const void* biasPtr = bias ? bias32.rawData() : nullptr;
    if (c.dtype() == DType::F32) {
      cpu::matmul(cpu::MatType::F32, cpu::MatType::F32, s, a32.rawData(), b32.rawData(), biasPtr,
                  c.rawData());
    } else {
      Tensor c32 = empty(c.shape(), DType::F32, MemCategory::Workspace);
      cpu::matmul(cpu::MatType::F32, cpu::MatType::F32, s, a32.rawData(), b32.rawData(), biasPtr,
                  c32.rawData());
      castInto(c32, c);
    }
  } else {
    throw std::invalid_argument("gemm: unsupported dtype " + std::string(dtypeName(in)));
  }
  m_gemm.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m_gemm.flops += 2.0 * double(s.m) * double(s.n) * double(s.k);
  ++m_gemm.calls;
}

void CpuBackend::biasGrad(const Tensor& dy, Tensor& db) {
  const std::int64_t n = db.numel();
  if (dy.rank() != 2 || dy.dim(1) != n)
    throw std::invalid_argument("biasGrad: dy " + shapeString(dy.shape()) + " vs bias " +
                                shapeString(db.shape()));
  const std::int64_t m = dy.dim(0);
  std::vector<float> sums(static_cast<std::size_t>(n), 0.f);
  cpu::dispatchFloatCode(cpu::floatCode(dy), [&](auto tag) {
    using T = decltype(tag);
    const auto* p = dy.data<typename T::Storage>();
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t j = 0; j < n; ++j) sums[j] += T::load(p[r * n + j]);
  });
  cpu::dispatchFloatCode(cpu::floatCode(db), [&](auto tag) {
    using T = decltype(tag);
    auto* out = db.data<typename T::Storage>();
    for (std::int64_t j = 0; j < n; ++j) out[j] = T::store(sums[j]);
  });
}

}  // namespace amp
