// Quantising a matrix the way one fp8 / block-scaled recipe feeds a GEMM, and measuring what
// that did to it. Host loops over kernels/common/minifloat.h and block_scaling.h (the CUDA
// kernels share that per-element code); the output is the dequantised operand, the exact values
// the low-precision GEMM multiplies (an fp8 code times its block scale is exact in fp32; a
// per-tensor operand is code x (1 / scale), one fp32 rounding, where the tensor cores scale the
// sum instead: the two differ by fp32's rounding, far below the formats').
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "kernels/common/block_scaling.h"
#include "kernels/common/quantized_layout.h"

namespace amp {

// How one operand is quantised. Blocks run along the matrix's columns (a row's consecutive
// values: the reduction dimension of a row-major operand) unless alongRows, then down each
// column. A last, partial block is a block of fewer values (what zero padding would give).
struct QuantSpec {
  using Scaling = QuantScaling;
  Scaling scaling = Scaling::PerTensor;
  MiniFormat format = MiniFormat::E4M3;
  Overflow overflow = Overflow::Saturate;
  float tensorScale = 1.0f;  // PerTensor: values cast(x * scale), dequantised x (1 / scale)
  MxRounding mxRounding = MxRounding::RoundUp;
  int block = 32;            // Mx 32, Blockwise 128, Nvfp4 16
  bool square = false;       // Blockwise: 128x128 tiles (weights) instead of 1x128
  bool powerOfTwo = false;   // Blockwise: power-of-two scales
  bool alongRows = false;
  bool stochastic = false;   // random bits from seed (mix64 of seed and the element's index)
  std::uint64_t seed = 0;
  bool hadamard = false;     // Nvfp4: the 16x16 random Hadamard transform before quantising
  std::uint16_t hadamardSigns = 0;
};

// What quantising did. Counts over the tensor's values; errors against the values before.
struct QuantStats {
  double amax = 0;           // largest magnitude before (NaN if any value was NaN)
  double scale = 1;          // PerTensor: the scale used; Nvfp4: the tensor scale; blocks: 1
  std::int64_t count = 0, nonzero = 0;
  std::int64_t underflow = 0;  // non-zero values that became zero
  std::int64_t overflow = 0;   // values past the format's range (clipped, or made inf / NaN)
  std::int64_t nonFinite = 0;  // NaN or inf before
  double signalSq = 0, errorSq = 0;  // sums over finite values, in double
  std::map<int, std::int64_t> blockExponents;  // block recipes: log2 of each block's scale
  // Set by the caller before quantising: also count floor(log2 |x x scale|) of every non-zero
  // finite value as the format receives it (after its per-tensor or block scale).
  bool wantScaledExponents = false;
  std::map<int, std::int64_t> scaledExponents;
  double sqnrDb() const;       // 10 log10(signal / error); +inf when exact
  double relMse() const;       // error / signal
  double underflowFrac() const { return nonzero ? double(underflow) / double(nonzero) : 0.0; }
  double overflowFrac() const { return count ? double(overflow) / double(count) : 0.0; }
};

// "e4m3", "e5m2", "e3m2", "e2m3", "e2m1": the names of the records, the trace and the keys.
const char* miniFormatName(MiniFormat f);

// The largest magnitude of n values (NaN where one is NaN: a scale from it would be wrong).
float amaxOf(const float* x, std::int64_t n);

// Quantises x (rows x cols, row-major) into out (may be x) as `spec` says; stats if given.
void quantizeDequantize(const float* x, float* out, std::int64_t rows, std::int64_t cols,
                        const QuantSpec& spec, QuantStats* stats);

// The same quantisation held as the hardware holds it (engine/backend/quantized_tensor.h):
// codes (quantCodeBytes(rows * cols, spec.format) bytes, row-major, E2M1 two to a byte) and
// block scales (QuantLayout::blockCount of them: E8M0 codes for Mx and E4M3 codes for Nvfp4 into
// scaleCodes, fp32 factors 1 / s for Blockwise into scaleFactors; the other pointer may be null).
// *tensorScale: PerTensor spec.tensorScale, Nvfp4 S, else 1. dequantised (optional, may be x):
// the decoded values, the same bits as quantizeDequantize's. The reference the GPU kernels match.
void quantizeToCodes(const float* x, std::int64_t rows, std::int64_t cols, const QuantSpec& spec,
                     std::uint8_t* codes, std::uint8_t* scaleCodes, float* scaleFactors, float* tensorScale,
                     QuantStats* stats, float* dequantised = nullptr);
// Decodes codes and scales as quantizeToCodes wrote them into out (rows x cols fp32).
void decodeCodes(const std::uint8_t* codes, const std::uint8_t* scaleCodes, const float* scaleFactors,
                 float tensorScale, std::int64_t rows, std::int64_t cols, const QuantSpec& spec, float* out);

// n codes of format f (one byte each, E2M1 unpacked) decoded as miniToFloat does, in a vector
// loop: decodeCodes' first pass over a row.
void decodeFormatCodes(const std::uint8_t* codes, std::int64_t n, MiniFormat f, float* out);

// C (m x n) = A (m x k) . B^T (B: n x k), every row pair's dot product added in chunks of
// `promote` products whose partial sum keeps `bits` mantissa bits (rounded toward zero after
// each addition, as a narrow accumulator truncates), each chunk then added into an fp32 sum:
// the accumulation model (fp8.accum_bits). A model, not a measurement of any GPU.
void gemmWithAccumulatorModel(const float* a, const float* b, float* c, std::int64_t m,
                              std::int64_t n, std::int64_t k, int bits, int promote);

}  // namespace amp
