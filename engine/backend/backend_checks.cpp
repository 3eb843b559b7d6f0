#include "engine/backend/backend_checks.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace amp::checks {

const ConvGeometry& checkedGeometry(const ConvGeometry& g) {
  if (!g.valid()) throw std::invalid_argument("conv2d: invalid geometry");
  return g;
}

void requireNumel(const Tensor& t, const Shape& expected, const char* what) {
  if (!t.defined() || t.numel() != shapeNumel(expected))
    throw std::invalid_argument(std::string("conv2d: ") + what + " is " +
                                (t.defined() ? shapeString(t.shape()) : "undefined") +
                                ", expected " + shapeString(expected));
}

// Inputs must share one dtype (autocast casts them first); outputs are that dtype or fp32.
DType convInputDtype(std::initializer_list<const Tensor*> inputs,
                     std::initializer_list<const Tensor*> outputs) {
  const DType in = (*inputs.begin())->dtype();
  if (!(in == DType::F32 || in == DType::F16 || in == DType::BF16))
    throw std::invalid_argument("conv2d: unsupported dtype " + std::string(dtypeName(in)));
  for (const Tensor* t : inputs)
    if (t && t->dtype() != in)
      throw std::invalid_argument(
          "conv2d: inputs must share one dtype (autocast casts them first)");
  for (const Tensor* t : outputs)
    if (t && t->dtype() != in && t->dtype() != DType::F32)
      throw std::invalid_argument("conv2d: outputs must be fp32 or the input dtype");
  return in;
}

MemoryFormat sameFormat(std::initializer_list<const Tensor*> ts, const char* op) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (!t || !t->defined()) continue;
    if (!first) {
      first = t;
    } else if (t->format() != first->format()) {
      throw std::logic_error(std::string(op) + ": operands in different memory formats (" +
                             shapeString(first->shape()) + " " + memoryFormatName(first->format()) +
                             ", " + shapeString(t->shape()) + " " + memoryFormatName(t->format()) +
                             "): convert one first (Backend::toFormat)");
    }
  }
  return first ? first->format() : MemoryFormat::Contiguous;
}

void requireContiguous(const Tensor& t, const char* op, const char* what) {
  if (t.defined() && t.format() != MemoryFormat::Contiguous)
    throw std::logic_error(std::string(op) + ": the " + what + " " + shapeString(t.shape()) +
                           " must be contiguous, not " + memoryFormatName(t.format()));
}

std::size_t gatherRows(const Tensor& src, std::span<const std::int64_t> rows, const Tensor& dst) {
  sameFormat({&src, &dst}, "gather_rows");
  if (src.rank() < 1 || dst.rank() != src.rank() || src.dtype() != dst.dtype() ||
      dst.dim(0) != static_cast<std::int64_t>(rows.size()) ||
      !std::equal(src.shape().begin() + 1, src.shape().end(), dst.shape().begin() + 1))
    throw std::invalid_argument("gatherRows: " + std::to_string(rows.size()) + " rows of " +
                                shapeString(src.shape()) + " do not fit " + shapeString(dst.shape()) +
                                " (same dtype and row shape needed)");
  const std::int64_t count = src.dim(0);
  for (std::int64_t r : rows)
    if (r < 0 || r >= count)
      throw std::invalid_argument("gatherRows: row " + std::to_string(r) + " is outside the " +
                                  std::to_string(count) + " rows of " + shapeString(src.shape()));
  return count > 0 ? static_cast<std::size_t>(src.numel() / count) * dtypeSize(src.dtype()) : 0;
}

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

namespace {
bool isFloat(const Tensor& t) {
  return t.defined() &&
         (t.dtype() == DType::F32 || t.dtype() == DType::F16 || t.dtype() == DType::BF16);
}
}  // namespace

void add(const Tensor& a, const Tensor& b, const Tensor& y) {
  if (!isFloat(a) || !isFloat(b) || !isFloat(y))
    throw std::invalid_argument("add: expected floating-point tensors");
  if (a.numel() != b.numel() || a.numel() != y.numel())
    throw std::invalid_argument("add: shapes " + shapeString(a.shape()) + ", " +
                                shapeString(b.shape()) + " and " + shapeString(y.shape()) +
                                " differ");
  sameFormat({&a, &b, &y}, "add");
}

GlobalPoolDims globalAvgPool(const Tensor& x, const Tensor& y, const char* op) {
  if (!isFloat(x) || !isFloat(y))
    throw std::invalid_argument(std::string(op) + ": expected floating-point tensors");
  if (x.rank() != 4 || y.rank() != 2 || y.dim(0) != x.dim(0) || y.dim(1) != x.dim(1))
    throw std::invalid_argument(std::string(op) + ": expected x (N, C, H, W) and y (N, C), got " +
                                shapeString(x.shape()) + " and " + shapeString(y.shape()));
  if (x.dim(2) <= 0 || x.dim(3) <= 0)
    throw std::invalid_argument(std::string(op) + ": empty planes in " + shapeString(x.shape()));
  return {x.dim(0) * x.dim(1), x.dim(2) * x.dim(3)};
}

void poolGeometry(std::int64_t kernel, std::int64_t stride, std::int64_t padding, std::int64_t h,
                  std::int64_t w) {
  if (kernel <= 0 || stride <= 0 || padding < 0 || 2 * padding > kernel ||
      h + 2 * padding < kernel || w + 2 * padding < kernel)
    throw std::invalid_argument("max_pool2d: invalid geometry (kernel " + std::to_string(kernel) +
                                ", stride " + std::to_string(stride) + ", padding " +
                                std::to_string(padding) + " on " + std::to_string(h) + "x" +
                                std::to_string(w) + ")");
}

void convertFormatOperands(const Tensor& src, const Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.shape() != dst.shape())
    throw std::invalid_argument("convert format: " + shapeString(src.shape()) + " " +
                                std::string(dtypeName(src.dtype())) + " into " +
                                shapeString(dst.shape()) + " " + std::string(dtypeName(dst.dtype())) +
                                ": shapes and dtypes must match");
  if (src.rawData() == dst.rawData())
    throw std::invalid_argument("convert format: source and destination share their bytes");
}

}  // namespace amp::checks
