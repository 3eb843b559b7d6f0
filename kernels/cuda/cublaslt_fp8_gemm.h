// Per-tensor-scaled fp8 GEMMs on the fp8 tensor cores (sm_89 / sm_90) through cuBLASLt:
//   c (m, n) = (1 / scaleA) (1 / scaleB) . a (m, k) . b (n, k)^T
// with a and b fp8 codes (E4M3 or E5M2, not both E5M2: cuBLASLt has no such kernel), both
// K-contiguous ("TN", the only layout cuBLASLt's fp8 takes: the caller transposes copies with
// launchTransposeBytes), the dequantisation factors passed as device pointers (cuBLASLt's A/B
// scale pointers, so the scales never come back to the host), fp32 accumulation, an fp32 or
// bf16 output. Fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM: the tensor cores' partial sums
// are promoted to fp32 less often) is the caller's choice per GEMM: Transformer Engine uses it
// for the forward GEMM only, and the backward GEMMs keep the full promotion. No bias here: the
// caller adds it (a bias epilogue for fp8 wants a bf16 bias). One handle and workspace, made on
// first use; plans cached per shape. No CUDA types in this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/common/minifloat.h"
#include "kernels/cuda/cuda_kernels.h"

namespace amp::cuda {

struct Fp8GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  MiniFormat aFormat = MiniFormat::E4M3, bFormat = MiniFormat::E4M3;
  int outCode = 0;         // 0 fp32, 2 bf16
  bool fastAccum = false;  // the forward GEMM's choice (see above)
  std::string text() const;  // "(m x k) e4m3 . (n x k)^T e5m2 -> bf16 (fast accumulation)"
};

// Whether cuBLASLt can take this problem at all: E4M3/E5M2 operands other than E5M2 x E5M2,
// an fp32 or bf16 output, and m, n, k multiples of 16 (the 16-byte alignment of every leading
// dimension and pointer offset its fp8 kernels require). Otherwise the caller falls back.
bool fp8GemmSupported(const Fp8GemmShape& s);

class CublasLtFp8Gemm {
 public:
  CublasLtFp8Gemm();  // the handle and workspace on the current device; throws if unusable
  ~CublasLtFp8Gemm();
  CublasLtFp8Gemm(const CublasLtFp8Gemm&) = delete;
  CublasLtFp8Gemm& operator=(const CublasLtFp8Gemm&) = delete;

  // invScaleA / invScaleB: device pointers to one fp32 each (1 / scale of a and of b).
  void run(const Fp8GemmShape& shape, const std::uint8_t* a, const float* invScaleA, const std::uint8_t* b,
           const float* invScaleB, void* c, Stream s);
  std::size_t workspaceBytes() const { return m_workspaceBytes; }

 private:
  struct Plan;
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int, int, bool>;
  Plan& planFor(const Fp8GemmShape& shape);

  void* m_handle = nullptr;
  void* m_workspace = nullptr;
  std::size_t m_workspaceBytes = 0;
  std::map<Key, std::unique_ptr<Plan>> m_plans;
};

}  // namespace amp::cuda
