#include "engine/amp/fp8_block_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace amp {

namespace {

// |a| > |b| for block amaxes, a NaN above everything: a block holding a NaN is the one to see.
bool larger(float a, float b) {
  if (std::isnan(b)) return false;
  return std::isnan(a) || a > b;
}

// NVFP4's transform, as the quantiser applies it: along each line (a row, or a column when
// alongRows), per whole block of 16; a last partial block is left as it is.
void hadamardLines(std::vector<float>& v, std::int64_t rows, std::int64_t cols, bool alongRows, std::uint16_t signs) {
  const std::int64_t lines = alongRows ? cols : rows, length = alongRows ? rows : cols;
  const auto at = [&](std::int64_t line, std::int64_t pos) { return alongRows ? pos * cols + line : line * cols + pos; };
  float buf[16];
  for (std::int64_t line = 0; line < lines; ++line)
    for (std::int64_t p0 = 0; p0 + 16 <= length; p0 += 16) {
      for (int j = 0; j < 16; ++j) buf[j] = v[std::size_t(at(line, p0 + j))];
      hadamard16(buf, signs);
      for (int j = 0; j < 16; ++j) v[std::size_t(at(line, p0 + j))] = buf[j];
    }
}

// log2 of a block's scale, the scale the quantiser stores for that amax (S: NVFP4's tensor scale).
float scaleLog2(float amax, const QuantSpec& spec, float S) {
  switch (spec.scaling) {
    case QuantScaling::Mx: {
      const std::uint8_t code = mxScaleCode(amax, spec.format, spec.mxRounding);
      return code == kE8m0Nan ? std::numeric_limits<float>::quiet_NaN() : float(int(code) - 127);
    }
    case QuantScaling::Blockwise:
      return std::log2(blockwiseScale(amax, miniMax(spec.format), spec.powerOfTwo));
    case QuantScaling::Nvfp4:
      return std::log2(miniToFloat(nvfp4BlockScaleCode(amax, S), MiniFormat::E4M3));
    case QuantScaling::PerTensor: break;
  }
  return std::numeric_limits<float>::quiet_NaN();
}

}  // namespace

Fp8BlockGrid fp8BlockGrid(const float* x, std::int64_t rows, std::int64_t cols, const QuantSpec& spec, int maxCells) {
  Fp8BlockGrid g;
  if (spec.scaling == QuantScaling::PerTensor || rows <= 0 || cols <= 0) return g;
  const std::int64_t n = rows * cols;
  std::vector<float> transformed;
  if (spec.scaling == QuantScaling::Nvfp4 && spec.hadamard) {
    transformed.assign(x, x + n);
    hadamardLines(transformed, rows, cols, spec.alongRows, spec.hadamardSigns);
    x = transformed.data();
  }
  // A block's extent over the tensor: `block` along the lines, `tileLines` across them.
  const int tile = spec.square ? spec.block : 1;
  g.tensorRows = rows;
  g.tensorCols = cols;
  g.blockRows = spec.alongRows ? spec.block : tile;
  g.blockCols = spec.alongRows ? tile : spec.block;
  g.scaleFormat = spec.scaling == QuantScaling::Mx ? "e8m0" : spec.scaling == QuantScaling::Nvfp4 ? "e4m3" : "fp32";
  const std::int64_t br = (rows + g.blockRows - 1) / g.blockRows, bc = (cols + g.blockCols - 1) / g.blockCols;
  // Every block's amax in one row-major pass over the tensor.
  std::vector<float> amax(std::size_t(br * bc), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* line = amax.data() + (r / g.blockRows) * bc;
    const float* v = x + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float a = std::fabs(v[c]);
      float& m = line[c / g.blockCols];
      if (larger(a, m)) m = a;
    }
  }
  const float S = spec.scaling == QuantScaling::Nvfp4 ? nvfp4TensorScale(amaxOf(x, n)) : 1.0f;
  const int cap = std::max(1, maxCells);
  g.cellRows = int((br + cap - 1) / cap);
  g.cellCols = int((bc + cap - 1) / cap);
  g.rows = int((br + g.cellRows - 1) / g.cellRows);
  g.cols = int((bc + g.cellCols - 1) / g.cellCols);
  g.scaleLog2.assign(std::size_t(g.rows) * std::size_t(g.cols), 0.0f);
  g.amaxLog2.assign(g.scaleLog2.size(), 0.0f);
  for (int i = 0; i < g.rows; ++i)
    for (int j = 0; j < g.cols; ++j) {
      // The cell's block of largest amax stands for it (the first of equal ones).
      float best = -1.0f;
      for (std::int64_t a = std::int64_t(i) * g.cellRows; a < std::min<std::int64_t>(br, (i + 1) * std::int64_t(g.cellRows)); ++a)
        for (std::int64_t b = std::int64_t(j) * g.cellCols; b < std::min<std::int64_t>(bc, (j + 1) * std::int64_t(g.cellCols)); ++b)
          if (larger(amax[std::size_t(a * bc + b)], best)) best = amax[std::size_t(a * bc + b)];
      const std::size_t k = std::size_t(i) * std::size_t(g.cols) + std::size_t(j);
      g.scaleLog2[k] = scaleLog2(best, spec, S);
      g.amaxLog2[k] = best == 0.0f ? -std::numeric_limits<float>::infinity() : std::log2(best);
    }
  return g;
}

}  // namespace amp
