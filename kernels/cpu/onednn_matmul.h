// Row-major GEMM through oneDNN, with primitives cached per shape (creating one costs far more
// than running it). fp32 and bf16 inputs; products and sums in fp32; output fp32 or bf16.
// bf16 runs natively (AMX / AVX512-BF16) where the CPU has it. No fp16: oneDNN 2.6 has no CPU
// f16 matmul, so callers emulate fp16 through the fp32 path.
#pragma once

#include <cstdint>
#include <string>

namespace amp::cpu {

enum class MatType : std::uint8_t { F32, BF16 };

struct MatmulShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;  // a stored (K,M) / b stored (N,K) when set
};

// c (M,N) = op(a) · op(b) [+ bias (N)]. a, b, bias of type `in`; c of type `out`.
void matmul(MatType in, MatType out, const MatmulShape& s, const void* a, const void* b,
            const void* bias, void* c);

}  // namespace amp::cpu
