// The block scales grid (engine/amp/fp8_block_grid.h): each cell's scale is the one the
// quantiser stores for that block (quantizeToCodes's E8M0 / E4M3 codes and fp32 factors), laid
// over the tensor's shape the right way round for blocks along rows, down columns and 128 x 128
// tiles, odd shapes included; a big tensor is grouped by its block of largest amax so the outlier's
// block survives; the fp8 JSON keeps it (and reads files without it); the recipe records it on
// histogram steps of block recipes only.
#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonObject>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/amp/fp8_block_grid.h"
#include "engine/amp/fp8_context.h"
#include "engine/amp/fp8_quantize.h"
#include "engine/backend/backend.h"
#include "engine/io/fp8_json.h"
#include "kernels/common/mix64.h"

using namespace amp;

namespace {

// Magnitudes over many binades (so neighbouring blocks differ), some zeros, one all-zero block.
std::vector<float> sample(std::int64_t rows, std::int64_t cols) {
  std::vector<float> v(std::size_t(rows * cols));
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    const std::uint64_t r = mix64(std::uint64_t(i) * 131 + 7);
    const float mag = std::ldexp(1.0f + float(r & 0xFFFF) / 65536.0f, int((r >> 16) % 30) - 20);
    v[std::size_t(i)] = (r >> 40) & 1 ? -mag : mag;
  }
  for (std::int64_t c = 0; c < std::min<std::int64_t>(cols, 16); ++c) v[std::size_t(c)] = 0.0f;
  return v;
}

QuantSpec spec(QuantScaling scaling, bool alongRows, bool square = false) {
  QuantSpec s;
  s.scaling = scaling;
  s.alongRows = alongRows;
  s.square = square;
  s.block = scaling == QuantScaling::Mx ? 32 : scaling == QuantScaling::Nvfp4 ? 16 : 128;
  s.format = scaling == QuantScaling::Nvfp4 ? MiniFormat::E2M1 : MiniFormat::E4M3;
  return s;
}

// The stored scale of the block that holds tensor element (r, c), as log2, from quantizeToCodes.
struct Stored {
  std::vector<std::uint8_t> codes, scaleCodes;
  std::vector<float> factors;
  QuantLayout layout;
  QuantScaling scaling;
  double log2At(std::int64_t r, std::int64_t c) const {
    const std::int64_t k = layout.blockOf(r, c);
    switch (scaling) {
      case QuantScaling::Mx: return double(int(scaleCodes[std::size_t(k)]) - 127);
      case QuantScaling::Nvfp4: return std::log2(double(miniToFloat(scaleCodes[std::size_t(k)], MiniFormat::E4M3)));
      case QuantScaling::Blockwise: return -std::log2(double(factors[std::size_t(k)]));  // stored as 1 / s
      default: return std::nan("");
    }
  }
};

Stored quantise(const std::vector<float>& x, std::int64_t rows, std::int64_t cols, const QuantSpec& s) {
  Stored st;
  st.layout = QuantLayout{rows, cols, s.alongRows, s.block, s.square};
  st.scaling = s.scaling;
  st.codes.resize(std::size_t(quantCodeBytes(rows * cols, s.format)));
  st.scaleCodes.resize(std::size_t(st.layout.blockCount()));
  st.factors.resize(std::size_t(st.layout.blockCount()));
  float tensorScale = 0;
  quantizeToCodes(x.data(), rows, cols, s, st.codes.data(), st.scaleCodes.data(), st.factors.data(), &tensorScale, nullptr);
  return st;
}

}  // namespace

TEST(Fp8BlockGrid, EachCellIsTheQuantisersScaleOfThatBlockOverTheTensorsShape) {
  struct Case {
    const char* name;
    QuantSpec s;
    std::int64_t rows, cols;
    int blockRows, blockCols;
  };
  QuantSpec fit = spec(QuantScaling::Mx, false), floorMx = spec(QuantScaling::Mx, true);
  floorMx.mxRounding = MxRounding::Floor;
  QuantSpec pow2 = spec(QuantScaling::Blockwise, false, true);
  pow2.powerOfTwo = true;
  QuantSpec rht = spec(QuantScaling::Nvfp4, true);
  rht.hadamard = true;
  rht.hadamardSigns = 0xA5C3;
  const Case cases[] = {
      {"mx along rows", fit, 7, 150, 1, 32},       {"mx down columns (floor)", floorMx, 150, 7, 32, 1},
      {"blockwise 1x128", spec(QuantScaling::Blockwise, false), 5, 300, 1, 128},
      {"blockwise 128x1", spec(QuantScaling::Blockwise, true), 300, 5, 128, 1},
      {"blockwise 128x128 pow2", pow2, 300, 200, 128, 128},
      {"blockwise 128x128 down columns", spec(QuantScaling::Blockwise, true, true), 200, 300, 128, 128},
      {"nvfp4 along rows", spec(QuantScaling::Nvfp4, false), 9, 70, 1, 16},
      {"nvfp4 + RHT down columns", rht, 70, 9, 16, 1},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const std::vector<float> x = sample(k.rows, k.cols);
    const Fp8BlockGrid g = fp8BlockGrid(x.data(), k.rows, k.cols, k.s, 1000);
    ASSERT_FALSE(g.empty());
    EXPECT_EQ(g.tensorRows, k.rows);
    EXPECT_EQ(g.tensorCols, k.cols);
    EXPECT_EQ(g.blockRows, k.blockRows);
    EXPECT_EQ(g.blockCols, k.blockCols);
    EXPECT_EQ(g.cellRows, 1);
    EXPECT_EQ(g.cellCols, 1);
    EXPECT_EQ(g.rows, int((k.rows + k.blockRows - 1) / k.blockRows));
    EXPECT_EQ(g.cols, int((k.cols + k.blockCols - 1) / k.blockCols));
    const Stored st = quantise(x, k.rows, k.cols, k.s);
    // The values the scale came from (NVFP4 + RHT: the transformed ones): the amax check below
    // uses the untransformed tensor only where no transform applies.
    for (int i = 0; i < g.rows; ++i)
      for (int j = 0; j < g.cols; ++j) {
        const std::int64_t r0 = std::int64_t(i) * g.blockRows, c0 = std::int64_t(j) * g.blockCols;
        const double want = st.log2At(r0, c0), got = g.scaleLog2[std::size_t(i * g.cols + j)];
        // MX and power-of-two scales: exact. NVFP4's E4M3 scales and fp32 ones: log2 in fp32
        // (and 1 / s rounded once), within 1e-5, where neighbouring E4M3 codes are 0.17 apart.
        // (An all-zero NVFP4 block has scale 0: log2 -inf in both.)
        if (std::isfinite(want) &&
            (k.s.scaling == QuantScaling::Nvfp4 || (k.s.scaling == QuantScaling::Blockwise && !k.s.powerOfTwo)))
          EXPECT_NEAR(got, want, 1e-5) << "cell " << i << "," << j;
        else
          EXPECT_EQ(got, want) << "cell " << i << "," << j;
        if (k.s.hadamard) continue;
        float amax = 0;
        for (std::int64_t r = r0; r < std::min(k.rows, r0 + g.blockRows); ++r)
          for (std::int64_t c = c0; c < std::min(k.cols, c0 + g.blockCols); ++c) amax = std::max(amax, std::fabs(x[std::size_t(r * k.cols + c)]));
        const float a = g.amaxLog2[std::size_t(i * g.cols + j)];
        if (amax == 0)
          EXPECT_TRUE(std::isinf(a) && a < 0) << "cell " << i << "," << j;
        else
          EXPECT_EQ(a, std::log2(amax)) << "cell " << i << "," << j;
      }
  }
  QuantSpec perTensor;
  const std::vector<float> x = sample(4, 4);
  EXPECT_TRUE(fp8BlockGrid(x.data(), 4, 4, perTensor).empty());
}

// 256 x 4096 in 1 x 32 blocks is 256 x 128 blocks: 64 x 64 cells of 4 x 2 blocks, each the block
// of largest amax, so one outlier's block is its cell's, and no other cell comes near it.
TEST(Fp8BlockGrid, BigTensorsGroupBlocksAndKeepTheOutliersBlock) {
  const std::int64_t rows = 256, cols = 4096;
  std::vector<float> x(std::size_t(rows * cols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * float(1 + (i % 7));
  x[std::size_t(201 * cols + 3001)] = 5000.0f;  // block (201, 93): cell (50, 46)
  const QuantSpec s = spec(QuantScaling::Mx, false);
  const Fp8BlockGrid g = fp8BlockGrid(x.data(), rows, cols, s);
  EXPECT_EQ(g.cellRows, 4);
  EXPECT_EQ(g.cellCols, 2);
  ASSERT_EQ(g.rows, 64);
  ASSERT_EQ(g.cols, 64);
  const Stored st = quantise(x, rows, cols, s);
  for (int i = 0; i < g.rows; ++i)
    for (int j = 0; j < g.cols; ++j) {
      const float a = g.amaxLog2[std::size_t(i * g.cols + j)], e = g.scaleLog2[std::size_t(i * g.cols + j)];
      if (i == 50 && j == 46) {
        EXPECT_EQ(a, std::log2(5000.0f));
        EXPECT_EQ(e, st.log2At(201, 3001));
        EXPECT_EQ(e, 4.0f);  // round up to fit: 5000 / 2^4 = 312.5 fits 448, 5000 / 2^3 does not
      } else {
        EXPECT_EQ(a, std::log2(0.07f)) << i << "," << j;
        EXPECT_LT(e, -8.0f) << i << "," << j;  // 0.07: 2^-4 - 8 or below
      }
    }
}

TEST(Fp8BlockGrid, TheFp8JsonKeepsItCompactlyAndReadsFilesWithoutIt) {
  const std::vector<float> x = sample(40, 96);
  Fp8TensorRecord r;
  r.tensor = "2.x";
  r.format = "e4m3";
  r.blockGrid = fp8BlockGrid(x.data(), 40, 96, spec(QuantScaling::Blockwise, false));
  r.blockGrid.amaxLog2[5] = -std::numeric_limits<float>::infinity();
  const QJsonArray json = fp8RecordsToJson({r});
  const auto back = fp8RecordsFromJson(json);
  ASSERT_EQ(back.size(), 1u);
  const Fp8BlockGrid& b = back[0].blockGrid;
  EXPECT_EQ(b.rows, r.blockGrid.rows);
  EXPECT_EQ(b.cols, r.blockGrid.cols);
  EXPECT_EQ(b.blockCols, 128);
  EXPECT_EQ(b.tensorRows, 40);
  EXPECT_EQ(b.tensorCols, 96);
  EXPECT_EQ(b.scaleFormat, "fp32");
  ASSERT_EQ(b.scaleLog2.size(), r.blockGrid.scaleLog2.size());
  for (std::size_t i = 0; i < b.scaleLog2.size(); ++i) {
    EXPECT_NEAR(b.scaleLog2[i], r.blockGrid.scaleLog2[i], 0.0051);
    if (i == 5)
      EXPECT_TRUE(std::isinf(b.amaxLog2[i]) && b.amaxLog2[i] < 0);
    else
      EXPECT_NEAR(b.amaxLog2[i], r.blockGrid.amaxLog2[i], 0.0051);
  }
  // A line written before the grid existed, and one whose grid does not add up: no grid.
  QJsonObject old = json.at(0).toObject();
  old.remove("block_grid");
  EXPECT_TRUE(fp8RecordsFromJson(QJsonArray{old}).at(0).blockGrid.empty());
  QJsonObject bad = json.at(0).toObject();
  QJsonObject grid = bad["block_grid"].toObject();
  grid["cells"] = QJsonArray{3, 3};
  bad["block_grid"] = grid;
  EXPECT_TRUE(fp8RecordsFromJson(QJsonArray{bad}).at(0).blockGrid.empty());
}

TEST(Fp8BlockGrid, TheRecipeRecordsItOnHistogramStepsOfBlockRecipesOnly) {
  auto be = makeCpuBackend();
  const std::vector<float> v = sample(3, 64);
  const Tensor x = be->fromHost(v, {3, 64}, DType::F32, MemCategory::Activations);
  for (const char* recipe : {"current", "mxfp8", "nvfp4"})
    for (bool histogramStep : {false, true}) {
      SCOPED_TRACE(std::string(recipe) + (histogramStep ? " histogram step" : ""));
      Fp8Config c;
      c.recipe = recipe;
      c.keepBf16 = "none";
      Fp8Context f8(c, 1);
      f8.beginStep(1, histogramStep);
      QuantizedTensor q;
      f8.quantize(*be, "fc", Fp8Role::Input, Fp8Gemm::Forward, x, 64, q, MemCategory::Activations, true);
      const auto r = f8.takeRecords();
      ASSERT_EQ(r.size(), 1u);
      const bool block = std::string(recipe) != "current";
      EXPECT_EQ(r[0].blockGrid.empty(), !(block && histogramStep));
      if (!r[0].blockGrid.empty()) {
        EXPECT_EQ(r[0].blockGrid.rows, 3);  // x as the forward GEMM takes it: blocks along its rows
        EXPECT_EQ(r[0].blockGrid.cols, std::string(recipe) == "mxfp8" ? 2 : 4);
      }
    }
}
