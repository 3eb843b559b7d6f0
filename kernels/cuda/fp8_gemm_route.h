// Which quantised GEMMs cuBLASLt's block-scaled modes can take (CUDA backend,
// engine/backend/cuda_backend_quantized.cpp), and why the others cannot: header-only and free of
// CUDA types, so the CPU unit tests check every reason (tests/unit/test_fp8_gemm_route.cpp).
//
// The block-scaled tensor cores multiply blocks of K: a block's scale multiplies the partial sum
// of its products inside the reduction. So both operands must be blocked along K:
//   MXFP8  E4M3 / E5M2 elements, an E8M0 scale per 32 along K    CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0
//   NVFP4  E2M1 elements, an E4M3 scale per 16 along K           CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3
//          (its per-tensor scales S_a, S_b: cuBLASLt's scale pointers hold the block scales, so
//          1 / (S_a S_b) goes into alpha, as the CUDALibrarySamples' LtNvfp4Matmul scales by alpha)
// on compute capability 10.0 and newer (cuBLAS 12.8 added them for Blackwell). Blockwise
// (DeepSeek-V3's 1x128 / 128x128 fp32 scales) has modes too since cuBLAS 12.9 (VEC128_32F,
// BLK128x128_32F, on sm_90), which this backend does not drive yet: it stays on the fallback, said
// so. Our quantiser blocks each GEMM operand along that GEMM's reduction (Fp8Context: the weight
// down its columns for dgrad, x and dy down theirs for wgrad), so every Linear GEMM qualifies;
// the check still guards any other caller.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/common/minifloat.h"
#include "kernels/common/quantized_layout.h"

namespace amp::cuda {

// How cuBLASLt scales both operands of an fp8 / fp4 GEMM.
enum class Fp8GemmScaling : std::uint8_t { PerTensor, Mxfp8, Nvfp4 };

// What the route needs of a quantised operand (engine/amp/fp8_quantize.h's QuantSpec).
struct QuantOperandInfo {
  QuantScaling scaling = QuantScaling::PerTensor;
  MiniFormat format = MiniFormat::E4M3;
  int block = 32;
  bool square = false;
  bool alongRows = false;  // blocks down the columns
};

struct BlockGemmRoute {
  Fp8GemmScaling scaling = Fp8GemmScaling::PerTensor;  // Mxfp8 / Nvfp4 when taken
  std::string refusal;                                 // why not; empty when taken
  bool taken() const { return refusal.empty(); }
};

inline const char* elementName(MiniFormat f) {
  switch (f) {
    case MiniFormat::E4M3: return "e4m3";
    case MiniFormat::E5M2: return "e5m2";
    case MiniFormat::E2M1: return "e2m1";
    case MiniFormat::E3M2: return "e3m2";
    case MiniFormat::E2M3: return "e2m3";
  }
  return "other";
}

// Appends each piece in turn (GCC 12's -Wrestrict misfires on long operator+ chains of strings).
template <class... Pieces>
std::string joined(const Pieces&... pieces) {
  std::string s;
  (s += ... += pieces);
  return s;
}

inline const char* scalingName(QuantScaling s) {
  switch (s) {
    case QuantScaling::PerTensor: return "per-tensor";
    case QuantScaling::Mx: return "MX";
    case QuantScaling::Blockwise: return "blockwise";
    case QuantScaling::Nvfp4: return "NVFP4";
  }
  return "?";
}

// Shapes the block-scaled kernels take: m and n multiples of 16 (as the per-tensor fp8 GEMM's),
// k a multiple of 32: whole blocks only (our quantiser ends a line in a shorter block where
// cuBLASLt would read a whole one) and 16-byte aligned K-contiguous rows of E2M1 (32 values).
inline bool blockGemmShapeOk(std::int64_t m, std::int64_t n, std::int64_t k) {
  return m > 0 && n > 0 && k > 0 && m % 16 == 0 && n % 16 == 0 && k % 32 == 0;
}

// op(a) (m x k) . op(b) (k x n) with a, b block-scaled (at least one): the block-scaled cuBLASLt
// GEMM, or the reason it cannot run here. ccMajor.ccMinor: the device; switchOn: the
// fp8-block-gemm fast path (AMP_CUDA_DISABLE).
inline BlockGemmRoute routeBlockScaledGemm(const QuantOperandInfo& a, bool transA, const QuantOperandInfo& b,
                                           bool transB, std::int64_t m, std::int64_t n, std::int64_t k, int ccMajor,
                                           int ccMinor, bool switchOn) {
  BlockGemmRoute r;
  if (a.scaling != b.scaling) {
    r.refusal = joined("operands of different scalings (", scalingName(a.scaling), " x ", scalingName(b.scaling), ")");
    return r;
  }
  switch (a.scaling) {
    case QuantScaling::PerTensor:
      r.refusal = "per-tensor operands (not block-scaled)";
      return r;
    case QuantScaling::Blockwise:
      r.refusal =
          "blockwise 1x128 / 128x128 fp32 scales (cuBLASLt's VEC128_32F / BLK128x128_32F modes, cuBLAS 12.9+, "
          "are not used by this backend yet)";
      return r;
    case QuantScaling::Mx: {
      const auto fp8 = [](MiniFormat f) { return f == MiniFormat::E4M3 || f == MiniFormat::E5M2; };
      if (!fp8(a.format) || !fp8(b.format)) {
        r.refusal = joined("MX ", elementName(a.format), " x ", elementName(b.format),
                           " (the block-scaled GEMM here takes MXFP8: e4m3 / e5m2 elements)");
        return r;
      }
      if (a.format == MiniFormat::E5M2 && b.format == MiniFormat::E5M2) {
        r.refusal = "MX e5m2 x e5m2 (cuBLASLt's fp8 kernels need an e4m3 operand)";
        return r;
      }
      if (a.block != 32 || b.block != 32) {
        r.refusal = joined("MX blocks of ", std::to_string(a.block), " and ", std::to_string(b.block),
                           " values (VEC32_UE8M0 scales 32)");
        return r;
      }
      r.scaling = Fp8GemmScaling::Mxfp8;
      break;
    }
    case QuantScaling::Nvfp4:
      if (a.format != MiniFormat::E2M1 || b.format != MiniFormat::E2M1 || a.block != 16 || b.block != 16) {
        r.refusal = "NVFP4 operands that are not e2m1 in blocks of 16";
        return r;
      }
      r.scaling = Fp8GemmScaling::Nvfp4;
      break;
  }
  // a's K runs along its rows unless transA (then down its columns); b's down its columns unless
  // transB. QuantLayout: alongRows means the blocks run down the columns.
  const bool aAlongK = !a.square && a.alongRows == transA;
  const bool bAlongK = !b.square && b.alongRows == !transB;
  if (!aAlongK || !bAlongK) {
    r.refusal = joined(!aAlongK ? "a's" : "b's",
                       " blocks run along m or n, not along K (a block scale must stay constant within the reduction)");
    return r;
  }
  if (ccMajor < 10) {
    r.refusal = joined("sm_", std::to_string(ccMajor), std::to_string(ccMinor),
                       " has no block-scaled tensor cores (cuBLASLt's VEC32_UE8M0 / VEC16_UE4M3 need sm_100 or newer)");
    return r;
  }
  if (!switchOn) {
    r.refusal = "AMP_CUDA_DISABLE=fp8-block-gemm";
    return r;
  }
  if (!blockGemmShapeOk(m, n, k)) {
    r.refusal = joined("(", std::to_string(m), " x ", std::to_string(k), ") . (", std::to_string(k), " x ",
                       std::to_string(n), "): the block-scaled GEMM needs m, n multiples of 16 and k of 32");
    return r;
  }
  return r;
}

}  // namespace amp::cuda
