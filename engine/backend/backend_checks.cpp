#include "engine/backend/backend_checks.h"

#include <stdexcept>
#include <string>

namespace amp::checks {

GemmDims gemm(const Tensor& a, bool transA, const Tensor& b, bool transB, const Tensor& c,
              const Tensor* bias) {
  if (a.rank() != 2 || b.rank() != 2 || c.rank() != 2)
    throw std::invalid_argument("gemm: operands must be 2-D, got " + shapeString(a.shape()) +
                                ", " + shapeString(b.shape()) + ", " + shapeString(c.shape()));
  GemmDims d;
  d.m = transA ? a.dim(1) : a.dim(0);
  d.k = transA ? a.dim(0) : a.dim(1);
  const std::int64_t kb = transB ? b.dim(1) : b.dim(0);
  d.n = transB ? b.dim(0) : b.dim(1);
  if (kb != d.k || c.dim(0) != d.m || c.dim(1) != d.n)
    throw std::invalid_argument("gemm: shapes do not chain: " + shapeString(a.shape()) +
                                (transA ? "^T" : "") + " x " + shapeString(b.shape()) +
                                (transB ? "^T" : "") + " -> " + shapeString(c.shape()));
  if (d.m <= 0 || d.n <= 0 || d.k <= 0)
    throw std::invalid_argument("matmul: empty shape: " + shapeString(a.shape()) + " x " +
                                shapeString(b.shape()));
  const DType in = a.dtype();
  if (b.dtype() != in || (bias && bias->dtype() != in))
    throw std::invalid_argument("gemm: inputs must share one dtype (autocast casts them first)");
  if (c.dtype() != in && c.dtype() != DType::F32)
    throw std::invalid_argument("gemm: output must be fp32 or the input dtype");
  if (bias && bias->numel() != d.n) throw std::invalid_argument("gemm: bias size mismatch");
  return d;
}

void requireF32(const Tensor& t, const char* what) {
  if (t.dtype() != DType::F32)
    throw std::invalid_argument(std::string(what) + " must be fp32 (autocast's fp32 list)");
}

void labelsMatch(const Tensor& logits, const Tensor& labels) {
  if (logits.rank() != 2 || labels.dtype() != DType::I32 || labels.numel() != logits.dim(0))
    throw std::invalid_argument("cross-entropy: logits " + shapeString(logits.shape()) +
                                " and labels " + shapeString(labels.shape()) + " do not match");
}

}  // namespace amp::checks
