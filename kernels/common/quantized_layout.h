// Where an fp8 / block-scaled GEMM operand keeps its codes and scales, and how one element is
// decoded: shared by the CPU backend and (under nvcc) the CUDA kernels, so a quantised operand
// written by one decodes to the same fp32 bits on the other.
//
// The operand is a row-major matrix (rows x cols). Its codes are one byte per value in that order;
// E2M1 packs two values to a byte, the even index in the low nibble (the OCP MX and NVFP4 packing).
// Blocks run along each "line" (a row, or a column when alongRows), `block` values long; square
// blocks (DeepSeek-V3's 128x128 weight tiles) also span `block` lines. The block scales are stored
// one per block, tile-line major: block (line / tileLines, pos / block). A line's last block may
// be shorter (what zero padding would give: padding never changes a block's amax).
//
// Decoding, exactly as engine/amp/fp8_quantize.cpp's dequantised values (each one or two fp32
// operations, so every backend gets the same bits):
//   per tensor   value x (1 / scale)          (1 / scale rounded once, in fp32)
//   MX           value x 2^e                  (E8M0 code e; exact; the NaN code gives NaN)
//   blockwise    value x (1 / s)              (s the block's fp32 scale)
//   NVFP4        (value x s_block) / S        (s_block an E4M3 code's value; S the tensor scale)
#pragma once

#include <cstdint>

#include "kernels/common/block_scaling.h"
#include "kernels/common/minifloat.h"

namespace amp {

enum class QuantScaling : std::uint8_t { PerTensor, Mx, Blockwise, Nvfp4 };

struct QuantLayout {
  std::int64_t rows = 0, cols = 0;
  bool alongRows = false;
  int block = 32;
  bool square = false;

  AMP_HD std::int64_t lines() const { return alongRows ? cols : rows; }
  AMP_HD std::int64_t length() const { return alongRows ? rows : cols; }
  AMP_HD std::int64_t tileLines() const { return square ? block : 1; }
  AMP_HD std::int64_t blocksPerLine() const { return (length() + block - 1) / block; }
  AMP_HD std::int64_t blockCount() const {
    return (lines() + tileLines() - 1) / tileLines() * blocksPerLine();
  }
  // The block of element (r, c) of the matrix.
  AMP_HD std::int64_t blockOf(std::int64_t r, std::int64_t c) const {
    const std::int64_t line = alongRows ? c : r, pos = alongRows ? r : c;
    return line / tileLines() * blocksPerLine() + pos / block;
  }
  // The row-major index of position `pos` along line `line`.
  AMP_HD std::int64_t at(std::int64_t line, std::int64_t pos) const {
    return alongRows ? pos * cols + line : line * cols + pos;
  }
};

// Bytes of codes for n values of a format.
AMP_HD inline std::int64_t quantCodeBytes(std::int64_t n, MiniFormat f) {
  return f == MiniFormat::E2M1 ? (n + 1) / 2 : n;
}

AMP_HD inline std::uint32_t loadQuantCode(const std::uint8_t* codes, std::int64_t i, MiniFormat f) {
  if (f != MiniFormat::E2M1) return codes[i];
  const std::uint8_t b = codes[i >> 1];
  return (i & 1) ? (b >> 4) : (b & 0xFu);
}

// E2M1: the caller owns the whole byte (both nibbles are written together, see packE2m1).
AMP_HD inline std::uint8_t packE2m1(std::uint32_t even, std::uint32_t odd) {
  return static_cast<std::uint8_t>((even & 0xFu) | ((odd & 0xFu) << 4));
}

// One element's value from its code and its block's scale. `blockScale` is the stored scale's
// meaning per scaling: PerTensor unused (pass inv = 1 / scale as `tensorInv`); Mx the E8M0 code;
// Blockwise 1 / s; Nvfp4 the E4M3 block scale's value, with `tensorInv` unused and S given.
struct QuantDecoder {
  QuantScaling scaling;
  MiniFormat format;
  float tensorInv;  // PerTensor: 1 / scale
  float tensorS;    // Nvfp4: S
  AMP_HD float operator()(std::uint32_t code, float blockValue, std::uint8_t blockCode) const {
    const float v = miniToFloat(code, format);
    switch (scaling) {
      case QuantScaling::PerTensor: return v * tensorInv;
      case QuantScaling::Mx: return multiplyByE8m0(v, blockCode);
      case QuantScaling::Blockwise: return v * blockValue;
      case QuantScaling::Nvfp4: return (v * blockValue) / tensorS;
    }
    return v;
  }
};

}  // namespace amp
