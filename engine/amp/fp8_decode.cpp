// decodeCodes (fp8_quantize.h): a quantised operand back to fp32 for the CPU's GEMMs, which
// decode both operands of every fp8 GEMM (a tenth of an MXFP8 step when it went value by value,
// each with its block's index, a division, and E8M0's NaN test). Here a row at a time: the
// factors of the row's blocks laid out along the row first (for blocks down the columns, once
// per block row), then one loop over the row that the compiler vectorises. Each value is the
// expression QuantDecoder (kernels/common/quantized_layout.h) and the quantisers evaluate, so the
// bits are theirs: x (1 / scale), x 2^e as two power-of-two products (NaN for E8M0's NaN code),
// x (1 / s), (x s_block) / S.
#include <algorithm>
#include <omp.h>
#include <vector>

#include "engine/amp/fp8_quantize.h"
#include "kernels/cpu/parallel_grain.h"

namespace amp {

namespace {

// A block's two factors: value = (code's value x a) x b, or / b for NVFP4.
void blockFactors(const QuantSpec& spec, const std::uint8_t* scaleCodes, const float* scaleFactors, float S,
                  std::int64_t block, float& a, float& b) {
  switch (spec.scaling) {
    case QuantScaling::Mx: {
      const std::uint8_t code = scaleCodes[block];
      if (code == kE8m0Nan) {
        a = b = bitsToFloat(0x7FC00000u);
        return;
      }
      const int e = int(code) - 127, half = e / 2;  // multiplyByE8m0's two steps
      a = bitsToFloat(static_cast<std::uint32_t>(127 + half) << 23);
      b = bitsToFloat(static_cast<std::uint32_t>(127 + (e - half)) << 23);
      return;
    }
    case QuantScaling::Blockwise: a = scaleFactors[block], b = 1.0f; return;
    case QuantScaling::Nvfp4: a = miniToFloat(scaleCodes[block], MiniFormat::E4M3), b = S; return;
    case QuantScaling::PerTensor: break;
  }
  a = b = 1.0f;
}

// A format's codes to fp32 by their fields, 8 at a time (GCC does not gather from a table on
// this target): a normal code's exponent and mantissa moved into place, a subnormal's mantissa
// times the format's quantum (exact), NaN and inf by mask. The same values as miniToFloat for
// every code of every format (tests/unit/test_fp8_block_fast.cpp checks all 256).
struct CodeDecoder {
  std::uint32_t width, man, magMask, manMask, rebias, nanMag, infExp;
  float quantum;
  explicit CodeDecoder(MiniFormat f) {
    const MiniLayout L = miniLayout(f);
    width = std::uint32_t(L.expBits + L.manBits);
    man = std::uint32_t(L.manBits);
    magMask = (1u << width) - 1u;
    manMask = (1u << man) - 1u;
    rebias = std::uint32_t(127 - L.bias);
    nanMag = L.specials == 1 ? magMask : 0xFFFFFFFFu;                // "fn": only S.1111.111
    infExp = L.specials == 2 ? (1u << L.expBits) - 1u : 0xFFFFFFFFu;  // IEEE: all-ones exponent
    quantum = bitsToFloat(static_cast<std::uint32_t>(1 - L.bias - L.manBits + 127) << 23);
  }
  void decode(const std::uint8_t* __restrict code, std::int64_t n, float* __restrict out) const {
    const std::uint32_t width_ = width, man_ = man, magMask_ = magMask, manMask_ = manMask, rebias_ = rebias,
                        nanMag_ = nanMag, infExp_ = infExp;
    const float quantum_ = quantum;
    for (std::int64_t c = 0; c < n; ++c) {
      const std::uint32_t x = code[c];
      const std::uint32_t sign = ((x >> width_) & 1u) << 31;
      const std::uint32_t mag = x & magMask_, e = mag >> man_, m = mag & manMask_;
      const std::uint32_t normal = ((e + rebias_) << 23) | (m << (23 - man_));
      // Masks, not selects: a float product under a condition is a branch to GCC.
      const float sub = (bitsToFloat(0x4B000000u | m) - 8388608.0f) * quantum_;
      const std::uint32_t isNormal = 0u - static_cast<std::uint32_t>(e != 0);
      std::uint32_t bits = (normal & isNormal) | (floatBits(sub) & ~isNormal);
      const std::uint32_t isNan = 0u - static_cast<std::uint32_t>((mag == nanMag_) | ((e == infExp_) & (m != 0)));
      const std::uint32_t isInf = 0u - static_cast<std::uint32_t>((e == infExp_) & (m == 0));
      bits = (bits & ~(isNan | isInf)) | (0x7FC00000u & isNan) | (0x7F800000u & isInf);
      out[c] = bitsToFloat(bits | sign);
    }
  }
};

}  // namespace

void decodeFormatCodes(const std::uint8_t* codes, std::int64_t n, MiniFormat f, float* out) {
  CodeDecoder(f).decode(codes, n, out);
}

void decodeCodes(const std::uint8_t* codes, const std::uint8_t* scaleCodes, const float* scaleFactors,
                 float tensorScale, std::int64_t rows, std::int64_t cols, const QuantSpec& spec, float* out) {
  const QuantLayout L{rows, cols, spec.alongRows, spec.block, spec.square};
  const bool nibbles = spec.format == MiniFormat::E2M1;
  const CodeDecoder values(spec.format);
  const float inv = 1.0f / tensorScale;
  const std::int64_t perLine = L.blocksPerLine(), tile = L.tileLines(), B = spec.block;
  const int threads = rows * cols >= (1 << 16) ? std::max(1, std::min<int>(cpu::maxLoopThreads(), int(rows))) : 1;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::int64_t r0 = rows * t / nt, r1 = rows * (t + 1) / nt;
    std::vector<std::uint8_t> wide(nibbles ? static_cast<std::size_t>(cols) : 0u);
    std::vector<float> fa(static_cast<std::size_t>(cols)), fb(static_cast<std::size_t>(cols));
    std::int64_t factorsOf = -1;  // the block row the factors were laid out for
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::uint8_t* code = codes + r * cols;
      if (nibbles) {  // two to a byte, the even index low
        std::uint8_t* w = wide.data();
        const std::int64_t first = r * cols;
        if ((first & 1) == 0) {  // the row starts on a byte: whole bytes, a vector loop
          const std::uint8_t* bytes = codes + first / 2;
          for (std::int64_t k = 0; k < cols / 2; ++k) {
            w[2 * k] = static_cast<std::uint8_t>(bytes[k] & 0xFu);
            w[2 * k + 1] = static_cast<std::uint8_t>(bytes[k] >> 4);
          }
          if (cols & 1) w[cols - 1] = static_cast<std::uint8_t>(bytes[cols / 2] & 0xFu);
        } else {  // an odd row of an odd width starts mid-byte
          for (std::int64_t c = 0; c < cols; ++c) {
            const std::int64_t i = first + c;
            w[c] = static_cast<std::uint8_t>((i & 1) ? codes[i >> 1] >> 4 : codes[i >> 1] & 0xFu);
          }
        }
        code = w;
      }
      float* o = out + r * cols;
      values.decode(code, cols, o);
      if (spec.scaling == QuantScaling::PerTensor) {
        for (std::int64_t c = 0; c < cols; ++c) o[c] = o[c] * inv;
        continue;
      }
      // Blocks along the row change with every row (every `tile` rows for square tiles); blocks
      // down the columns with every B rows.
      const std::int64_t key = L.alongRows ? r / B : r / tile;
      if (key != factorsOf) {
        factorsOf = key;
        if (!L.alongRows) {
          for (std::int64_t k = 0; k * B < cols; ++k) {
            float a, b;
            blockFactors(spec, scaleCodes, scaleFactors, tensorScale, (r / tile) * perLine + k, a, b);
            std::fill(fa.begin() + k * B, fa.begin() + std::min(cols, (k + 1) * B), a);
            std::fill(fb.begin() + k * B, fb.begin() + std::min(cols, (k + 1) * B), b);
          }
        } else {
          for (std::int64_t c = 0; c < cols; ++c)
            blockFactors(spec, scaleCodes, scaleFactors, tensorScale, (c / tile) * perLine + r / B, fa[std::size_t(c)],
                         fb[std::size_t(c)]);
        }
      }
      const float* a = fa.data();
      const float* b = fb.data();
      switch (spec.scaling) {
        case QuantScaling::Mx:
          for (std::int64_t c = 0; c < cols; ++c) o[c] = (o[c] * a[c]) * b[c];
          break;
        case QuantScaling::Blockwise:
          for (std::int64_t c = 0; c < cols; ++c) o[c] = o[c] * a[c];
          break;
        case QuantScaling::Nvfp4:
          for (std::int64_t c = 0; c < cols; ++c) o[c] = (o[c] * a[c]) / b[c];
          break;
        case QuantScaling::PerTensor: break;
      }
    }
  }
}

}  // namespace amp
