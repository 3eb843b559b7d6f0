// The block recipes' quantisers (MX, DeepSeek-V3's blockwise, NVFP4) on their every-step path:
// block scales from the blocks' largest magnitudes, then the values rounded, counted and encoded
// span by span in fp8_span_rounding.h's vector loops. fp8_quantize.cpp calls it for every block
// quantisation except on histogram steps, whose binary-exponent histogram of the scaled values
// still comes from the per-element loops there; both give the same values, codes, scales and
// counts (tests/unit/test_fp8_block_fast.cpp), the error sums to their last bits only (the
// vector loop adds in lanes).
#pragma once

#include <cstdint>

#include "engine/amp/fp8_quantize.h"

namespace amp::fp8detail {

// Where a quantiser writes (any may be null): decoded values, one code byte per value (E2M1
// included: quantizeToCodes packs them), E8M0 / E4M3 block-scale codes, blockwise fp32 factors.
struct QuantOut {
  float* values = nullptr;
  std::uint8_t* codes = nullptr;
  std::uint8_t* scaleCodes = nullptr;
  float* scaleFactors = nullptr;
};

// Quantises units [u0, u1) of a block recipe's tensor: lines (rows, or columns when
// spec.alongRows) for Mx and Nvfp4, lines of tiles for Blockwise (as fp8_quantize.cpp's units).
// S: Nvfp4's tensor scale (the values already transformed where spec.hadamard). stats (may be
// null): counts, error sums and block exponents added into it; never scaled exponents.
void quantizeBlocksFast(const float* x, const QuantOut& out, std::int64_t rows, std::int64_t cols,
                        const QuantSpec& spec, float S, std::int64_t u0, std::int64_t u1, QuantStats* stats);

}  // namespace amp::fp8detail
