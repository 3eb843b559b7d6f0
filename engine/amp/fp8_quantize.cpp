#include "engine/amp/fp8_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "kernels/common/mix64.h"

namespace amp {

double QuantStats::sqnrDb() const {
  if (errorSq == 0) return std::numeric_limits<double>::infinity();
  if (signalSq == 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signalSq / errorSq);
}

double QuantStats::relMse() const { return signalSq > 0 ? errorSq / signalSq : 0.0; }

float amaxOf(const float* x, std::int64_t n) {
  float m = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (std::isnan(a)) return a;
    if (a > m) m = a;
  }
  return m;
}

namespace {

// The operand's values, seen as lines (rows, or columns when alongRows) of blocks.
struct Lines {
  std::int64_t rows, cols;
  bool alongRows;
  std::int64_t count() const { return alongRows ? cols : rows; }
  std::int64_t length() const { return alongRows ? rows : cols; }
  std::int64_t at(std::int64_t line, std::int64_t pos) const {
    return alongRows ? pos * cols + line : line * cols + pos;
  }
};

// The cast of one already-scaled value (stochastic bits from the seed and the element's index,
// so a CPU and a GPU, or a resumed run, draw the same), and the statistics of one element.
struct Quantizer {
  const QuantSpec& spec;
  QuantStats* stats;
  float cast(float scaled, std::int64_t i, bool& over) const {
    const std::uint32_t r =
        spec.stochastic ? static_cast<std::uint32_t>(mix64(spec.seed ^ (std::uint64_t(i) * 0x9E3779B97F4A7C15ull)) >> 32) : 0u;
    return miniToFloat(floatToMini(scaled, spec.format, spec.overflow, spec.stochastic, r, &over), spec.format);
  }
  void record(float v, float q, bool over) const {
    if (!stats) return;
    ++stats->count;
    if (!std::isfinite(v)) {
      ++stats->nonFinite;
      return;
    }
    stats->overflow += over;
    if (v != 0) {
      ++stats->nonzero;
      stats->underflow += q == 0;
    }
    if (std::isfinite(q)) {
      stats->signalSq += double(v) * v;
      stats->errorSq += (double(q) - v) * (double(q) - v);
    }
  }
};

void perTensor(const float* x, float* out, std::int64_t n, const QuantSpec& spec, QuantStats* stats) {
  const float inv = 1.0f / spec.tensorScale;
  const Quantizer z{spec, stats};
  for (std::int64_t i = 0; i < n; ++i) {
    bool over = false;
    const float v = x[i];
    const float q = z.cast(v * spec.tensorScale, i, over) * inv;
    z.record(v, q, over);
    out[i] = q;
  }
  if (stats) stats->scale = spec.tensorScale;
}

// The block's largest magnitude, NaN where the block holds a NaN.
template <class At>
float blockAmax(const float* x, std::int64_t l0, std::int64_t l1, std::int64_t p0, std::int64_t p1, At at) {
  float amax = 0;
  for (std::int64_t l = l0; l < l1; ++l)
    for (std::int64_t p = p0; p < p1; ++p) {
      const float a = std::fabs(x[at(l, p)]);
      if (std::isnan(a)) return a;
      amax = std::fmax(amax, a);
    }
  return amax;
}

void mx(const float* x, float* out, const Lines& L, const QuantSpec& spec, QuantStats* stats) {
  const Quantizer z{spec, stats};
  const auto at = [&L](std::int64_t l, std::int64_t p) { return L.at(l, p); };
  for (std::int64_t line = 0; line < L.count(); ++line)
    for (std::int64_t p0 = 0; p0 < L.length(); p0 += spec.block) {
      const std::int64_t p1 = std::min(L.length(), p0 + spec.block);
      const std::uint8_t code = mxScaleCode(blockAmax(x, line, line + 1, p0, p1, at), spec.format, spec.mxRounding);
      if (stats && code != kE8m0Nan) ++stats->blockExponents[int(code) - 127];
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t i = L.at(line, p);
        bool over = false;
        // x / 2^e and q * 2^e are exact (NaN for the NaN scale: the block decodes to NaN).
        const float q = multiplyByE8m0(z.cast(divideByE8m0(x[i], code), i, over), code);
        z.record(x[i], q, over);
        out[i] = q;
      }
    }
}

void blockwise(const float* x, float* out, const Lines& L, const QuantSpec& spec, QuantStats* stats) {
  const Quantizer z{spec, stats};
  const auto at = [&L](std::int64_t l, std::int64_t p) { return L.at(l, p); };
  const float fmax = miniMax(spec.format);
  const std::int64_t B = spec.block;
  // Tiles: square (B x B over the matrix) or 1 x B along each line.
  const std::int64_t tileLines = spec.square ? B : 1;
  for (std::int64_t l0 = 0; l0 < L.count(); l0 += tileLines)
    for (std::int64_t p0 = 0; p0 < L.length(); p0 += B) {
      const std::int64_t l1 = std::min(L.count(), l0 + tileLines), p1 = std::min(L.length(), p0 + B);
      const float amax = blockAmax(x, l0, l1, p0, p1, at);
      const float s = blockwiseScale(amax, fmax, spec.powerOfTwo);
      if (stats && amax > 0 && std::isfinite(amax)) ++stats->blockExponents[floorLog2(s)];
      const float inv = 1.0f / s;
      for (std::int64_t l = l0; l < l1; ++l)
        for (std::int64_t p = p0; p < p1; ++p) {
          const std::int64_t i = L.at(l, p);
          bool over = false;
          const float q = z.cast(x[i] * s, i, over) * inv;
          z.record(x[i], q, over);
          out[i] = q;
        }
    }
}

void nvfp4(const float* x, float* out, const Lines& L, const QuantSpec& spec, QuantStats* stats) {
  const std::int64_t n = L.rows * L.cols;
  // The Hadamard transform first (per full block of 16 along the line), into a copy: the tensor
  // scale comes from the transformed values, which are what the GEMM multiplies.
  std::vector<float> transformed;
  const float* src = x;
  if (spec.hadamard) {
    transformed.assign(x, x + n);
    float buf[16];
    for (std::int64_t line = 0; line < L.count(); ++line)
      for (std::int64_t p0 = 0; p0 + 16 <= L.length(); p0 += 16) {
        for (int j = 0; j < 16; ++j) buf[j] = transformed[std::size_t(L.at(line, p0 + j))];
        hadamard16(buf, spec.hadamardSigns);
        for (int j = 0; j < 16; ++j) transformed[std::size_t(L.at(line, p0 + j))] = buf[j];
      }
    src = transformed.data();
  }
  const float S = nvfp4TensorScale(amaxOf(src, n));
  if (stats) stats->scale = S;
  const Quantizer z{spec, stats};
  const auto at = [&L](std::int64_t l, std::int64_t p) { return L.at(l, p); };
  for (std::int64_t line = 0; line < L.count(); ++line)
    for (std::int64_t p0 = 0; p0 < L.length(); p0 += 16) {
      const std::int64_t p1 = std::min(L.length(), p0 + 16);
      const float sb = miniToFloat(nvfp4BlockScaleCode(blockAmax(src, line, line + 1, p0, p1, at), S), MiniFormat::E4M3);
      if (stats && sb > 0) ++stats->blockExponents[floorLog2(sb)];
      // A block whose scale underflows E4M3 is all zeros (its values are far below the tensor's).
      const float mul = sb > 0 ? S / sb : 0.0f;
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t i = L.at(line, p);
        bool over = false;
        const float q = (z.cast(src[i] * mul, i, over) * sb) / S;  // e2m1 x sb exact, / S once
        z.record(src[i], q, over);
        out[i] = q;
      }
    }
}

}  // namespace

void quantizeDequantize(const float* x, float* out, std::int64_t rows, std::int64_t cols,
                        const QuantSpec& spec, QuantStats* stats) {
  if (rows < 0 || cols < 0) throw std::invalid_argument("quantizeDequantize: negative shape");
  if (stats) {
    *stats = QuantStats{};
    stats->amax = amaxOf(x, rows * cols);
  }
  const Lines L{rows, cols, spec.alongRows};
  switch (spec.scaling) {
    case QuantSpec::Scaling::PerTensor: return perTensor(x, out, rows * cols, spec, stats);
    case QuantSpec::Scaling::Mx: return mx(x, out, L, spec, stats);
    case QuantSpec::Scaling::Blockwise: return blockwise(x, out, L, spec, stats);
    case QuantSpec::Scaling::Nvfp4: return nvfp4(x, out, L, spec, stats);
  }
}

void gemmWithAccumulatorModel(const float* a, const float* b, float* c, std::int64_t m,
                              std::int64_t n, std::int64_t k, int bits, int promote) {
  const std::uint32_t keep = bits >= 23 ? 0xFFFFFFFFu : ~((1u << (23 - bits)) - 1u);
  auto narrow = [keep](float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    if ((u & 0x7F800000u) == 0x7F800000u) return v;
    u &= keep;
    std::memcpy(&v, &u, 4);
    return v;
  };
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float total = 0, partial = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        partial = narrow(partial + a[i * k + p] * b[j * k + p]);
        if ((p + 1) % promote == 0 || p + 1 == k) {
          total += partial;
          partial = 0;
        }
      }
      c[i * n + j] = total;
    }
}

}  // namespace amp
