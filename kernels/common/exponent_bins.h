// Binning of values by binary exponent, for the gradient/activation histograms.
// Bin k (0..kHistExpBins-1) holds |x| in [2^(kHistMinExp+k), 2^(kHistMinExp+k+1)); the first bin
// also holds every smaller non-zero value and the last every larger finite one, so no value is
// lost. Then come the zero, inf and nan bins.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/common/float16.h"
#include "kernels/common/host_device.h"

namespace amp {

constexpr int kHistMinExp = -40;
constexpr int kHistMaxExp = 17;
constexpr int kHistExpBins = kHistMaxExp - kHistMinExp + 1;  // 58
constexpr int kHistBinZero = kHistExpBins;
constexpr int kHistBinInf = kHistExpBins + 1;
constexpr int kHistBinNan = kHistExpBins + 2;
constexpr int kHistBins = kHistExpBins + 3;

// Thresholds of the fp16 format (IEEE binary16) that the histograms report against.
constexpr double kFp16MinSubnormal = 5.9604644775390625e-08;  // 2^-24
constexpr double kFp16MinNormal = 6.103515625e-05;             // 2^-14
constexpr double kFp16Max = 65504.0;

// Unbiased binary exponent of a finite non-zero double (exact, subnormals included).
AMP_HD inline int binaryExponent(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  int biased = static_cast<int>((bits >> 52) & 0x7FF);
  if (biased != 0) return biased - 1023;
  // Subnormal double: exponent from the leading mantissa bit.
  std::uint64_t mant = bits & ((std::uint64_t{1} << 52) - 1);
  int e = -1022;
  while (!(mant & (std::uint64_t{1} << 52))) {
    mant <<= 1;
    --e;
  }
  return e;
}

AMP_HD inline int exponentBin(double v) {
  if (v != v) return kHistBinNan;
  if (v == 0.0) return kHistBinZero;
  const double a = v < 0 ? -v : v;
  if (a > 1.7976931348623157e308) return kHistBinInf;
  int e = binaryExponent(a);
  if (e < kHistMinExp) e = kHistMinExp;
  if (e > kHistMaxExp) e = kHistMaxExp;
  return e - kHistMinExp;
}

// Where an fp32 value times 2^shift lands, computed from its bits: exact (a power-of-two
// multiplier only moves the exponent), also when the scaled magnitude would leave fp32's range,
// since the exponent is an integer here. The flags are the fp16 range counts it adds to.
struct ScaledBin {
  int bin = 0;
  bool nonFinite = false, overflow = false, underflow = false, subnormal = false;
};

AMP_HD inline int leadingBitPosition(std::uint32_t x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return 31 - __clz(x);
#else
  return 31 - __builtin_clz(x);
#endif
}

AMP_HD inline ScaledBin binScaledByPowerOfTwo(float v, int shift) {
  constexpr std::uint32_t kFp16MaxMantissa = 0x7FE000;  // 65504 = 1.11111111110b x 2^15
  ScaledBin r;
  const std::uint32_t a = floatBits(v) & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) {
    r.nonFinite = true;
    r.overflow = a == 0x7F800000u;
    r.bin = r.overflow ? kHistBinInf : kHistBinNan;
    return r;
  }
  if (a == 0) {
    r.bin = kHistBinZero;
    return r;
  }
  int e = static_cast<int>(a >> 23);
  std::uint32_t mant = a & 0x7FFFFFu;
  if (e == 0) {  // fp32 subnormal: normalise the mantissa
    const int lead = leadingBitPosition(mant);  // position of the leading 1 (0..22)
    e = lead - 149 + 127;
    mant = (mant << (23 - lead)) & 0x7FFFFFu;
  }
  const int exp = e - 127 + shift;
  r.bin = (exp < kHistMinExp ? kHistMinExp : exp > kHistMaxExp ? kHistMaxExp : exp) - kHistMinExp;
  r.underflow = exp < -24;
  r.subnormal = exp < -14;
  r.overflow = exp > 15 || (exp == 15 && mant > kFp16MaxMantissa);
  return r;
}

// The same for a value already multiplied into the shown domain in double (any multiplier).
AMP_HD inline ScaledBin binDouble(double v) {
  ScaledBin r;
  r.bin = exponentBin(v);
  const double a = v < 0 ? -v : v;
  if (v != v || a > 1.7976931348623157e308) {
    r.nonFinite = true;
    r.overflow = v == v;  // inf, not NaN
    return r;
  }
  r.underflow = a != 0.0 && a < kFp16MinSubnormal;
  r.subnormal = a != 0.0 && a < kFp16MinNormal;
  r.overflow = a > kFp16Max;
  return r;
}

}  // namespace amp
