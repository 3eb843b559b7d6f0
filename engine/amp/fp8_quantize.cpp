#include "engine/amp/fp8_quantize.h"
#include "kernels/cpu/parallel_grain.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <omp.h>
#include <limits>
#include <stdexcept>

#include "engine/amp/fp8_block_quantize.h"
#include "engine/amp/fp8_span_rounding.h"
#include "kernels/common/mix64.h"

namespace amp {

double QuantStats::sqnrDb() const {
  if (errorSq == 0) return std::numeric_limits<double>::infinity();
  if (signalSq == 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signalSq / errorSq);
}

double QuantStats::relMse() const { return signalSq > 0 ? errorSq / signalSq : 0.0; }

const char* miniFormatName(MiniFormat f) {
  switch (f) {
    case MiniFormat::E4M3: return "e4m3";
    case MiniFormat::E5M2: return "e5m2";
    case MiniFormat::E3M2: return "e3m2";
    case MiniFormat::E2M3: return "e2m3";
    case MiniFormat::E2M1: return "e2m1";
  }
  return "?";
}

float amaxOf(const float* x, std::int64_t n) {
  // The largest |x| as fp32 bits: for magnitudes the bit order is the value order and a NaN's bits
  // lie above inf's, so a NaN anywhere gives a NaN (as the CUDA kernel's launchAmaxBits). An
  // integer maximum, so the loop is vectorised (a NaN test per value kept it scalar).
  std::uint32_t m = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t a = floatBits(x[i]) & 0x7FFFFFFFu;
    m = a > m ? a : m;
  }
  return bitsToFloat(m);
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

// Where a quantiser writes (fp8_block_quantize.h). codes there are one byte per value, E2M1
// included (quantizeToCodes packs afterwards: two lines handled by two threads may share a
// packed byte).
using Out = fp8detail::QuantOut;

// The cast of one already-scaled value (stochastic bits from the seed and the element's index,
// so a CPU and a GPU, or a resumed run, draw the same), and the statistics of one element. The
// spec's fields are copied and the counts kept here, in locals the compiler can hold in
// registers, and added into the caller's QuantStats once (flush): the per-element work of a
// whole tensor is then a few instructions.
struct Quantizer {
  MiniFormat format;
  Overflow overflow;
  MiniRounder round;
  bool stochastic;
  std::uint64_t seed;
  QuantStats* stats;
  std::int64_t count = 0, nonzero = 0, underflow = 0, overflows = 0, nonFinite = 0;
  double signalSq = 0, errorSq = 0;
  Quantizer(const QuantSpec& spec, QuantStats* s)
      : format(spec.format), overflow(spec.overflow), round(spec.format, spec.overflow), stochastic(spec.stochastic),
        seed(spec.seed), stats(s) {
    if (s && s->wantScaledExponents) scaledBins.assign(128 + 150, 0);  // 2^-149 .. 2^127
  }
  Quantizer(const Quantizer&) = delete;
  ~Quantizer() { flush(); }
  float cast(float scaled, std::int64_t i, bool& over) const {
    if (!stochastic) return round(scaled, &over);
    const std::uint32_t r = static_cast<std::uint32_t>(mix64(seed ^ (std::uint64_t(i) * 0x9E3779B97F4A7C15ull)) >> 32);
    return miniToFloat(floatToMini(scaled, format, overflow, true, r, &over), format);
  }
  // The code of a value cast() returned (exactly representable, or the overflow rule's inf /
  // NaN / max): no rounding left to do.
  std::uint32_t codeOf(float cast) const { return miniCodeOfExact(cast, format); }
  // On histogram steps (stats->wantScaledExponents): the binary exponent of each value as the
  // format receives it (after its scale), so a chart can show where the scale put the tensor
  // against the format's range. Bins for every fp32 exponent; merged into the map at flush.
  std::vector<std::int64_t> scaledBins;
  void recordScaled(float scaled) {
    const std::uint32_t b = floatBits(scaled) & 0x7FFFFFFFu;
    if (b == 0 || b >= 0x7F800000u) return;
    ++scaledBins[std::size_t(floorLog2(bitsToFloat(b)) + 149)];
  }
  void record(float v, float q, bool over) {
    ++count;
    if (!std::isfinite(v)) {
      ++nonFinite;
      return;
    }
    overflows += over;
    nonzero += v != 0;
    underflow += v != 0 && q == 0;
    if (std::isfinite(q)) {
      const double d = double(q) - double(v);
      signalSq += double(v) * v;
      errorSq += d * d;
    }
  }
  void flush() {
    if (!stats) return;
    for (std::size_t e = 0; e < scaledBins.size(); ++e)
      if (scaledBins[e]) {
        stats->scaledExponents[int(e) - 149] += scaledBins[e];
        scaledBins[e] = 0;
      }
    stats->count += count;
    stats->nonzero += nonzero;
    stats->underflow += underflow;
    stats->overflow += overflows;
    stats->nonFinite += nonFinite;
    stats->signalSq += signalSq;
    stats->errorSq += errorSq;
    count = nonzero = underflow = overflows = nonFinite = 0;
    signalSq = errorSq = 0;
  }
};

void perTensor(const float* x, const Out& out, std::int64_t i0, std::int64_t i1, const QuantSpec& spec,
               QuantStats* stats) {
  const float scale = spec.tensorScale, inv = 1.0f / scale;
  Quantizer z(spec, stats);
  if (z.scaledBins.empty()) {
    // Every step but the histogram steps (with or without statistics): fp8_span_rounding.h's
    // vector loops, a span at a time, with the tensor's scale as every value's factor.
    const fp8span::SpanRounder R(spec.format, spec.overflow, spec.stochastic, spec.seed);
    float scales[fp8span::kSpan], ones[fp8span::kSpan];
    std::fill(scales, scales + fp8span::kSpan, scale);
    std::fill(ones, ones + fp8span::kSpan, 1.0f);
    float rounded[fp8span::kSpan], q[fp8span::kSpan];
    std::uint8_t clipped[fp8span::kSpan], codes[fp8span::kSpan];
    fp8span::Counts counts;
    for (std::int64_t b0 = i0; b0 < i1; b0 += fp8span::kSpan) {
      const int n = int(std::min<std::int64_t>(fp8span::kSpan, i1 - b0));
      if (R.roundSpan(x + b0, scales, ones, n, b0, rounded, clipped))
        R.roundSpecials(x + b0, scales, ones, n, b0, rounded, clipped);
      for (int j = 0; j < n; ++j) q[j] = rounded[j] * inv;
      if (stats) fp8span::countSpan(x + b0, q, clipped, n, counts);
      if (out.codes) {
        R.codesOf(rounded, n, codes);
        std::copy(codes, codes + n, out.codes + b0);
      }
      if (out.values) std::copy(q, q + n, out.values + b0);
    }
    if (stats) counts.addTo(*stats, i1 - i0);
    return;
  }
  for (std::int64_t i = i0; i < i1; ++i) {
    bool over = false;
    const float v = x[i];
    const float c = z.cast(v * scale, i, over), q = c * inv;
    if (stats) z.record(v, q, over);
    if (!z.scaledBins.empty()) z.recordScaled(v * scale);
    if (out.codes) out.codes[i] = static_cast<std::uint8_t>(z.codeOf(c));
    if (out.values) out.values[i] = q;
  }
}

// The block's largest magnitude, NaN where the block holds a NaN.
template <class At>
float blockAmax(const float* x, std::int64_t l0, std::int64_t l1, std::int64_t p0, std::int64_t p1, At at) {
  float amax = 0;
  for (std::int64_t l = l0; l < l1; ++l)
    for (std::int64_t p = p0; p < p1; ++p) {
      const float a = std::fabs(x[at(l, p)]);
      if (std::isnan(a)) return a;
      amax = a > amax ? a : amax;  // not std::fmax: a library call here (NaN returned above)
    }
  return amax;
}

// NVFP4 decodes as (e2m1 x s_block) / S: a division per value. With 256 block-scale codes and 16
// value codes there are only 4096 distinct results for a given S, each computed here by that same
// expression (so the same bits), and looked up per value instead (the division was a third of
// the quantiser's and the decoder's time).
std::vector<float> nvfp4ValueTable(float S) {
  std::vector<float> t(256 * 16);
  for (std::uint32_t sc = 0; sc < 256; ++sc) {
    const float sb = miniToFloat(sc, MiniFormat::E4M3);
    for (std::uint32_t c = 0; c < 16; ++c) t[sc * 16 + c] = (miniToFloat(c, MiniFormat::E2M1) * sb) / S;
  }
  return t;
}

// Visits the blocks [p0, p0 + block) of lines [l0, l1): line by line when a line is a row (each
// block contiguous), and block by block across the lines when lines are columns (alongRows), so
// the rows a block spans are read once for all the lines instead of one column at a time (a
// column walk touches a cache line per value: the weight gradient's operands were 3-5x slower).
template <class Fn>
void forEachBlock(const Lines& L, std::int64_t l0, std::int64_t l1, std::int64_t block, bool wholeOnly, Fn fn) {
  const std::int64_t end = wholeOnly ? L.length() - block + 1 : L.length();
  if (!L.alongRows) {
    for (std::int64_t line = l0; line < l1; ++line)
      for (std::int64_t p0 = 0; p0 < end; p0 += block) fn(line, p0);
  } else {
    for (std::int64_t p0 = 0; p0 < end; p0 += block)
      for (std::int64_t line = l0; line < l1; ++line) fn(line, p0);
  }
}

void mx(const float* x, const Out& out, const Lines& L, std::int64_t l0, std::int64_t l1, const QuantSpec& spec,
        QuantStats* stats) {
  Quantizer z(spec, stats);
  const auto at = [&L](std::int64_t l, std::int64_t p) { return L.at(l, p); };
  const std::int64_t perLine = (L.length() + spec.block - 1) / spec.block;
  forEachBlock(L, l0, l1, spec.block, false, [&](std::int64_t line, std::int64_t p0) {
      const std::int64_t p1 = std::min(L.length(), p0 + spec.block);
      const std::uint8_t code = mxScaleCode(blockAmax(x, line, line + 1, p0, p1, at), spec.format, spec.mxRounding);
      if (stats && code != kE8m0Nan) ++stats->blockExponents[int(code) - 127];
      if (out.scaleCodes) out.scaleCodes[line * perLine + p0 / spec.block] = code;
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t i = L.at(line, p);
        bool over = false;
        // x / 2^e and q * 2^e are exact (NaN for the NaN scale: the block decodes to NaN).
        const float scaled = divideByE8m0(x[i], code);
        const float c = z.cast(scaled, i, over);
        const float q = multiplyByE8m0(c, code);
        if (stats) z.record(x[i], q, over);
        if (!z.scaledBins.empty()) z.recordScaled(scaled);
        if (out.codes) out.codes[i] = static_cast<std::uint8_t>(z.codeOf(c));
        if (out.values) out.values[i] = q;
      }
    });
}

// Lines [t0, t1) of tiles: tile t covers lines t * tileLines ... (one line unless square).
void blockwise(const float* x, const Out& out, const Lines& L, std::int64_t t0, std::int64_t t1, const QuantSpec& spec,
               QuantStats* stats) {
  Quantizer z(spec, stats);
  const float fmax = miniMax(spec.format);
  const std::int64_t B = spec.block;
  // Tiles: square (B x B over the matrix) or 1 x B along each line. Within a tile, rows outer
  // (contiguous reads) whichever way the lines run.
  const std::int64_t tileLines = spec.square ? B : 1;
  const auto tile = [&](std::int64_t l0, std::int64_t p0) {
    const std::int64_t l1 = std::min(L.count(), l0 + tileLines), p1 = std::min(L.length(), p0 + B);
    // The tile as matrix rows [r0, r1) x columns [c0, c1).
    const std::int64_t r0 = L.alongRows ? p0 : l0, r1 = L.alongRows ? p1 : l1;
    const std::int64_t c0 = L.alongRows ? l0 : p0, c1 = L.alongRows ? l1 : p1;
    float amax = 0;
    for (std::int64_t r = r0; r < r1 && !std::isnan(amax); ++r)
      for (std::int64_t c = c0; c < c1; ++c) {
        const float a = std::fabs(x[r * L.cols + c]);
        if (std::isnan(a)) {
          amax = a;
          break;
        }
        amax = a > amax ? a : amax;
      }
    const float s = blockwiseScale(amax, fmax, spec.powerOfTwo);
    if (stats && amax > 0 && std::isfinite(amax)) ++stats->blockExponents[floorLog2(s)];
    const float inv = 1.0f / s;
    if (out.scaleFactors) out.scaleFactors[l0 / tileLines * ((L.length() + B - 1) / B) + p0 / B] = inv;
    for (std::int64_t r = r0; r < r1; ++r)
      for (std::int64_t c = c0; c < c1; ++c) {
        const std::int64_t i = r * L.cols + c;
        bool over = false;
        const float v = z.cast(x[i] * s, i, over), q = v * inv;
        if (stats) z.record(x[i], q, over);
        if (!z.scaledBins.empty()) z.recordScaled(x[i] * s);
        if (out.codes) out.codes[i] = static_cast<std::uint8_t>(z.codeOf(v));
        if (out.values) out.values[i] = q;
      }
  };
  const std::int64_t first = t0 * tileLines, last = std::min(L.count(), t1 * tileLines);
  if (L.alongRows && tileLines == 1) {  // 1 x B down the columns: a block's rows once for all lines
    for (std::int64_t p0 = 0; p0 < L.length(); p0 += B)
      for (std::int64_t l0 = first; l0 < last; ++l0) tile(l0, p0);
  } else {
    for (std::int64_t l0 = first; l0 < last; l0 += tileLines)
      for (std::int64_t p0 = 0; p0 < L.length(); p0 += B) tile(l0, p0);
  }
}

// NVFP4's 16x16 Hadamard transform of lines [l0, l1), in place (per full block of 16 along the
// line; a last partial block is left as it is, in both operands alike).
void hadamardLines(float* v, const Lines& L, std::int64_t l0, std::int64_t l1, std::uint16_t signs) {
  if (L.alongRows) {
    // Blocks down the columns (the weight gradient's operands): hadamard16's steps with each of
    // its 16 values a row segment [l0, l1), so every column gets the same additions in the same
    // order and the loops run along contiguous memory (a column walk touched a cache line a value).
    const std::int64_t width = l1 - l0;
    for (std::int64_t p0 = 0; p0 + 16 <= L.rows; p0 += 16) {
      float* row[16];
      for (int i = 0; i < 16; ++i) row[i] = v + (p0 + i) * L.cols + l0;
      for (int i = 0; i < 16; ++i)
        if ((signs >> i) & 1u)
          for (std::int64_t c = 0; c < width; ++c) row[i][c] = -row[i][c];
      for (int len = 1; len < 16; len <<= 1)
        for (int i = 0; i < 16; i += 2 * len)
          for (int j = i; j < i + len; ++j) {
            float* __restrict a = row[j];
            float* __restrict b = row[j + len];
            for (std::int64_t c = 0; c < width; ++c) {
              const float x = a[c], y = b[c];
              a[c] = x + y;
              b[c] = x - y;
            }
          }
      for (int i = 0; i < 16; ++i)
        for (std::int64_t c = 0; c < width; ++c) row[i][c] *= 0.25f;
    }
    return;
  }
  float buf[16];
  forEachBlock(L, l0, l1, 16, true, [&](std::int64_t line, std::int64_t p0) {
    for (int j = 0; j < 16; ++j) buf[j] = v[L.at(line, p0 + j)];
    hadamard16(buf, signs);
    for (int j = 0; j < 16; ++j) v[L.at(line, p0 + j)] = buf[j];
  });
}

// table: nvfp4ValueTable(S), the decoded value of every (block scale code, E2M1 code) pair.
void nvfp4(const float* src, const Out& out, const Lines& L, std::int64_t l0, std::int64_t l1, float S,
           const float* table, const QuantSpec& spec, QuantStats* stats) {
  Quantizer z(spec, stats);
  const auto at = [&L](std::int64_t l, std::int64_t p) { return L.at(l, p); };
  const std::int64_t perLine = (L.length() + 15) / 16;
  forEachBlock(L, l0, l1, 16, false, [&](std::int64_t line, std::int64_t p0) {
      const std::int64_t p1 = std::min(L.length(), p0 + 16);
      const std::uint32_t scaleCode = nvfp4BlockScaleCode(blockAmax(src, line, line + 1, p0, p1, at), S);
      const float sb = miniToFloat(scaleCode, MiniFormat::E4M3);
      if (stats && sb > 0) ++stats->blockExponents[floorLog2(sb)];
      if (out.scaleCodes) out.scaleCodes[line * perLine + p0 / 16] = static_cast<std::uint8_t>(scaleCode);
      // A block whose scale underflows E4M3 is all zeros (its values are far below the tensor's).
      const float mul = sb > 0 ? S / sb : 0.0f;
      const float* values = table + scaleCode * 16;
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t i = L.at(line, p);
        bool over = false;
        const float c = z.cast(src[i] * mul, i, over);
        const std::uint32_t code = z.codeOf(c);
        const float q = values[code];  // (c x sb) / S, from the table
        if (stats) z.record(src[i], q, over);
        if (!z.scaledBins.empty()) z.recordScaled(src[i] * mul);
        if (out.codes) out.codes[i] = static_cast<std::uint8_t>(code);
        if (out.values) out.values[i] = q;
      }
    });
}

void merge(QuantStats& into, const QuantStats& part) {
  into.count += part.count;
  into.nonzero += part.nonzero;
  into.underflow += part.underflow;
  into.overflow += part.overflow;
  into.nonFinite += part.nonFinite;
  into.signalSq += part.signalSq;
  into.errorSq += part.errorSq;
  for (const auto& [e, n] : part.blockExponents) into.blockExponents[e] += n;
  for (const auto& [e, n] : part.scaledExponents) into.scaledExponents[e] += n;
}

// body(first, last, stats) over [0, units) in parts, which the threads share when the work is
// large enough to pay for them (an op under ~64k values runs on one: no fan-out for small ops).
// The parts depend on the work alone, not on the threads, and their statistics are merged in
// part order: the figures are the same bits on any number of threads (the trainer's thread tuner
// changes the count between steps; the quantised values never depend on it).
constexpr int kStatParts = 8;
template <class Body>
void parallelUnits(std::int64_t units, std::int64_t work, QuantStats* stats, Body body) {
  const int parts = work >= (1 << 16) ? int(std::min<std::int64_t>(kStatParts, std::max<std::int64_t>(1, units))) : 1;
  if (parts == 1) {
    body(0, units, stats);
    return;
  }
  const int threads = std::max(1, std::min(cpu::maxLoopThreads(), parts));
  std::vector<QuantStats> partStats(static_cast<std::size_t>(parts));
  if (stats)
    for (QuantStats& p : partStats) p.wantScaledExponents = stats->wantScaledExponents;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int t = 0; t < parts; ++t)
    body(units * t / parts, units * (t + 1) / parts, stats ? &partStats[std::size_t(t)] : nullptr);
  if (stats)
    for (const QuantStats& p : partStats) merge(*stats, p);
}

}  // namespace

namespace {

// The one quantiser behind quantizeDequantize and quantizeToCodes; returns the tensor scale
// (PerTensor: spec's, Nvfp4: S, else 1).
float quantizeInto(const float* x, const Out& out, std::int64_t rows, std::int64_t cols, const QuantSpec& spec,
                   QuantStats* stats) {
  if (rows < 0 || cols < 0) throw std::invalid_argument("quantize: negative shape");
  if (stats) {
    const bool wantScaled = stats->wantScaledExponents;
    *stats = QuantStats{};
    stats->wantScaledExponents = wantScaled;
    stats->amax = amaxOf(x, rows * cols);
  }
  const Lines L{rows, cols, spec.alongRows};
  const std::int64_t n = rows * cols;
  // The block recipes' vector loops (fp8_block_quantize.h) on every step but the histogram steps,
  // whose exponents of the scaled values only the per-element loops below record.
  const bool fast = !(stats && stats->wantScaledExponents);
  switch (spec.scaling) {
    case QuantSpec::Scaling::PerTensor:
      parallelUnits(n, n, stats, [&](std::int64_t a, std::int64_t b, QuantStats* st) { perTensor(x, out, a, b, spec, st); });
      if (stats) stats->scale = spec.tensorScale;
      return spec.tensorScale;
    case QuantSpec::Scaling::Mx:
      parallelUnits(L.count(), n, stats, [&](std::int64_t a, std::int64_t b, QuantStats* st) {
        if (fast) fp8detail::quantizeBlocksFast(x, out, rows, cols, spec, 1.0f, a, b, st);
        else mx(x, out, L, a, b, spec, st);
      });
      return 1.0f;
    case QuantSpec::Scaling::Blockwise: {
      const std::int64_t tileLines = spec.square ? spec.block : 1;
      parallelUnits((L.count() + tileLines - 1) / tileLines, n, stats, [&](std::int64_t a, std::int64_t b, QuantStats* st) {
        if (fast) fp8detail::quantizeBlocksFast(x, out, rows, cols, spec, 1.0f, a, b, st);
        else blockwise(x, out, L, a, b, spec, st);
      });
      return 1.0f;
    }
    case QuantSpec::Scaling::Nvfp4: {
      // The transform first, into a copy: the tensor scale comes from the transformed values,
      // which are what the GEMM multiplies.
      std::vector<float> transformed;
      const float* src = x;
      if (spec.hadamard) {
        transformed.assign(x, x + n);
        parallelUnits(L.count(), n, nullptr, [&](std::int64_t a, std::int64_t b, QuantStats*) {
          hadamardLines(transformed.data(), L, a, b, spec.hadamardSigns);
        });
        src = transformed.data();
      }
      // The tensor's amax is the statistics' own when nothing transformed it (one pass less).
      const float S = nvfp4TensorScale(stats && !spec.hadamard ? float(stats->amax) : amaxOf(src, n));
      const std::vector<float> table = fast ? std::vector<float>{} : nvfp4ValueTable(S);
      parallelUnits(L.count(), n, stats, [&](std::int64_t a, std::int64_t b, QuantStats* st) {
        if (fast) fp8detail::quantizeBlocksFast(src, out, rows, cols, spec, S, a, b, st);
        else nvfp4(src, out, L, a, b, S, table.data(), spec, st);
      });
      if (stats) stats->scale = S;
      return S;
    }
  }
  return 1.0f;
}

}  // namespace

void quantizeDequantize(const float* x, float* out, std::int64_t rows, std::int64_t cols,
                        const QuantSpec& spec, QuantStats* stats) {
  Out o;
  o.values = out;
  quantizeInto(x, o, rows, cols, spec, stats);
}

void quantizeToCodes(const float* x, std::int64_t rows, std::int64_t cols, const QuantSpec& spec,
                     std::uint8_t* codes, std::uint8_t* scaleCodes, float* scaleFactors, float* tensorScale,
                     QuantStats* stats, float* dequantised) {
  const std::int64_t n = rows * cols;
  const bool packed = spec.format == MiniFormat::E2M1;
  std::vector<std::uint8_t> wide;  // E2M1: a byte per value first, packed below
  if (packed) wide.resize(static_cast<std::size_t>(n));
  Out o;
  o.values = dequantised;
  o.codes = packed ? wide.data() : codes;
  o.scaleCodes = scaleCodes;
  o.scaleFactors = scaleFactors;
  const float S = quantizeInto(x, o, rows, cols, spec, stats);
  if (tensorScale) *tensorScale = S;
  if (packed)
    for (std::int64_t i = 0; i < n; i += 2)
      codes[i / 2] = packE2m1(wide[std::size_t(i)], i + 1 < n ? wide[std::size_t(i + 1)] : 0u);
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
