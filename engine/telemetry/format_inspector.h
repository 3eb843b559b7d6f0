// What happens to a number written in decimal when it is stored in fp16 or bf16: the bit
// pattern, the exact value kept, the rounding error and the class (normal, subnormal, ...).
// Backs `ampstudio-cli convert` and the UI's format inspector. No Qt.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/dtype.h"

namespace amp {

// Facts about a 16-bit floating-point format, for display and for the rounding code.
struct FormatFacts {
  DType dtype;
  std::string_view name;
  int exponentBits;
  int mantissaBits;  // stored fraction bits (precision is mantissaBits + 1)
  int exponentBias;
  int minExponent;  // of the smallest normal: minNormal = 2^minExponent
  int maxExponent;  // of the largest finite: maxFinite = (2 - 2^-mantissaBits) * 2^maxExponent
  double maxFinite;
  double minNormal;
  double minSubnormal;
  double epsilon;  // distance from 1 to the next larger value, 2^-mantissaBits
  std::uint16_t maxFiniteBits;
  std::uint16_t infBits;
};

// clang-format off
inline constexpr FormatFacts kFp16Facts{
    .dtype = DType::F16, .name = "fp16", .exponentBits = 5, .mantissaBits = 10,
    .exponentBias = 15, .minExponent = -14, .maxExponent = 15,
    .maxFinite = 65504.0, .minNormal = 0x1p-14, .minSubnormal = 0x1p-24, .epsilon = 0x1p-10,
    .maxFiniteBits = 0x7BFF, .infBits = 0x7C00};
inline constexpr FormatFacts kBf16Facts{
    .dtype = DType::BF16, .name = "bf16", .exponentBits = 8, .mantissaBits = 7,
    .exponentBias = 127, .minExponent = -126, .maxExponent = 127,
    .maxFinite = 0x1.FEp127 /* 3.3895313892515355e38 */, .minNormal = 0x1p-126,
    .minSubnormal = 0x1p-133, .epsilon = 0x1p-7, .maxFiniteBits = 0x7F7F, .infBits = 0x7F80};
// clang-format on
inline constexpr std::array<FormatFacts, 2> kLowPrecisionFormats{kFp16Facts, kBf16Facts};

// nullptr for dtypes that are not 16-bit floats.
constexpr const FormatFacts* formatFacts(DType t) {
  return t == DType::F16 ? &kFp16Facts : t == DType::BF16 ? &kBf16Facts : nullptr;
}

struct FormatInspection {
  std::string input;               // the text as given (trimmed)
  double value = 0;                // nearest double to the text (what strtod gives in "C")
  std::uint16_t bits = 0;          // the 16-bit pattern
  std::string bitsHex;             // "0x7bff"
  std::string binary;              // "0 11110 1111111111": sign, exponent, mantissa fields
  double represented = 0;          // exact value of `bits` (every fp16/bf16 value is a double)
  std::string representedExact;    // that value in decimal, all digits ("0.10009765625")
  double absError = 0;             // |represented - value| (inf after overflow; NaN for NaN input)
  double relError = 0;             // absError / |value|; 0 for 0, 1 on underflow, inf on overflow
  std::string klass;               // "normal", "subnormal", "zero", "inf", "nan"
  bool overflowed = false;         // finite input became +-inf
  bool underflowedToZero = false;  // non-zero input became +-0
  bool exact = false;              // the kept value equals the text's value exactly
};

// Parses `text` (decimal or hex float, optional sign, "inf", "nan"; locale-independent) and
// rounds its exact value once to `fmt` (F16 or BF16), ties to even: through the nearest double,
// with the side of that double the text lies on breaking the ties the double lands on.
// Throws std::invalid_argument for other dtypes or text that is not a number.
FormatInspection inspectValue(std::string_view text, DType fmt);

// Rounds a double straight to the format's bits, ties to even, overflow to inf, subnormals kept,
// NaN quiet with sign and top payload. One rounding step: going through float first would round
// twice and can differ (see the .cpp).
std::uint16_t roundDoubleToBits(double value, const FormatFacts& fmt);
// The same for a value known to lie just above (side > 0) or below (side < 0) `value` in
// magnitude, closer to it than to any other double: only a tie at `value` itself turns out
// differently.
std::uint16_t roundDoubleToBits(double value, const FormatFacts& fmt, int side);
// Exact value of a bit pattern of the format.
double bitsToDouble(std::uint16_t bits, const FormatFacts& fmt);

// All decimal digits of a double (finite doubles are dyadic, so the expansion ends): plain
// notation for 1e-5 <= |v| < 1e17, else scientific ("5.9604644775390625e-08"); "inf", "nan".
std::string exactDecimal(double v);

}  // namespace amp
