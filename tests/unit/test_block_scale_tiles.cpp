// cuBLASLt's tiled block-scale layout (kernels/common/block_scale_tiles.h), checked against the
// layout built a second way: the cuBLAS docs' description enumerated tile by tile, writing bytes
// in storage order (tile row band by band, the 4-column tiles of a band side by side; inside a
// tile 32 lines of 16 bytes, line i holding rows i, i + 32, i + 64, i + 96, their 4 scales each).
// That enumeration never evaluates the offset formula, so a wrong divisor, stride or tile order
// in it fails here. Also: the offsets are a bijection onto the padded tiles, the padding stays
// zero, and a quantised operand's scales land where they should in both orientations.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "kernels/common/block_scale_tiles.h"

using namespace amp;

namespace {

// The padded scale matrix in storage order: entry j of the result is the (row, col) of S stored at
// byte j, or (-1, -1) where the tile pads past S.
std::vector<std::pair<std::int64_t, std::int64_t>> storageOrder(std::int64_t outer, std::int64_t kBlocks) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  const std::int64_t bands = (outer + 127) / 128, tilesPerBand = (kBlocks + 3) / 4;
  for (std::int64_t band = 0; band < bands; ++band)
    for (std::int64_t t = 0; t < tilesPerBand; ++t)
      for (std::int64_t line = 0; line < 32; ++line)
        for (std::int64_t quarter = 0; quarter < 4; ++quarter)  // rows line, line + 32, + 64, + 96
          for (std::int64_t c = 0; c < 4; ++c) {
            const std::int64_t row = band * 128 + quarter * 32 + line, col = t * 4 + c;
            if (row < outer && col < kBlocks) out.emplace_back(row, col);
            else out.emplace_back(-1, -1);
          }
  return out;
}

const std::pair<std::int64_t, std::int64_t> kShapes[] = {
    {1, 1}, {32, 4}, {128, 4}, {129, 5}, {130, 3}, {256, 8}, {300, 13}, {64, 96}, {1000, 2}};

}  // namespace

TEST(BlockScaleTiles, OffsetsAreTheDocumentedTileLayout) {
  for (const auto& [outer, kBlocks] : kShapes) {
    const BlockScaleTiles t{outer, kBlocks};
    const auto order = storageOrder(outer, kBlocks);
    ASSERT_EQ(std::int64_t(order.size()), t.bytes()) << outer << " x " << kBlocks;
    for (std::int64_t j = 0; j < std::int64_t(order.size()); ++j) {
      const auto [r, c] = order[std::size_t(j)];
      if (r < 0) continue;
      ASSERT_EQ(t.offset(r, c), j) << "scale (" << r << ", " << c << ") of " << outer << " x " << kBlocks;
    }
  }
}

// Whole tiles: 128 rows by 4 scales, 512 bytes each, and every scale of S at its own byte.
TEST(BlockScaleTiles, PadsToWholeTilesAndMapsOneToOne) {
  EXPECT_EQ((BlockScaleTiles{1, 1}.bytes()), 512);
  EXPECT_EQ((BlockScaleTiles{128, 4}.bytes()), 512);
  EXPECT_EQ((BlockScaleTiles{129, 4}.bytes()), 1024);
  EXPECT_EQ((BlockScaleTiles{128, 5}.bytes()), 1024);
  EXPECT_EQ((BlockScaleTiles{300, 13}.bytes()), 3 * 4 * 512);
  for (const auto& [outer, kBlocks] : kShapes) {
    const BlockScaleTiles t{outer, kBlocks};
    std::set<std::int64_t> seen;
    for (std::int64_t r = 0; r < outer; ++r)
      for (std::int64_t c = 0; c < kBlocks; ++c) {
        const std::int64_t o = t.offset(r, c);
        ASSERT_GE(o, 0);
        ASSERT_LT(o, t.bytes());
        ASSERT_TRUE(seen.insert(o).second) << "two scales at byte " << o;
      }
  }
}

// A quantised operand's scales (QuantLayout: block line * blocksPerLine + k-block) tiled by the
// host form of the kernel: in both orientations the line is the outer index, partial blocks along
// K count as blocks, and every byte no scale lands on is zero.
TEST(BlockScaleTiles, QuantisedOperandsTileTheirScalesAndZeroThePadding) {
  struct Shape {
    std::int64_t rows, cols;
    bool alongRows;
    int block;
  };
  for (const Shape& s : {Shape{48, 96, false, 32}, Shape{96, 48, true, 32}, Shape{130, 200, false, 16},
                         Shape{200, 130, true, 16}, Shape{7, 33, false, 32}}) {
    const QuantLayout L{s.rows, s.cols, s.alongRows, s.block, false};
    std::vector<std::uint8_t> scales(std::size_t(L.blockCount()));
    for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = std::uint8_t(1 + i % 250);  // never 0
    const BlockScaleTiles t = blockScaleTilesOf(L);
    EXPECT_EQ(t.outer, s.alongRows ? s.cols : s.rows);
    EXPECT_EQ(t.kBlocks, ((s.alongRows ? s.rows : s.cols) + s.block - 1) / s.block);
    std::vector<std::uint8_t> tiled(std::size_t(t.bytes()), 0xAB);
    tileBlockScales(scales.data(), L, tiled.data());
    const auto order = storageOrder(t.outer, t.kBlocks);
    for (std::size_t j = 0; j < order.size(); ++j) {
      const auto [line, kb] = order[j];
      if (line < 0) {
        ASSERT_EQ(tiled[j], 0) << "padding byte " << j;
        continue;
      }
      // Element (line, kb * block) of the operand is in that block, by QuantLayout's own rule.
      const std::int64_t r = s.alongRows ? kb * s.block : line, c = s.alongRows ? line : kb * s.block;
      ASSERT_EQ(tiled[j], scales[std::size_t(L.blockOf(r, c))]) << "byte " << j;
    }
  }
}
