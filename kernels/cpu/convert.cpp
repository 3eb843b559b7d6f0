#include "kernels/cpu/convert.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "kernels/common/float16.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define AMP_CONVERT_X86 1
#endif

namespace amp {
namespace {

// ---- Scalar reference loops (the definition of "correct"; also the fallback) ----------------

void f32ToF16Scalar(const float* src, std::uint16_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = floatToHalfBits(src[i]);
}
void f16ToF32Scalar(const std::uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = halfBitsToFloat(src[i]);
}
void f32ToBf16Scalar(const float* src, std::uint16_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = floatToBf16Bits(src[i]);
}
void bf16ToF32Scalar(const std::uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = bf16BitsToFloat(src[i]);
}
void roundF16Scalar(float* data, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) data[i] = roundToHalf(data[i]);
}
void roundBf16Scalar(float* data, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) data[i] = roundToBf16(data[i]);
}

#ifdef AMP_CONVERT_X86

// GCC 12's AVX-512 intrinsic headers trip a false -Wmaybe-uninitialized (GCC bug 105593: the
// self-initialised "undefined" vectors they pass as unused merge sources); fixed in GCC 13.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// Explicit round-to-nearest-even in the instruction's immediate, so a caller that changed
// MXCSR.RC (fesetround) cannot change the results. SAE: no FP exception flags raised.
// vcvtps2ph keeps fp16 subnormal results even under MXCSR.FTZ, fp32 subnormal inputs (what DAZ
// would zero) round to +-0 in fp16 anyway, and vcvtph2ps widens fp16 subnormals under DAZ, so
// FTZ/DAZ cannot change the results either (the unit test checks this with both flags set). NaNs: the hardware keeps sign and top payload and
// sets the quiet bit, exactly like float16.h.
constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// ---- AVX-512 (F + BW + VL: BW/VL give the 16-bit masked loads/stores for the tails) ---------
#define AMP_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

AMP_TARGET_AVX512 inline __mmask16 tailMask(std::size_t left) {
  return static_cast<__mmask16>((1u << left) - 1u);  // left < 16
}

AMP_TARGET_AVX512 void f32ToF16Avx512(const float* src, std::uint16_t* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {  // two vectors per iteration hide the conversion latency
    const __m256i a = _mm512_cvtps_ph(_mm512_loadu_ps(src + i), kRne);
    const __m256i b = _mm512_cvtps_ph(_mm512_loadu_ps(src + i + 16), kRne);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + 16), b);
  }
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), kRne));
  if (i < n) {  // masked: lanes past the end are neither read nor written (no faults)
    const __mmask16 m = tailMask(n - i);
    _mm256_mask_storeu_epi16(dst + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), kRne));
  }
}

AMP_TARGET_AVX512 void f16ToF32Avx512(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    const __m512 b =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 16)));
    _mm512_storeu_ps(dst + i, a);
    _mm512_storeu_ps(dst + i + 16, b);
  }
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(
        dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  if (i < n) {
    const __mmask16 m = tailMask(n - i);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
  }
}

// fp32 -> bf16 bits, 16 lanes, in 32-bit lanes (high half zero). Not vcvtneps2bf16: that
// instruction flushes subnormal inputs to zero, and bf16 keeps subnormals. Same integer RNE as
// float16.h: add 0x7FFF plus the kept lsb, then drop 16 bits; NaNs get the quiet bit instead.
AMP_TARGET_AVX512 inline __m512i bf16BitsAvx512(__m512i x) {
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF)),
                                                _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_or_epi32(rounded, nan, _mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x0040));
}

AMP_TARGET_AVX512 void f32ToBf16Avx512(const float* src, std::uint16_t* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_loadu_si512(src + i);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtepi32_epi16(bf16BitsAvx512(x)));
  }
  if (i < n) {
    const __mmask16 m = tailMask(n - i);
    const __m512i x = _mm512_maskz_loadu_epi32(m, src + i);
    _mm256_mask_storeu_epi16(dst + i, m, _mm512_cvtepi32_epi16(bf16BitsAvx512(x)));
  }
}

AMP_TARGET_AVX512 void bf16ToF32Avx512(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_si512(dst + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
  }
  if (i < n) {
    const __mmask16 m = tailMask(n - i);
    const __m256i b = _mm256_maskz_loadu_epi16(m, src + i);
    _mm512_mask_storeu_epi32(dst + i, m, _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
  }
}

AMP_TARGET_AVX512 void roundF16Avx512(float* data, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(data + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(data + i), kRne)));
  if (i < n) {
    const __mmask16 m = tailMask(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(m, data + i);
    _mm512_mask_storeu_ps(data + i, m, _mm512_cvtph_ps(_mm512_cvtps_ph(x, kRne)));
  }
}

AMP_TARGET_AVX512 void roundBf16Avx512(float* data, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_loadu_si512(data + i);
    _mm512_storeu_si512(data + i, _mm512_slli_epi32(bf16BitsAvx512(x), 16));
  }
  if (i < n) {
    const __mmask16 m = tailMask(n - i);
    const __m512i x = _mm512_maskz_loadu_epi32(m, data + i);
    _mm512_mask_storeu_epi32(data + i, m, _mm512_slli_epi32(bf16BitsAvx512(x), 16));
  }
}

// ---- AVX2 + F16C (CPUs without AVX-512); 8 or 16 lanes, scalar tails ------------------------
#define AMP_TARGET_AVX2 __attribute__((target("avx2,f16c")))

AMP_TARGET_AVX2 void f32ToF16Avx2(const float* src, std::uint16_t* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  f32ToF16Scalar(src + i, dst + i, n - i);
}

AMP_TARGET_AVX2 void f16ToF32Avx2(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  f16ToF32Scalar(src + i, dst + i, n - i);
}

// Same integer RNE as bf16BitsAvx512, 8 lanes. NaN test with a signed compare is fine: the
// operand has its sign bit cleared.
AMP_TARGET_AVX2 inline __m256i bf16BitsAvx2(__m256i x) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF)),
                                         _mm256_set1_epi32(0x7F800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x0040));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

AMP_TARGET_AVX2 void f32ToBf16Avx2(const float* src, std::uint16_t* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = bf16BitsAvx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    const __m256i b =
        bf16BitsAvx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 8)));
    // packus works per 128-bit lane (values are <= 0xFFFF, so no saturation): a0 b0 a1 b1 in
    // 64-bit quarters; the permute puts them back in order a0 a1 b0 b1.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
  }
  f32ToBf16Scalar(src + i, dst + i, n - i);
}

AMP_TARGET_AVX2 void bf16ToF32Avx2(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
  }
  bf16ToF32Scalar(src + i, dst + i, n - i);
}

AMP_TARGET_AVX2 void roundF16Avx2(float* data, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(data + i),
                                                               _MM_FROUND_TO_NEAREST_INT)));
  roundF16Scalar(data + i, n - i);
}

AMP_TARGET_AVX2 void roundBf16Avx2(float* data, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(data + i),
                        _mm256_slli_epi32(bf16BitsAvx2(x), 16));
  }
  roundBf16Scalar(data + i, n - i);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif  // AMP_CONVERT_X86

ConvertIsa detectIsa() {
#ifdef AMP_CONVERT_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return ConvertIsa::Avx512;
  // F16C straight from CPUID leaf 1 (ECX bit 29): not every compiler's __builtin_cpu_supports
  // knows "f16c" (clang 14 does not). OS support for the YMM state is implied by "avx2".
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));
  if (__builtin_cpu_supports("avx2") && f16c) return ConvertIsa::Avx2F16c;
#endif
  return ConvertIsa::Scalar;
}

bool sameIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// AMP_CONVERT_ISA=scalar|avx2|avx512 (any case) caps the level, as ONEDNN_MAX_CPU_ISA caps oneDNN's: the
// test suite runs the converters' AVX2 and scalar paths on an AVX-512 machine this way.
ConvertIsa initialIsa() {
  const char* cap = std::getenv("AMP_CONVERT_ISA");
  if (!cap || !*cap) return bestConvertIsa();
  for (ConvertIsa isa : {ConvertIsa::Scalar, ConvertIsa::Avx2F16c, ConvertIsa::Avx512})
    if (sameIgnoringCase(cap, convertIsaEnvName(isa)))
      return isa > bestConvertIsa() ? bestConvertIsa() : isa;
  std::fprintf(stderr, "AMP_CONVERT_ISA=%s is not one of scalar, avx2, avx512: ignored\n", cap);
  return bestConvertIsa();
}

// Detected once; a relaxed atomic load per array call costs nothing next to the loop.
std::atomic<ConvertIsa>& activeIsa() {
  static std::atomic<ConvertIsa> isa{initialIsa()};
  return isa;
}

// Picks the implementation for the active level. The #ifdef keeps non-x86 builds scalar-only.
template <typename Fn>
Fn pick(Fn scalar, [[maybe_unused]] Fn avx2, [[maybe_unused]] Fn avx512) {
#ifdef AMP_CONVERT_X86
  switch (activeIsa().load(std::memory_order_relaxed)) {
    case ConvertIsa::Avx512: return avx512;
    case ConvertIsa::Avx2F16c: return avx2;
    case ConvertIsa::Scalar: break;
  }
#endif
  return scalar;
}

#ifdef AMP_CONVERT_X86
#define AMP_PICK(scalar, avx2, avx512) pick(scalar, avx2, avx512)
#else
#define AMP_PICK(scalar, avx2, avx512) pick(scalar, scalar, scalar)
#endif

}  // namespace

void convertF32ToF16(const float* src, std::uint16_t* dst, std::size_t n) {
  AMP_PICK(f32ToF16Scalar, f32ToF16Avx2, f32ToF16Avx512)(src, dst, n);
}
void convertF16ToF32(const std::uint16_t* src, float* dst, std::size_t n) {
  AMP_PICK(f16ToF32Scalar, f16ToF32Avx2, f16ToF32Avx512)(src, dst, n);
}
void convertF32ToBf16(const float* src, std::uint16_t* dst, std::size_t n) {
  AMP_PICK(f32ToBf16Scalar, f32ToBf16Avx2, f32ToBf16Avx512)(src, dst, n);
}
void convertBf16ToF32(const std::uint16_t* src, float* dst, std::size_t n) {
  AMP_PICK(bf16ToF32Scalar, bf16ToF32Avx2, bf16ToF32Avx512)(src, dst, n);
}
void roundF32ThroughF16(float* data, std::size_t n) {
  AMP_PICK(roundF16Scalar, roundF16Avx2, roundF16Avx512)(data, n);
}
void roundF32ThroughBf16(float* data, std::size_t n) {
  AMP_PICK(roundBf16Scalar, roundBf16Avx2, roundBf16Avx512)(data, n);
}

std::string_view convertIsaEnvName(ConvertIsa isa) {
  switch (isa) {
    case ConvertIsa::Scalar: return "scalar";
    case ConvertIsa::Avx2F16c: return "avx2";
    case ConvertIsa::Avx512: return "avx512";
  }
  return "?";
}

std::string_view convertIsaName(ConvertIsa isa) {
  switch (isa) {
    case ConvertIsa::Scalar: return "scalar";
    case ConvertIsa::Avx2F16c: return "avx2+f16c";
    case ConvertIsa::Avx512: return "avx512";
  }
  return "?";
}

ConvertIsa bestConvertIsa() {
  static const ConvertIsa best = detectIsa();
  return best;
}

ConvertIsa activeConvertIsa() { return activeIsa().load(std::memory_order_relaxed); }

ConvertIsa setConvertIsa(ConvertIsa wanted) {
  const ConvertIsa isa = wanted > bestConvertIsa() ? bestConvertIsa() : wanted;
  activeIsa().store(isa, std::memory_order_relaxed);
  return isa;
}

}  // namespace amp
