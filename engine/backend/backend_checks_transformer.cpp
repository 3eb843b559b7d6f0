// Argument checks of the transformer ops (embedding, layer norm, causal softmax, attention heads,
// batched GEMM), shared by the CPU and the CUDA backend so both refuse the same inputs alike.
#include <stdexcept>
#include <string>

#include "engine/backend/backend_checks.h"

namespace amp::checks {

namespace {

bool floating(const Tensor& t) {
  return t.defined() &&
         (t.dtype() == DType::F32 || t.dtype() == DType::F16 || t.dtype() == DType::BF16);
}

[[noreturn]] void refuse(const char* op, const std::string& why) {
  throw std::invalid_argument(std::string(op) + ": " + why);
}

void requireFloat(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (!floating(*t)) refuse(op, "expected floating-point tensors");
}

}  // namespace

EmbeddingDims embedding(const Tensor& tokens, const Tensor& wte, const Tensor& wpe,
                        std::int64_t T, const Tensor& y) {
  const char* op = "embedding";
  if (!tokens.defined() || tokens.dtype() != DType::I32) refuse(op, "tokens must be int32");
  requireFloat(op, {&wte, &wpe, &y});
  if (wte.rank() != 2 || wpe.rank() != 2 || wpe.dim(1) != wte.dim(1))
    refuse(op, "tables " + shapeString(wte.shape()) + " and " + shapeString(wpe.shape()) +
                   " must be (rows, C) of one width");
  EmbeddingDims d{tokens.numel(), wte.dim(0), wte.dim(1), wpe.dim(0)};
  if (T <= 0 || d.rows % T != 0)
    refuse(op, std::to_string(d.rows) + " tokens are not whole sequences of " + std::to_string(T));
  if (T > d.positions)
    refuse(op, "context " + std::to_string(T) + " is longer than the " +
                   std::to_string(d.positions) + " position rows");
  if (y.numel() != d.rows * d.width)
    refuse(op, "output " + shapeString(y.shape()) + " is not (" + std::to_string(d.rows) + ", " +
                   std::to_string(d.width) + ")");
  return d;
}

RowDims layerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                  const Tensor& mean, const Tensor& rstd, const char* op) {
  requireFloat(op, {&x, &gamma, &beta, &y});
  if (x.rank() != 2) refuse(op, "expected x (M, C), got " + shapeString(x.shape()));
  const RowDims d{x.dim(0), x.dim(1)};
  if (d.width <= 0) refuse(op, "empty rows");
  if (gamma.numel() != d.width || beta.numel() != d.width)
    refuse(op, "weight and bias must have " + std::to_string(d.width) + " elements");
  if (y.numel() != x.numel()) refuse(op, "output " + shapeString(y.shape()) + " differs from x");
  if (mean.dtype() != DType::F32 || rstd.dtype() != DType::F32 || mean.numel() != d.rows ||
      rstd.numel() != d.rows)
    refuse(op, "mean and rstd must be fp32 with one value per row");
  return d;
}

SoftmaxDims causalSoftmax(const Tensor& a, const Tensor& b, const char* op) {
  requireFloat(op, {&a, &b});
  if (a.rank() != 3 || a.dim(1) != a.dim(2) || a.shape() != b.shape())
    refuse(op, "expected two (N, T, T) tensors, got " + shapeString(a.shape()) + " and " +
                   shapeString(b.shape()));
  return {a.dim(0), a.dim(1)};
}

HeadDims heads(const Tensor& rows, const Tensor& perHead, std::int64_t heads, int part,
               const char* op) {
  requireFloat(op, {&rows, &perHead});
  if (rows.rank() != 2 || perHead.rank() != 3 || heads <= 0 || perHead.dim(0) % heads != 0)
    refuse(op, "expected rows (B*T, P*C) and heads (B*H, T, D), got " + shapeString(rows.shape()) +
                   " and " + shapeString(perHead.shape()) + " for " + std::to_string(heads) +
                   " heads");
  HeadDims d;
  d.heads = heads;
  d.batch = perHead.dim(0) / heads;
  d.t = perHead.dim(1);
  d.headDim = perHead.dim(2);
  const std::int64_t c = heads * d.headDim;
  if (c <= 0 || rows.dim(0) != d.batch * d.t || rows.dim(1) % c != 0)
    refuse(op, "rows " + shapeString(rows.shape()) + " do not hold heads " +
                   shapeString(perHead.shape()));
  d.parts = rows.dim(1) / c;
  if (part < 0 || part >= d.parts)
    refuse(op, "part " + std::to_string(part) + " outside 0.." + std::to_string(d.parts - 1));
  return d;
}

BatchedGemmDims gemmBatched(const Tensor& a, bool transA, const Tensor& b, bool transB,
                            const Tensor& c) {
  if (a.rank() != 3 || b.rank() != 3 || c.rank() != 3 || a.dim(0) != b.dim(0) ||
      a.dim(0) != c.dim(0) || a.dim(0) <= 0)
    throw std::invalid_argument("bmm: operands must be 3-D with one batch size, got " +
                                shapeString(a.shape()) + ", " + shapeString(b.shape()) + ", " +
                                shapeString(c.shape()));
  BatchedGemmDims d;
  d.batch = a.dim(0);
  d.m = transA ? a.dim(2) : a.dim(1);
  d.k = transA ? a.dim(1) : a.dim(2);
  const std::int64_t kb = transB ? b.dim(2) : b.dim(1);
  d.n = transB ? b.dim(1) : b.dim(2);
  if (kb != d.k || c.dim(1) != d.m || c.dim(2) != d.n)
    throw std::invalid_argument("bmm: shapes do not chain: " + shapeString(a.shape()) +
                                (transA ? "^T" : "") + " x " + shapeString(b.shape()) +
                                (transB ? "^T" : "") + " -> " + shapeString(c.shape()));
  if (d.m <= 0 || d.n <= 0 || d.k <= 0) throw std::invalid_argument("bmm: empty matrices");
  const DType in = a.dtype();
  if (!floating(a) || b.dtype() != in)
    throw std::invalid_argument("bmm: inputs must share one float dtype (autocast casts them first)");
  if (c.dtype() != in && c.dtype() != DType::F32)
    throw std::invalid_argument("bmm: output must be fp32 or the input dtype");
  return d;
}

}  // namespace amp::checks
