// Where cuBLASLt wants each block scale of an MXFP8 / NVFP4 operand: its "1D block scaling
// factors layout" (cuBLAS docs, section "1D Block Scaling Factors Layout"; the same layout that
// Transformer Engine's nvte_swizzle_scaling_factors and torchao's to_blocked produce). Shared by
// the CUDA kernel that rearranges our quantiser's scales (kernels/cuda/fp8_block_scales.cu) and
// the CPU test that checks this function against the tile structure enumerated independently
// (tests/unit/test_block_scale_tiles.cpp).
//
// Think of an operand's scales as a matrix S (outer x kBlocks): one scale per block of 32 (MX) or
// 16 (NVFP4) values along K, row r for the operand's r-th row of K values (m for A, n for B of
// the TN GEMM). cuBLASLt cuts S, zero padded to whole tiles, into tiles of 128 rows x 4 columns,
// 512 bytes each, stored tile row by tile row (the 4-column tiles of one 128-row band side by
// side, then the next band). Inside a tile, row r (0..127) and column c (0..3) sit at
//   (r % 32) * 16 + (r / 32) * 4 + c
// i.e. 32 lines of 16 bytes, line i holding rows i, i + 32, i + 64 and i + 96 of the tile, the 4
// scales of each together (what the tensor cores read per thread).
//
// Our quantiser (kernels/common/quantized_layout.h) stores a K-blocked operand's scales as the
// rows of S already: block index line * blocksPerLine + kBlock, whichever way the operand's
// matrix lies (a line is a row when blocks run along rows, a column when they run down the
// columns), so the line is the outer index and no transpose of the scales is ever needed.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"
#include "kernels/common/quantized_layout.h"

namespace amp {

struct BlockScaleTiles {
  static constexpr std::int64_t kTileRows = 128, kTileCols = 4, kTileBytes = kTileRows * kTileCols;

  std::int64_t outer = 0;    // rows of S: the operand's extent outside K
  std::int64_t kBlocks = 0;  // columns of S: blocks along K

  AMP_HD std::int64_t rowTiles() const { return (outer + kTileRows - 1) / kTileRows; }
  AMP_HD std::int64_t colTiles() const { return (kBlocks + kTileCols - 1) / kTileCols; }
  // Bytes cuBLASLt reads: whole tiles, the padding zero.
  AMP_HD std::int64_t bytes() const { return rowTiles() * colTiles() * kTileBytes; }
  // The byte of S (r, c), 0 <= r < outer, 0 <= c < kBlocks.
  AMP_HD std::int64_t offset(std::int64_t r, std::int64_t c) const {
    const std::int64_t tile = (r / kTileRows) * colTiles() + c / kTileCols;
    const std::int64_t inRow = r % kTileRows;
    return tile * kTileBytes + (inRow % 32) * 16 + (inRow / 32) * 4 + c % kTileCols;
  }
};

// The tiles of a quantised operand whose blocks run along K (its lines are the outer index).
AMP_HD inline BlockScaleTiles blockScaleTilesOf(const QuantLayout& L) {
  return BlockScaleTiles{L.lines(), L.blocksPerLine()};
}

// Scale `b` of the operand (QuantLayout's block index, non-square blocks) to its tiled byte.
AMP_HD inline std::int64_t tiledScaleOffset(const QuantLayout& L, std::int64_t b) {
  const std::int64_t perLine = L.blocksPerLine();
  return blockScaleTilesOf(L).offset(b / perLine, b % perLine);
}

// The host form of the CUDA kernel: dst (blockScaleTilesOf(L).bytes()) = the scales (one byte
// each, L.blockCount() of them) in cuBLASLt's tiles, zero where a tile pads. Tests compare the
// kernel's bytes with these.
inline void tileBlockScales(const std::uint8_t* scales, const QuantLayout& L, std::uint8_t* dst) {
  const BlockScaleTiles t = blockScaleTilesOf(L);
  for (std::int64_t i = 0; i < t.bytes(); ++i) dst[i] = 0;
  for (std::int64_t b = 0; b < L.blockCount(); ++b) dst[tiledScaleOffset(L, b)] = scales[b];
}

}  // namespace amp
