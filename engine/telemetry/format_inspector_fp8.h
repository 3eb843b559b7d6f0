// What happens to a number written in decimal when it is stored in one of the fp8 / fp6 / fp4
// formats or in E8M0 (kernels/common/minifloat.h): the code, its fields, the exact value kept,
// the error and the class. As PyTorch does it: the number becomes an fp32 first (a float32
// tensor), then the cast; overflow as PyTorch's current casts by default (E4M3 saturates, E5M2
// gives inf), or the other rule. Backs `ampstudio-cli convert --to e4m3|...`. No Qt.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kernels/common/minifloat.h"

namespace amp {

struct MiniInspection {
  std::string input;
  double value = 0;             // nearest double to the text
  float asFloat = 0;            // the fp32 the cast starts from
  std::uint32_t code = 0;
  std::string codeHex;          // "0x7e"
  std::string binary;           // "0 1111 110": sign, exponent, mantissa fields (E8M0: 8 exponent bits)
  double represented = 0;
  std::string representedExact;
  double absError = 0, relError = 0;
  std::string klass;            // normal, subnormal, zero, nan, inf
  std::string notes;
};

// format: e4m3, e5m2, e3m2, e2m3, e2m1, e8m0. rule: nullopt = PyTorch's default for the format.
// Throws std::invalid_argument for an unknown format or text that is not a number.
MiniInspection inspectMiniValue(std::string_view text, const std::string& format, std::optional<Overflow> rule);
bool isMiniFormatName(const std::string& format);
// "e4m3: 1 sign, 4 exponent, 3 mantissa bits; max 448, min normal 2^-6, min subnormal 2^-9; ..."
std::string miniFormatFacts(const std::string& format, std::optional<Overflow> rule);

}  // namespace amp
