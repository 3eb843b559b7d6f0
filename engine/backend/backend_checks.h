// Argument checks every backend makes in front of its kernels, written once so that the CPU and
// the CUDA backend refuse the same inputs with the same one-line messages.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>

#include "engine/core/tensor.h"
#include "kernels/common/conv_geometry.h"

namespace amp::checks {

struct GemmDims {
  std::int64_t m = 0, n = 0, k = 0;
};

// c (M,N) = op(a) (M,K) · op(b) (K,N) [+ bias (N)]: 2-D operands whose shapes chain, inputs (and
// bias) of one dtype, an output of that dtype or fp32, a bias of N elements. Empty M, N or K are
// refused here too (oneDNN refuses them, so the GPU does as well). Throws invalid_argument.
GemmDims gemm(const Tensor& a, bool transA, const Tensor& b, bool transB, const Tensor& c,
              const Tensor* bias);

// Convolutions: a valid geometry ("conv2d: invalid geometry"); a tensor of the expected element
// count (`what` names it: "input", "weight gradient", ...); inputs of one float dtype and outputs
// of that dtype or fp32, returning the inputs' dtype. Null entries are skipped.
const ConvGeometry& checkedGeometry(const ConvGeometry& g);
void requireNumel(const Tensor& t, const Shape& expected, const char* what);
DType convInputDtype(std::initializer_list<const Tensor*> inputs,
                     std::initializer_list<const Tensor*> outputs);

// Memory formats (engine/core/tensor.h): the operands of one op that must share a format (its
// activations: same-shape inputs and outputs), else std::logic_error "<op>: operands in different
// memory formats (...)". Null and undefined entries are skipped. Returns the common format
// (Contiguous when nothing was checked).
MemoryFormat sameFormat(std::initializer_list<const Tensor*> ts, const char* op);
// A tensor that must be Contiguous (a weight, a per-channel or 2-D operand), else logic_error.
void requireContiguous(const Tensor& t, const char* op, const char* what);
// convertFormatInto's operands: one shape and dtype, separate bytes.
void convertFormatOperands(const Tensor& src, const Tensor& dst);

// gatherRows: src and dst of one dtype, dst (rows.size(), src's row shape), every row index in
// [0, src rows). Returns the bytes of one row.
std::size_t gatherRows(const Tensor& src, std::span<const std::int64_t> rows, const Tensor& dst);

// add: three float tensors of one element count (their dtypes may differ: type promotion) and
// one memory format.
void add(const Tensor& a, const Tensor& b, const Tensor& y);

// Global average pooling: x (N, C, H, W) and y (N, C) in float dtypes (any mix); returns the
// planes (N * C) and the elements of each (H * W). `op` names the op in the message.
struct GlobalPoolDims {
  std::int64_t planes = 0, planeSize = 0;
};
GlobalPoolDims globalAvgPool(const Tensor& x, const Tensor& y, const char* op);

// Max pooling: a window and stride > 0, padding from 0 to half the window (PyTorch's rule), and
// a window that fits the padded input. Throws "max_pool2d: invalid geometry (...)".
void poolGeometry(std::int64_t kernel, std::int64_t stride, std::int64_t padding, std::int64_t h,
                  std::int64_t w);

// Losses take fp32 targets and write fp32 probabilities (autocast's fp32 list).
void requireF32(const Tensor& t, const char* what);
// Logits (M, C) with M int32 labels.
void labelsMatch(const Tensor& logits, const Tensor& labels);

// ---- transformer ops (backend_checks_transformer.cpp) ------------------------------------
struct EmbeddingDims {
  std::int64_t rows = 0, vocab = 0, width = 0, positions = 0;  // M, V, C, wpe rows
};
// tokens (M) I32, wte (V, C), wpe (>= T, C), y (M, C) float; T > 0 divides M.
EmbeddingDims embedding(const Tensor& tokens, const Tensor& wte, const Tensor& wpe,
                        std::int64_t T, const Tensor& y);
struct RowDims {
  std::int64_t rows = 0, width = 0;  // M, C
};
// x and y (M, C), gamma and beta (C) float, mean and rstd (M) fp32. `op` names the op.
RowDims layerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                  const Tensor& mean, const Tensor& rstd, const char* op);
struct SoftmaxDims {
  std::int64_t matrices = 0, t = 0;  // N, T
};
// a and b (N, T, T) float.
SoftmaxDims causalSoftmax(const Tensor& a, const Tensor& b, const char* op);
struct HeadDims {
  std::int64_t batch = 0, t = 0, heads = 0, headDim = 0, parts = 0;  // B, T, H, D, P
};
// rows (B*T, P*H*D) and heads (B*H, T, D) float, 0 <= part < P.
HeadDims heads(const Tensor& rows, const Tensor& perHead, std::int64_t heads, int part,
               const char* op);
struct BatchedGemmDims {
  std::int64_t batch = 0, m = 0, n = 0, k = 0;
};
// Rank-3 a, b, c of one batch size whose matrices chain as gemm's; dtypes as gemm's.
BatchedGemmDims gemmBatched(const Tensor& a, bool transA, const Tensor& b, bool transB,
                            const Tensor& c);

}  // namespace amp::checks
