// Row-major GEMM through oneDNN, with primitives cached per shape and thread (creating one costs
// far more than running it). Products and sums in fp32, one rounding of the output to its type.
//
// fp32 runs natively. bf16 runs natively where oneDNN has a bf16 matmul for this CPU (AMX,
// AVX512-BF16, or oneDNN's own AVX-512 code); where it refuses (AVX2-only CPUs), and always for
// fp16 (oneDNN 2.6 has no CPU f16 matmul), the 16-bit operands are widened exactly to fp32 in a
// per-thread scratch arena, an fp32 matmul runs, and a 16-bit output is rounded once (RNE): the
// numerics of a tensor-core GEMM with fp32 accumulation. See onednn_support.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cpu/onednn_support.h"

namespace amp::cpu {

struct MatmulShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;  // a stored (K,M) / b stored (N,K) when set
};

// c (M,N) = op(a) · op(b) [+ bias (N)]. a, b, bias of type `in`; c of type `out` (`in` or F32).
// oneDNN failures come out as ComputeLibraryError naming the op, types, shape and CPU ISA.
void matmul(ElemType in, ElemType out, const MatmulShape& s, const void* a, const void* b,
            const void* bias, void* c);

// Bytes of the per-thread scratch arena one call uses (fp32 copies of 16-bit operands when the
// call is emulated; 0 for native calls), so the backend can count them as workspace.
std::size_t matmulScratchBytes(ElemType in, ElemType out, const MatmulShape& s, bool bias);

// Whether this call computes in its own 16-bit type (false: widened to fp32, or fp32 itself),
// and oneDNN's implementation name, e.g. "brg:avx512_core_amx" or "gemm:jit (bf16 emulated:
// fp32 math on bf16 values)".
bool matmulIsNative16(ElemType in, ElemType out, const MatmulShape& s, bool bias);
std::string matmulImplementation(ElemType in, ElemType out, const MatmulShape& s, bool bias);

// "a (256x1024) x b^T (1024x1024) -> c (256x1024), bf16 in, fp32 out": for messages.
std::string describeMatmul(ElemType in, ElemType out, const MatmulShape& s);

}  // namespace amp::cpu
