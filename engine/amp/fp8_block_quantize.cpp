#include "engine/amp/fp8_block_quantize.h"

#include <algorithm>
#include <array>
#include <vector>

#include "engine/amp/fp8_span_rounding.h"
#include "kernels/common/block_scaling.h"

namespace amp::fp8detail {

namespace {

using fp8span::kSpan;

// The tensor seen as row groups of `g` rows whose blocks ("cells") are `w` columns wide: a block
// along a row is 1 x B (g = 1, w = B), one down a column B x 1 (g = B, w = 1), a square tile
// B x B. Every shape is then visited row by row over contiguous columns: the block's largest
// magnitude is a maximum over the group's rows, then over the cell's columns, and each value's
// factors come from its column's cell.
struct Geometry {
  std::int64_t g, w;
  std::int64_t rowBegin, rowEnd, colBegin, colEnd;
};

Geometry geometryOf(const QuantSpec& spec, std::int64_t rows, std::int64_t cols, std::int64_t u0, std::int64_t u1) {
  const std::int64_t B = spec.block;
  if (spec.scaling == QuantScaling::Blockwise && spec.square) {
    if (!spec.alongRows) return {B, B, u0 * B, std::min(rows, u1 * B), 0, cols};
    return {B, B, 0, rows, u0 * B, std::min(cols, u1 * B)};
  }
  if (!spec.alongRows) return {1, B, u0, u1, 0, cols};
  return {B, 1, 0, rows, u0, u1};
}

// Where block (row group starting at r0, cell k) keeps its scale in scaleCodes / scaleFactors:
// line * blocksPerLine + block along the line, lines being rows or columns (tiles' lines for
// square tiles), as fp8_quantize.cpp and QuantLayout number them.
std::int64_t scaleIndex(const QuantSpec& spec, const Geometry& G, std::int64_t rows, std::int64_t cols,
                        std::int64_t r0, std::int64_t k) {
  const std::int64_t B = spec.block;
  const std::int64_t length = spec.alongRows ? rows : cols, perLine = (length + B - 1) / B;
  const std::int64_t firstCol = G.colBegin + k * G.w;
  if (spec.scaling == QuantScaling::Blockwise && spec.square)
    return spec.alongRows ? (firstCol / B) * perLine + r0 / B : (r0 / B) * perLine + k;
  return spec.alongRows ? firstCol * perLine + r0 / B : r0 * perLine + k;
}

// Block exponents counted in an array (a map insertion per block was most of a block's cost),
// moved into the map once.
struct ExponentCounts {
  static constexpr int kLowest = -149;
  std::array<std::int64_t, 128 + 150> n{};
  void add(int e) { ++n[std::size_t(e - kLowest)]; }
  void into(std::map<int, std::int64_t>& m) const {
    for (std::size_t i = 0; i < n.size(); ++i)
      if (n[i]) m[int(i) + kLowest] += n[i];
  }
};

// One block's factors: scaled = (x * a) * b, value = (code's value * d1) * d2, or / d2 where
// divide (NVFP4's (e2m1 x s_block) / S). Each is the expression the per-element path evaluates.
struct Factors {
  float a, b, d1, d2;
};

// nvfp4Multipliers: S / s_block for each of the 256 block-scale codes (0 where the scale is not
// positive), the per-block division made once per tensor.
Factors blockFactors(const QuantSpec& spec, float amax, float S, const float* nvfp4Multipliers, std::int64_t scaleAt,
                     const QuantOut& out, ExponentCounts* exps) {
  switch (spec.scaling) {
    case QuantScaling::Mx: {
      const std::uint8_t code = mxScaleCode(amax, spec.format, spec.mxRounding);
      if (out.scaleCodes) out.scaleCodes[scaleAt] = code;
      if (code == kE8m0Nan) {  // the block decodes to NaN (divideByE8m0 / multiplyByE8m0)
        const float nan = bitsToFloat(0x7FC00000u);
        return {nan, nan, nan, nan};
      }
      const int e = int(code) - 127, half = e / 2;
      if (exps) exps->add(e);
      return {bitsToFloat(static_cast<std::uint32_t>(127 - half) << 23),
              bitsToFloat(static_cast<std::uint32_t>(127 - (e - half)) << 23),
              bitsToFloat(static_cast<std::uint32_t>(127 + half) << 23),
              bitsToFloat(static_cast<std::uint32_t>(127 + (e - half)) << 23)};
    }
    case QuantScaling::Blockwise: {
      const float s = blockwiseScale(amax, miniMax(spec.format), spec.powerOfTwo);
      if (exps && amax > 0 && std::isfinite(amax)) exps->add(floorLog2(s));
      const float inv = 1.0f / s;
      if (out.scaleFactors) out.scaleFactors[scaleAt] = inv;
      return {s, 1.0f, inv, 1.0f};
    }
    case QuantScaling::Nvfp4: {
      // nvfp4BlockScaleCode's cast by MiniRounder's arithmetic (equal to floatToMini's, which it
      // still takes for inf and NaN): the value is the scale, its fields the code.
      static const MiniRounder e4m3(MiniFormat::E4M3, Overflow::Saturate);
      const float sb = e4m3((amax / 6.0f) * S);
      const std::uint32_t code = miniCodeOfExact(sb, MiniFormat::E4M3);
      if (exps && sb > 0) exps->add(floorLog2(sb));
      if (out.scaleCodes) out.scaleCodes[scaleAt] = static_cast<std::uint8_t>(code);
      return {nvfp4Multipliers[code], 1.0f, sb, S};
    }
    case QuantScaling::PerTensor: break;
  }
  return {1, 1, 1, 1};
}

template <bool kDivide>
void quantizeRegion(const float* x, const QuantOut& out, std::int64_t rows, std::int64_t cols, const QuantSpec& spec,
                    float S, const Geometry& G, QuantStats* stats) {
  const fp8span::SpanRounder R(spec.format, spec.overflow, spec.stochastic, spec.seed);
  const std::int64_t width = G.colEnd - G.colBegin;
  if (width <= 0 || G.rowEnd <= G.rowBegin) return;
  const std::int64_t cells = (width + G.w - 1) / G.w;
  std::vector<std::uint32_t> colMax(static_cast<std::size_t>(width));
  const auto w = static_cast<std::size_t>(width);
  std::vector<float> fa(w), fb(w), fd1(w), fd2(w);
  float rounded[kSpan], q[kSpan];
  std::uint8_t clipped[kSpan], codes[kSpan];
  fp8span::Counts counts;
  ExponentCounts exps;
  // A block whose scale underflows E4M3 is all zeros (its values are far below the tensor's).
  float nvfp4Multipliers[256];
  if (spec.scaling == QuantScaling::Nvfp4)
    for (std::uint32_t code = 0; code < 256; ++code) {
      const float sb = miniToFloat(code, MiniFormat::E4M3);
      nvfp4Multipliers[code] = sb > 0 ? S / sb : 0.0f;
    }
  std::int64_t count = 0;
  for (std::int64_t r0 = G.rowBegin; r0 < G.rowEnd; r0 += G.g) {
    const std::int64_t r1 = std::min(G.rowEnd, r0 + G.g);
    // The blocks' largest magnitudes: the fp32 bits of |x| order as the values do, and a NaN's
    // lie above inf's, so an integer maximum finds a block's NaN too (its scale is then NaN).
    std::fill(colMax.begin(), colMax.end(), 0u);
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* row = x + r * cols + G.colBegin;
      std::uint32_t* m = colMax.data();
      for (std::int64_t c = 0; c < width; ++c) {
        const std::uint32_t a = floatBits(row[c]) & 0x7FFFFFFFu;
        m[c] = a > m[c] ? a : m[c];
      }
    }
    for (std::int64_t k = 0; k < cells; ++k) {
      const std::int64_t c0 = k * G.w, c1 = std::min(width, c0 + G.w);
      std::uint32_t m = 0;
      for (std::int64_t c = c0; c < c1; ++c) m = colMax[std::size_t(c)] > m ? colMax[std::size_t(c)] : m;
      const Factors f = blockFactors(spec, bitsToFloat(m), S, nvfp4Multipliers, scaleIndex(spec, G, rows, cols, r0, k),
                                     out, stats ? &exps : nullptr);
      for (std::int64_t c = c0; c < c1; ++c) {
        fa[std::size_t(c)] = f.a;
        fb[std::size_t(c)] = f.b;
        fd1[std::size_t(c)] = f.d1;
        fd2[std::size_t(c)] = f.d2;
      }
    }
    for (std::int64_t r = r0; r < r1; ++r)
      for (std::int64_t c0 = 0; c0 < width; c0 += kSpan) {
        const int n = int(std::min<std::int64_t>(kSpan, width - c0));
        const std::int64_t first = r * cols + G.colBegin + c0;
        const float* xs = x + first;
        const float *a = fa.data() + c0, *b = fb.data() + c0, *d1 = fd1.data() + c0, *d2 = fd2.data() + c0;
        if (R.roundSpan(xs, a, b, n, first, rounded, clipped)) R.roundSpecials(xs, a, b, n, first, rounded, clipped);
        for (int j = 0; j < n; ++j) q[j] = kDivide ? (rounded[j] * d1[j]) / d2[j] : (rounded[j] * d1[j]) * d2[j];
        if (stats) fp8span::countSpan(xs, q, clipped, n, counts);
        if (out.codes) {
          R.codesOf(rounded, n, codes);
          std::copy(codes, codes + n, out.codes + first);
        }
        if (out.values) std::copy(q, q + n, out.values + first);
        count += n;
      }
  }
  if (!stats) return;
  counts.addTo(*stats, count);
  exps.into(stats->blockExponents);
}

}  // namespace

void quantizeBlocksFast(const float* x, const QuantOut& out, std::int64_t rows, std::int64_t cols,
                        const QuantSpec& spec, float S, std::int64_t u0, std::int64_t u1, QuantStats* stats) {
  const Geometry G = geometryOf(spec, rows, cols, u0, u1);
  if (spec.scaling == QuantScaling::Nvfp4) quantizeRegion<true>(x, out, rows, cols, spec, S, G, stats);
  else quantizeRegion<false>(x, out, rows, cols, spec, S, G, stats);
}

}  // namespace amp::fp8detail
