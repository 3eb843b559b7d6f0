#include "engine/telemetry/format_inspector.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <system_error>

namespace amp {
namespace {

constexpr const char* kNumberHint =
    "expected a decimal or hex float such as 0.1, -65504, 1e-8, 0x1p-24, inf or nan";

std::string_view trim(std::string_view s) {
  const auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool isDigitOf(char c, bool hex) {
  if (c >= '0' && c <= '9') return true;
  return hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
}

// The exponent after a mantissa that ends at body[i] ("e-12", "p+3"; 0 when there is none),
// its magnitude saturated at `cap`.
long long exponentAt(std::string_view body, std::size_t i, char expChar, long long cap) {
  long long exponent = 0;
  if (i < body.size() && (body[i] == expChar || body[i] == expChar - 'a' + 'A')) {
    ++i;
    const bool negative = i < body.size() && body[i] == '-';
    if (i < body.size() && (body[i] == '-' || body[i] == '+')) ++i;
    for (; i < body.size() && body[i] >= '0' && body[i] <= '9'; ++i)
      exponent = std::min(exponent * 10 + (body[i] - '0'), cap);  // saturate
    if (negative) exponent = -exponent;
  }
  return exponent;
}

// from_chars reports values outside double's range without saying which side. The text already
// parsed as a number, so its order of magnitude tells: the exponent plus the position of the
// first non-zero digit relative to the point. Out-of-range values are > 1e308 or < 1e-323, so
// comparing that order with 0 is decisive.
bool textIsHuge(std::string_view body, bool hex) {
  const char expChar = hex ? 'p' : 'e';
  std::size_t i = 0;
  long lead = 0;  // digits (decimal or hex) between the first non-zero digit and the point
  bool seenPoint = false, seenNonZero = false;
  for (; i < body.size() && (isDigitOf(body[i], hex) || body[i] == '.'); ++i) {
    if (body[i] == '.') {
      seenPoint = true;
      continue;
    }
    if (body[i] != '0') seenNonZero = true;
    if (!seenPoint && seenNonZero) ++lead;
    if (seenPoint && !seenNonZero) --lead;
  }
  const long long exponent = exponentAt(body, i, expChar, 1000000000LL);
  return exponent + (hex ? 4 : 1) * lead > 0;
}

struct ParsedNumber {
  double value;
  bool outsideDouble;  // finite, non-zero text whose nearest double is +-inf or +-0
  // Where the text's exact value lies against `value`, in magnitude: -1 below, 0 equal, +1
  // above (decimal text only; hex digits past a double's 53 bits are taken as exact).
  int side = 0;
};

// An unsigned decimal (digits, optional point, optional exponent) as 0.D x 10^E with D free of
// leading and trailing zeros (empty for zero): enough to compare two of them exactly, whatever
// their lengths.
struct DecimalDigits {
  std::string digits;
  long long exponent = 0;
};

DecimalDigits decimalDigits(std::string_view s) {
  DecimalDigits d;
  long long pointAt = -1, count = 0;
  std::size_t i = 0;
  for (; i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'); ++i) {
    if (s[i] == '.') {
      pointAt = count;
      continue;
    }
    d.digits += s[i];
    ++count;
  }
  if (pointAt < 0) pointAt = count;
  const long long exp10 = exponentAt(s, i, 'e', 1000000000000LL);
  const std::size_t first = d.digits.find_first_not_of('0');
  if (first == std::string::npos) return {};
  const std::size_t last = d.digits.find_last_not_of('0');
  d.exponent = pointAt - static_cast<long long>(first) + exp10;
  d.digits = d.digits.substr(first, last - first + 1);
  return d;
}

// -1, 0, +1 as a < b, a == b, a > b (both unsigned decimals).
int compareDecimal(std::string_view a, std::string_view b) {
  const DecimalDigits x = decimalDigits(a), y = decimalDigits(b);
  if (x.digits.empty() || y.digits.empty())
    return x.digits.empty() == y.digits.empty() ? 0 : x.digits.empty() ? -1 : 1;
  if (x.exponent != y.exponent) return x.exponent < y.exponent ? -1 : 1;
  const int c = x.digits.compare(y.digits);  // the shorter is the smaller when it is a prefix
  return c < 0 ? -1 : c > 0 ? 1 : 0;
}


// Locale-independent (std::from_chars, not strtod: Qt sets the C locale from the environment,
// and a German locale's strtod would stop at the '.'), correctly rounded to the nearest double.
ParsedNumber parseNumber(std::string_view text) {
  std::string_view body = text;
  bool negative = false;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  const bool hex = body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X');
  if (hex) body.remove_prefix(2);
  // from_chars takes a '-' itself and hex mode takes "inf"; neither may follow our prefix.
  const bool startsOk = !body.empty() && body.front() != '+' && body.front() != '-' &&
                        (!hex || isDigitOf(body.front(), true) || body.front() == '.');
  double v = 0;
  std::from_chars_result res{body.data(), std::errc::invalid_argument};
  if (startsOk)
    res = std::from_chars(body.data(), body.data() + body.size(), v,
                          hex ? std::chars_format::hex : std::chars_format::general);
  if (res.ec == std::errc::invalid_argument || res.ptr != body.data() + body.size())
    throw std::invalid_argument("not a number: \"" + std::string(text) + "\" (" + kNumberHint +
                                ")");
  const bool outside = res.ec == std::errc::result_out_of_range;
  if (outside)  // the nearest double is +-inf or +-0
    v = textIsHuge(body, hex) ? std::numeric_limits<double>::infinity() : 0.0;
  int side = 0;
  if (!hex && !outside && std::isfinite(v) && !body.empty() && body.front() != 'i' &&
      body.front() != 'I' && body.front() != 'n' && body.front() != 'N')
    side = compareDecimal(body, exactDecimal(std::fabs(v)));
  return {negative ? -v : v, outside, side};
}

std::string klassOf(std::uint16_t bits, const FormatFacts& f) {
  const std::uint16_t magnitude = bits & 0x7FFFu;
  if (magnitude > f.infBits) return "nan";
  if (magnitude == f.infBits) return "inf";
  if (magnitude == 0) return "zero";
  return (magnitude >> f.mantissaBits) == 0 ? "subnormal" : "normal";
}

std::string binaryFields(std::uint16_t bits, const FormatFacts& f) {
  std::string out;
  for (int i = 15; i >= 0; --i) {
    out += ((bits >> i) & 1u) ? '1' : '0';
    if (i == 15 || i == f.mantissaBits) out += ' ';
  }
  return out;
}

}  // namespace

// Rounds |v| once, directly from all 53 bits of the double. Rounding to float first and then to
// 16 bits can differ: 1 + 2^-11 + 2^-40 is above the midpoint between the fp16 neighbours 1 and
// 1 + 2^-10, so it rounds up to 0x3c01; as a float it becomes exactly 1 + 2^-11 (a tie), which
// then rounds to even, 1.0 (0x3c00). The same happens for bf16 just above 1 + 2^-8.
std::uint16_t roundDoubleToBits(double v, const FormatFacts& f) { return roundDoubleToBits(v, f, 0); }

std::uint16_t roundDoubleToBits(double v, const FormatFacts& f, int side) {
  const std::uint16_t sign = std::signbit(v) ? 0x8000u : 0u;
  const int p = f.mantissaBits;
  if (std::isnan(v)) {  // keep the top payload bits and set the quiet bit, like the hardware
    const std::uint64_t payload = std::bit_cast<std::uint64_t>(v) & ((std::uint64_t{1} << 52) - 1);
    return static_cast<std::uint16_t>(sign | f.infBits | (1u << (p - 1)) | (payload >> (52 - p)));
  }
  if (std::isinf(v)) return sign | f.infBits;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  const int e = std::ilogb(a);  // a in [2^e, 2^(e+1)); also right for subnormal doubles
  if (e > f.maxExponent) return sign | f.infBits;
  // Weight of the last kept bit: the normal quantum, or the subnormal one below minNormal.
  const int binade = std::max(e, f.minExponent);
  const double m = std::ldexp(a, p - binade);  // exact (power-of-two scaling), m < 2^(p+1)
  double r = std::floor(m);
  const double frac = m - r;  // exact: the fraction of a double in this range is a double
  // Ties to even, unless the value this double stands for lies off the tie: then the side it
  // lies on decides (the double was itself rounded from text; see inspectValue).
  if (frac > 0.5 || (frac == 0.5 && (side > 0 || (side == 0 && std::fmod(r, 2.0) == 1.0))))
    r += 1.0;
  // r holds the implicit bit (normal: 2^p <= r <= 2^(p+1); subnormal: r <= 2^p), so adding it
  // to the exponent field minus one encodes both cases, and a carry that rounds up to the next
  // binade (or to a normal from a subnormal) lands in the exponent by itself.
  const std::uint32_t bits = (static_cast<std::uint32_t>(binade + f.exponentBias - 1) << p) +
                             static_cast<std::uint32_t>(r);
  return static_cast<std::uint16_t>(sign | std::min<std::uint32_t>(bits, f.infBits));
}

double bitsToDouble(std::uint16_t bits, const FormatFacts& f) {
  const int p = f.mantissaBits;
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const std::uint32_t expField = (bits & 0x7FFFu) >> p;
  const std::uint32_t mant = bits & ((1u << p) - 1u);
  const std::uint32_t expMax = (1u << f.exponentBits) - 1u;
  if (expField == expMax)
    return mant ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign)
                : sign * std::numeric_limits<double>::infinity();
  if (expField == 0) return sign * std::ldexp(static_cast<double>(mant), f.minExponent - p);
  return sign * std::ldexp(static_cast<double>(mant | (1u << p)),
                           static_cast<int>(expField) - f.exponentBias - p);
}

std::string exactDecimal(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  // std::to_chars prints exact digits at any precision, whatever the C locale (Qt sets it from
  // the environment, and printf would then write "1,5"); a double has at most 767 significant
  // digits, so 800 after the point is always enough. Then drop the trailing zeros.
  char buf[900];
  const std::to_chars_result res =
      std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific, 800);
  const std::string s(buf, res.ptr);
  const std::size_t ePos = s.find('e');
  std::string digits = s.substr(0, 1) + s.substr(2, ePos - 2);  // without the point
  const int exp10 = std::stoi(s.substr(ePos + 1));
  digits.erase(digits.find_last_not_of('0') + 1);
  // Built with append, not "literal" + std::string: GCC 12 gives a false -Wrestrict there.
  std::string out = v < 0 ? "-" : "";
  const double a = std::fabs(v);
  if (a >= 1e-5 && a < 1e17) {
    if (exp10 >= 0) {
      const std::size_t intDigits = static_cast<std::size_t>(exp10) + 1;
      if (digits.size() <= intDigits) {
        out += digits + std::string(intDigits - digits.size(), '0');
      } else {
        out += digits.substr(0, intDigits) + "." + digits.substr(intDigits);
      }
    } else {
      out += "0.";
      out.append(static_cast<std::size_t>(-exp10 - 1), '0');
      out += digits;
    }
    return out;
  }
  out += digits.front();
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1);
  }
  char expBuf[16];
  std::snprintf(expBuf, sizeof expBuf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
  return out + expBuf;
}

FormatInspection inspectValue(std::string_view text, DType fmt) {
  const FormatFacts* facts = formatFacts(fmt);
  if (!facts)
    throw std::invalid_argument("format must be fp16 or bf16, not " + std::string(dtypeName(fmt)));
  FormatInspection r;
  r.input = std::string(trim(text));
  const ParsedNumber parsed = parseNumber(r.input);
  r.value = parsed.value;
  // One rounding, from the text's exact value: the nearest double can sit exactly on a tie of
  // the 16-bit format while the text lies just off it (1.00048828125000000000000001 is above
  // fp16's tie 1 + 2^-11 and rounds up to 0x3c01; 65519.9999999999999 is below the overflow
  // threshold 65520 and rounds down to 65504). Elsewhere the double and the text round alike.
  r.bits = roundDoubleToBits(r.value, *facts, parsed.side);
  char hexBuf[8];
  std::snprintf(hexBuf, sizeof hexBuf, "0x%04x", static_cast<unsigned>(r.bits));
  r.bitsHex = hexBuf;
  r.binary = binaryFields(r.bits, *facts);
  r.represented = bitsToDouble(r.bits, *facts);
  r.representedExact = exactDecimal(r.represented);
  r.klass = klassOf(r.bits, *facts);
  // Exact only when the kept value equals the text itself, not merely its nearest double.
  r.exact = std::isfinite(r.represented) && std::isfinite(r.value) && !parsed.outsideDouble &&
            r.represented == r.value && parsed.side == 0;
  if (std::isnan(r.value)) {
    r.absError = r.relError = std::numeric_limits<double>::quiet_NaN();
  } else if (std::isinf(r.value) && !parsed.outsideDouble) {
    r.absError = r.relError = 0;  // "inf" is stored exactly
  } else {
    // Text such as 1e400 or 1e-400 is finite and non-zero even though its double is not.
    r.overflowed = std::isinf(r.represented);
    r.underflowedToZero = (r.value != 0 || parsed.outsideDouble) && r.represented == 0;
    // Rounded once more by the subtraction, far below what a display shows; inf on overflow.
    r.absError =
        r.overflowed ? std::numeric_limits<double>::infinity() : std::fabs(r.represented - r.value);
    r.relError = r.overflowed          ? std::numeric_limits<double>::infinity()
                 : r.underflowedToZero ? 1.0  // all of a non-zero value is lost
                 : r.value == 0        ? 0.0
                                       : r.absError / std::fabs(r.value);
  }
  return r;
}

}  // namespace amp
