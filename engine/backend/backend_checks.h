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

// gatherRows: src and dst of one dtype, dst (rows.size(), src's row shape), every row index in
// [0, src rows). Returns the bytes of one row.
std::size_t gatherRows(const Tensor& src, std::span<const std::int64_t> rows, const Tensor& dst);

// Losses take fp32 targets and write fp32 probabilities (autocast's fp32 list).
void requireF32(const Tensor& t, const char* what);
// Logits (M, C) with M int32 labels.
void labelsMatch(const Tensor& logits, const Tensor& labels);

}  // namespace amp::checks
