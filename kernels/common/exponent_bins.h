// Binning of values by binary exponent, for the gradient/activation histograms.
// Bin k (0..kHistExpBins-1) holds |x| in [2^(kHistMinExp+k), 2^(kHistMinExp+k+1)); the first bin
// also holds every smaller non-zero value and the last every larger finite one, so no value is
// lost. Then come the zero, inf and nan bins.
#pragma once

#include <cstdint>
#include <cstring>

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

}  // namespace amp
