// fp8 / fp4 GEMMs on the tensor cores through cuBLASLt:
//   c (m, n) = alpha . a (m, k) . b (n, k)^T
// with a and b K-contiguous ("TN", the only layout cuBLASLt's fp8 takes: the caller transposes
// copies with launchTransposeBytes / launchTransposeNibbles), fp32 accumulation, an fp32 or bf16
// output, scaled one of three ways (Fp8GemmShape::scaling, kernels/cuda/fp8_gemm_route.h):
//   PerTensor  E4M3 / E5M2 codes (not both E5M2: cuBLASLt has no such kernel), sm_89 / sm_90 and
//              up; scaleA / scaleB point to one fp32 each, the dequantisation factors 1 / scale
//              (cuBLASLt's A/B scale pointers, so the scales never come back to the host).
//   Mxfp8      E4M3 / E5M2 codes with an E8M0 scale per 32 values along K, sm_100 and up:
//              scaleA / scaleB point to the block scales in cuBLASLt's 128x4 tiles
//              (launchTileBlockScales), scale modes VEC32_UE8M0.
//   Nvfp4      E2M1 codes two to a byte with an E4M3 scale per 16 along K (VEC16_UE4M3), the
//              same tiles; the per-tensor scales go into alpha = 1 / (S_a S_b).
// Fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM: the tensor cores' partial sums promoted to
// fp32 less often) is the caller's choice per per-tensor GEMM: Transformer Engine uses it for the
// forward GEMM only, the backward GEMMs keep the full promotion; the block-scaled GEMMs never set
// it. No bias here: the caller adds it (a bias epilogue for fp8 wants a bf16 bias).
//
// D's amax: cuBLASLt writes CUBLASLT_MATMUL_DESC_AMAX_D_POINTER only when D itself is fp8
// (E4M3 / E5M2; "computing absolute maximum of D is currently supported only for FP8 Matmul when
// the output data type is also FP8", cuBLAS 12.4 Update 1 release notes) and refuses the pointer
// otherwise. These GEMMs write fp32 or bf16, so the CUDA backend takes D's amax with its own amax
// kernel over the output (CudaBackend::gemmQuantizedWith); cublasLtWritesAmaxD says which.
//
// One handle and workspace, made on first use; plans cached per shape. No CUDA types in this
// header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/common/minifloat.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/fp8_gemm_route.h"

namespace amp::cuda {

struct Fp8GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  MiniFormat aFormat = MiniFormat::E4M3, bFormat = MiniFormat::E4M3;
  int outCode = 0;         // 0 fp32, 2 bf16
  bool fastAccum = false;  // the forward GEMM's choice (see above); PerTensor only
  Fp8GemmScaling scaling = Fp8GemmScaling::PerTensor;
  // "(m x k) e4m3 . (n x k)^T e5m2 -> bf16 (fast accumulation)", "... mxfp8 (VEC32_UE8M0)"
  std::string text() const;
};

// Whether cuBLASLt computes D's amax for an output of this kind (outCode as Fp8GemmShape's, or
// 3 / 4 for an fp8 E4M3 / E5M2 D): only for an fp8 D (see above).
constexpr bool cublasLtWritesAmaxD(int outCode) { return outCode == 3 || outCode == 4; }

// Whether cuBLASLt can take this problem at all. PerTensor: E4M3/E5M2 operands other than E5M2 x
// E5M2, an fp32 or bf16 output, and m, n, k multiples of 16 (the 16-byte alignment of every
// leading dimension and pointer offset its fp8 kernels require). Mxfp8: the same formats, k a
// multiple of 32; Nvfp4: E2M1 operands, k a multiple of 32 (blockGemmShapeOk). Otherwise the
// caller falls back.
bool fp8GemmSupported(const Fp8GemmShape& s);

class CublasLtFp8Gemm {
 public:
  CublasLtFp8Gemm();  // the handle and workspace on the current device; throws if unusable
  ~CublasLtFp8Gemm();
  CublasLtFp8Gemm(const CublasLtFp8Gemm&) = delete;
  CublasLtFp8Gemm& operator=(const CublasLtFp8Gemm&) = delete;

  // scaleA / scaleB: device pointers, as the scaling says (above): one fp32 each (1 / scale) for
  // PerTensor, the tiled block scales for Mxfp8 / Nvfp4. alpha: host, 1 but for NVFP4.
  void run(const Fp8GemmShape& shape, const std::uint8_t* a, const void* scaleA, const std::uint8_t* b,
           const void* scaleB, void* c, Stream s, float alpha = 1.0f);
  // Makes (and caches) the plan of this shape: false, with cuBLASLt's answer in *why, when it has
  // no algorithm for it (the caller then falls back instead of failing the step).
  bool prepare(const Fp8GemmShape& shape, std::string* why);
  std::size_t workspaceBytes() const { return m_workspaceBytes; }

 private:
  struct Plan;
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int, int, bool, int>;
  Plan& planFor(const Fp8GemmShape& shape);

  void* m_handle = nullptr;
  void* m_workspace = nullptr;
  std::size_t m_workspaceBytes = 0;
  std::map<Key, std::unique_ptr<Plan>> m_plans;
};

}  // namespace amp::cuda
