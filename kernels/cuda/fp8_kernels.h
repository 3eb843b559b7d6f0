// Launchers of the fp8 / block-scaled quantisation kernels (fp8_quantize.cu, fp8_block_scales.cu): the
// device side of Backend::amax / quantize / dequantize, writing codes and scales in
// kernels/common/quantized_layout.h's layout with the per-element code of minifloat.h and
// block_scaling.h, so the CUDA backend's operands are the host reference's bit for bit
// (engine/amp/fp8_quantize.cpp; the GPU suite checks it). No CUDA headers needed to call them.
//
// How a quantisation runs on the device (every scaling the same shape, so one element kernel):
//   1. block amax: one warp per block (a 1 x B run along a line, or a B x B tile), its largest
//      magnitude into a float per block, and the block's stored scale (E8M0 / E4M3 code, or the
//      fp32 factor 1 / s) written from it;
//   2. elements: one thread per code byte (two values for E2M1), in row-major order whatever
//      the orientation, so the reads of x and the writes of the codes are coalesced; the block's
//      scale is recomputed from its amax (the same function as the host's, so the same bits) and
//      the statistics are summed in the same pass (counts, and sums in double).
// NVFP4 first applies the 16x16 Hadamard transform into an fp32 copy, then takes the tensor
// scale S from the copy's amax on the device (no host round trip until the caller reads S).
#pragma once

#include <cstdint>

#include "kernels/common/block_scaling.h"
#include "kernels/common/quantized_layout.h"
#include "kernels/cuda/cuda_kernels.h"

namespace amp::cuda {

// engine/amp/fp8_quantize.h's QuantSpec as the kernels need it (the kernels do not see the engine).
struct QuantKernelSpec {
  QuantScaling scaling = QuantScaling::PerTensor;
  MiniFormat format = MiniFormat::E4M3;
  Overflow overflow = Overflow::Saturate;
  float tensorScale = 1.0f;  // PerTensor
  MxRounding mxRounding = MxRounding::RoundUp;
  bool powerOfTwo = false;   // Blockwise
  bool stochastic = false;
  std::uint64_t seed = 0;
  bool hadamard = false;     // Nvfp4
  std::uint16_t hadamardSigns = 0;
};

// What the element pass sums (device memory, zeroed by the caller): QuantStats' counts and sums.
// The order of the double sums differs from the CPU's, so signalSq / errorSq agree within double
// rounding, the counts exactly.
struct QuantStatsDevice {
  unsigned long long count, nonzero, underflow, overflow, nonFinite;
  double signalSq, errorSq;
};

// *amaxBits (zeroed by the caller) = max over n values of |x| as fp32 bits: for magnitudes the
// bit order is the value order, and a NaN's bits are above inf's, so a NaN anywhere leaves a NaN
// (amaxOf's promise). Read it with bitsToFloat.
void launchAmaxBits(int code, const void* x, std::int64_t n, unsigned int* amaxBits, Stream s);

// x (any float dtype code, rows x cols row-major) into an fp32 copy with NVFP4's 16x16 Hadamard
// transform applied to every full 16 along each line (a last partial group copied as it is).
void launchHadamard16Lines(int code, const void* x, float* out, const QuantLayout& layout,
                           std::uint16_t signs, Stream s);

// Phase 1: blockAmax[b] for every block of the layout, and the stored scale of each (scaleCodes:
// E8M0 for Mx, E4M3 for Nvfp4; scaleFactors: 1 / s for Blockwise; the other may be null).
// Nvfp4 reads its tensor's amax bits from tensorAmaxBits (device) for S.
void launchQuantBlockScales(int code, const void* x, const QuantLayout& layout, const QuantKernelSpec& spec,
                            const unsigned int* tensorAmaxBits, float* blockAmax, std::uint8_t* scaleCodes,
                            float* scaleFactors, Stream s);

// Phase 2: the codes (quantCodeBytes(rows * cols) bytes) and, when stats is not null, the
// statistics summed into *stats. blockAmax: phase 1's (null for PerTensor). amaxBits (may be
// null, else zeroed by the caller): the amax of the values read, written by the same pass (as
// launchAmaxBits), so a per-tensor quantisation's statistics need no second read of x.
void launchQuantElements(int code, const void* x, const QuantLayout& layout, const QuantKernelSpec& spec,
                         const unsigned int* tensorAmaxBits, const float* blockAmax, std::uint8_t* codes,
                         QuantStatsDevice* stats, unsigned int* amaxBits, Stream s);

// out (F32, rows x cols) = the decoded values (QuantDecoder), exactly as the host's decodeCodes.
// scaleCodes / scaleFactors as phase 1 wrote them; tensorScale: PerTensor's scale or Nvfp4's S.
void launchDequantize(const std::uint8_t* codes, const std::uint8_t* scaleCodes, const float* scaleFactors,
                      const QuantLayout& layout, QuantScaling scaling, MiniFormat format, float tensorScale,
                      float* out, Stream s);

// dst (cols x rows) = src (rows x cols) transposed, one byte per value (fp8 codes): the copies
// that give cuBLASLt's fp8 GEMM its K-contiguous ("TN") operands.
void launchTransposeBytes(const std::uint8_t* src, std::int64_t rows, std::int64_t cols, std::uint8_t* dst,
                          Stream s);

// The block scales of an operand blocked along K (scales: the quantiser's E8M0 / E4M3 bytes,
// layout.blockCount() of them) into cuBLASLt's 128x4 tiles (kernels/common/block_scale_tiles.h):
// dst holds blockScaleTilesOf(layout).bytes(), the padding zeroed (fp8_block_scales.cu).
void launchTileBlockScales(const std::uint8_t* scales, const QuantLayout& layout, std::uint8_t* dst, Stream s);

// launchTransposeBytes for E2M1 codes two to a byte: dst (cols x rows, packed) = src (rows x
// cols, packed) transposed, exactly; a free high nibble of an odd count is zero.
void launchTransposeNibbles(const std::uint8_t* src, std::int64_t rows, std::int64_t cols, std::uint8_t* dst,
                            Stream s);

}  // namespace amp::cuda
