#include "engine/telemetry/format_inspector_fp8.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "engine/telemetry/format_inspector.h"

namespace amp {

namespace {

const std::map<std::string, MiniFormat>& formats() {
  static const std::map<std::string, MiniFormat> f{{"e4m3", MiniFormat::E4M3}, {"e5m2", MiniFormat::E5M2},
                                                   {"e3m2", MiniFormat::E3M2}, {"e2m3", MiniFormat::E2M3},
                                                   {"e2m1", MiniFormat::E2M1}};
  return f;
}

// PyTorch's casts: float8_e4m3fn saturates, float8_e5m2 gives inf; fp6 / fp4 always saturate.
Overflow defaultRule(MiniFormat f) { return f == MiniFormat::E5M2 ? Overflow::NonSaturating : Overflow::Saturate; }

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%02x", v);
  return buf;
}

std::string fields(std::uint32_t code, int expBits, int manBits) {
  std::string s;
  const int width = 1 + expBits + manBits;
  for (int b = width - 1; b >= 0; --b) {
    s += (code >> b) & 1u ? '1' : '0';
    if (b == width - 1 || (b == manBits && manBits > 0)) s += ' ';
  }
  return s;
}

}  // namespace

bool isMiniFormatName(const std::string& format) { return format == "e8m0" || formats().count(format); }

std::string miniFormatFacts(const std::string& format, std::optional<Overflow> rule) {
  char buf[256];
  if (format == "e8m0") {
    std::snprintf(buf, sizeof buf,
                  "e8m0: 8 exponent bits, no sign or mantissa (a power of two, the MX block scale): 2^-127 to "
                  "2^127, 0xff = NaN; a value rounds to the nearest power of two by its significand's first "
                  "bit, as PyTorch's float8_e8m0fnu cast\n\n");
    return buf;
  }
  const MiniFormat f = formats().at(format);
  const MiniLayout L = miniLayout(f);
  const Overflow r = rule.value_or(defaultRule(f));
  std::snprintf(buf, sizeof buf,
                "%s: 1 sign, %d exponent, %d mantissa bits; max finite %s, min normal 2^%d, min subnormal 2^%d; "
                "overflow: %s\n\n",
                format.c_str(), L.expBits, L.manBits, exactDecimal(miniMax(f)).c_str(), 1 - L.bias,
                1 - L.bias - L.manBits,
                r == Overflow::Saturate || L.specials == 0 ? "saturates to +-max"
                : L.specials == 2                          ? "inf"
                                                           : "NaN");
  return buf;
}

MiniInspection inspectMiniValue(std::string_view text, const std::string& format, std::optional<Overflow> rule) {
  if (!isMiniFormatName(format)) throw std::invalid_argument("unknown format '" + format + "'");
  // The number itself, parsed as the 16-bit inspector parses it (decimal, hex float, inf, nan).
  const FormatInspection parsed = inspectValue(text, DType::BF16);
  MiniInspection r;
  r.input = parsed.input;
  r.value = parsed.value;
  r.asFloat = static_cast<float>(r.value);  // round to nearest even: a float32 tensor
  const bool viaFloat = std::isfinite(r.value) && double(r.asFloat) != r.value;
  if (format == "e8m0") {
    r.code = floatToE8m0(r.asFloat);
    r.codeHex = hex(r.code);
    r.binary = fields(r.code, 8, 0);
    r.represented = e8m0ToFloat(static_cast<std::uint8_t>(r.code));
    r.klass = r.code == kE8m0Nan ? "nan" : "normal";
  } else {
    const MiniFormat f = formats().at(format);
    const MiniLayout L = miniLayout(f);
    bool over = false;
    r.code = floatToMini(r.asFloat, f, rule.value_or(defaultRule(f)), false, 0, &over);
    r.codeHex = hex(r.code);
    r.binary = fields(r.code, L.expBits, L.manBits);
    r.represented = miniToFloat(r.code, f);
    const std::uint32_t mag = r.code & ((1u << (L.expBits + L.manBits)) - 1u);
    r.klass = std::isnan(r.represented) ? "nan" : std::isinf(r.represented) ? "inf"
              : mag == 0 ? "zero" : (mag >> L.manBits) == 0 ? "subnormal" : "normal";
    if (over) r.notes = std::isnan(r.represented) ? "overflow -> NaN" : std::isinf(r.represented) ? "overflow -> inf" : "overflow -> saturated to max";
  }
  r.representedExact = exactDecimal(r.represented);
  r.absError = std::fabs(r.represented - r.value);
  r.relError = r.value == 0 ? 0 : r.absError / std::fabs(r.value);
  auto add = [&r](const std::string& n) { r.notes += (r.notes.empty() ? "" : "; ") + n; };
  if (std::isnan(r.value)) {
    r.notes = std::string(format == "e8m0" || std::isnan(r.represented) ? "nan stays nan" : "no NaN in this format: 0");
  } else {
    if (r.value != 0 && r.represented == 0) add("underflow -> 0");
    if (r.klass == "subnormal") add("subnormal: fewer significant bits");
    if (r.notes.empty()) add(r.represented == r.value ? "exact" : "rounded");
    if (viaFloat) add("the value first became the fp32 " + exactDecimal(r.asFloat));
  }
  return r;
}

}  // namespace amp
