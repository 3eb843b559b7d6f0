// An fp8 / block-scaled GEMM operand as the hardware holds it: one byte per value (E2M1 two to a
// byte) and its scales, in backend memory (device memory on a GPU), so the memory chart counts
// what an fp8 run really keeps and a GPU feeds the codes to its fp8 tensor cores as they are.
// The layout and the per-element decoding are kernels/common/quantized_layout.h's; how each
// recipe picks its scales is engine/amp/fp8_quantize.h's (the host reference every backend
// matches bit for bit).
#pragma once

#include <cstdint>

#include "engine/amp/fp8_quantize.h"
#include "engine/core/tensor.h"

namespace amp {

class Backend;

struct QuantizedTensor {
  QuantSpec spec;                   // how it was quantised (format, scaling, blocks, orientation)
  std::int64_t rows = 0, cols = 0;  // the row-major matrix it stands for
  // U8, quantCodeBytes(rows * cols, spec.format) bytes, in the matrix's row-major order.
  Tensor codes;
  // One per block (QuantLayout::blockCount, tile-line major): U8 E8M0 codes (Mx), U8 E4M3 codes
  // (Nvfp4) or F32 dequantisation factors 1 / s (Blockwise); undefined for PerTensor.
  Tensor blockScales;
  // PerTensor: the scale the values were multiplied by (they decode as code x (1 / scale));
  // Nvfp4: the tensor scale S (computed by the quantiser from the operand's amax); else 1.
  float tensorScale = 1.0f;

  bool defined() const { return codes.defined(); }
  QuantLayout layout() const {
    return QuantLayout{rows, cols, spec.alongRows, spec.block, spec.square};
  }
  QuantDecoder decoder() const {
    return QuantDecoder{spec.scaling, spec.format, 1.0f / tensorScale, tensorScale};
  }
  std::size_t bytes() const {
    return (codes.defined() ? codes.bytes() : 0) + (blockScales.defined() ? blockScales.bytes() : 0);
  }
};

// Makes q a rows x cols operand quantised as `spec` says: its codes and block scales allocated
// on `be` in memory category `cat` (tensors of the right size and kind are kept: a layer's
// operand is requantised into the same memory every step).
void allocateQuantized(Backend& be, QuantizedTensor& q, std::int64_t rows, std::int64_t cols, const QuantSpec& spec,
                       MemCategory cat);

}  // namespace amp
