// `ampstudio-cli convert`: how decimal values round to fp16 or bf16, as a table or JSON.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli_main.h"
#include "engine/telemetry/format_inspector.h"
#include "engine/telemetry/format_inspector_fp8.h"

namespace amp::cli {
namespace {

constexpr const char* kConvertUsage =
    "usage: ampstudio-cli convert --to FORMAT [--overflow saturate|inf_nan] [--json] VALUE...\n"
    "Shows how each VALUE rounds when stored in fp16 or bf16 (round to nearest, ties to even,\n"
    "straight from the value as written: no intermediate float), or in an fp8 / fp6 / fp4 format\n"
    "or E8M0 (as PyTorch casts: the value becomes a float32 first): the bit pattern, its sign,\n"
    "exponent and mantissa fields, the exact value kept, the absolute and relative rounding\n"
    "error, the class (normal, subnormal, zero, inf, nan) and notes (overflow, underflow).\n"
    "VALUE: decimal or hex float, inf or nan, with an optional sign; -1 is a value, not an\n"
    "option.\n"
    "options:\n"
    "  --to FORMAT   fp16 (also float16, half), bf16 (also bfloat16), e4m3, e5m2, e3m2, e2m3,\n"
    "                e2m1 or e8m0 (the MX scale)\n"
    "  --overflow R  fp8 values past the range: saturate (to +-max) or inf_nan (E5M2 inf, E4M3\n"
    "                NaN); default: PyTorch's current casts (E4M3 saturates, E5M2 gives inf)\n"
    "  --json        print a JSON array, one object per VALUE (non-finite numbers are null;\n"
    "                the string field representedExact says inf or nan)\n"
    "  --            everything after is a VALUE\n"
    "  -h, --help    show this help\n"
    "example: ampstudio-cli convert --to fp16 0.1 65519.99 65520 1e-8\n";

struct ConvertOptions {
  const FormatFacts* format = nullptr;
  std::string miniFormat;  // e4m3 ... e8m0 (format_inspector_fp8.h)
  std::optional<Overflow> overflow;
  bool json = false;
  bool help = false;
  std::vector<std::string> values;
};

// One line on stderr naming the argument and what was expected; exit code 2 (bad input).
int usageError(const std::string& message) {
  printError("convert", message);
  return 2;
}

std::optional<std::string> setFormat(ConvertOptions& o, const std::string& name) {
  if (isMiniFormatName(name)) {
    o.miniFormat = name;
    return std::nullopt;
  }
  const std::optional<DType> dtype = parseDType(name);
  o.format = dtype ? formatFacts(*dtype) : nullptr;
  if (!o.format)
    return "--to: unknown format '" + name + "' (expected fp16, bf16, e4m3, e5m2, e3m2, e2m3, e2m1 or e8m0)";
  return std::nullopt;
}

// Options are "--word" (and -h); anything else, including "-1", "-inf" or "-0x1p-24", is a
// VALUE, so negative numbers need no "--" in front of them.
std::optional<std::string> parseOptions(const Args& args, ConvertOptions& o) {
  bool onlyValues = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (onlyValues || !(a.rfind("--", 0) == 0 || a == "-h")) {
      o.values.push_back(a);
    } else if (a == "--") {
      onlyValues = true;
    } else if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--to") {
      if (i + 1 == args.size()) return std::string("--to needs a format (expected fp16 or bf16)");
      if (auto err = setFormat(o, args[++i])) return err;
    } else if (a.rfind("--to=", 0) == 0) {
      if (auto err = setFormat(o, a.substr(5))) return err;
    } else if (a == "--overflow") {
      if (i + 1 == args.size()) return std::string("--overflow needs saturate or inf_nan");
      const std::string r = args[++i];
      if (r != "saturate" && r != "inf_nan") return "--overflow: expected saturate or inf_nan, got '" + r + "'";
      o.overflow = r == "saturate" ? Overflow::Saturate : Overflow::NonSaturating;
    } else {
      return "unknown option '" + a + "' (expected --to, --overflow, --json or --help; try --help)";
    }
  }
  return std::nullopt;
}

std::string formatError(double e) {
  if (std::isnan(e)) return "n/a";
  if (std::isinf(e)) return "inf";
  char buf[32];  // to_chars, not printf: the same output in every locale
  const std::to_chars_result res =
      std::to_chars(buf, buf + sizeof buf, e, std::chars_format::general, 6);
  return std::string(buf, res.ptr);
}

std::string notesFor(const FormatInspection& r) {
  if (r.klass == "nan") return "nan stays nan (quiet)";
  std::string notes;
  const auto add = [&](const char* n) { notes += (notes.empty() ? "" : "; ") + std::string(n); };
  if (r.overflowed) add("overflow -> inf");
  if (r.underflowedToZero) add("underflow -> 0");
  if (r.klass == "subnormal") add("subnormal: fewer significant bits");
  if (!r.overflowed && !r.underflowedToZero) add(r.exact ? "exact" : "rounded");
  return notes;
}

void printFacts(const FormatFacts& f) {
  std::printf(
      "%s: 1 sign, %d exponent, %d mantissa bits; max finite %s, min normal %s (2^%d), "
      "min subnormal %s (2^%d), epsilon %s (2^-%d)\n\n",
      std::string(f.name).c_str(), f.exponentBits, f.mantissaBits,
      exactDecimal(f.maxFinite).c_str(), exactDecimal(f.minNormal).c_str(), f.minExponent,
      exactDecimal(f.minSubnormal).c_str(), f.minExponent - f.mantissaBits,
      exactDecimal(f.epsilon).c_str(), f.mantissaBits);
}

// Rows of cells in columns two spaces apart.
void printCells(const std::vector<std::vector<std::string>>& cells) {
  std::vector<std::size_t> width(cells[0].size(), 0);
  for (const auto& row : cells)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
}

void printTable(const FormatFacts& f, const std::vector<FormatInspection>& rows) {
  printFacts(f);
  std::vector<std::vector<std::string>> cells = {{"input", "bits", "sign exponent mantissa",
                                                  "represented (exact)", "abs error", "rel error",
                                                  "class", "notes"}};
  for (const FormatInspection& r : rows)
    cells.push_back({r.input, r.bitsHex, r.binary, r.representedExact, formatError(r.absError),
                     formatError(r.relError), r.klass, notesFor(r)});
  printCells(cells);
}

std::string jsonString(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Shortest text that reads back as the same double; locale-independent. JSON has no inf or nan.
std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  const std::to_chars_result res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

void printJson(const FormatFacts& f, const std::vector<FormatInspection>& rows) {
  std::printf("[\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const FormatInspection& r = rows[i];
    std::printf(
        "  {\"input\": %s, \"format\": %s, \"value\": %s, \"bits\": %s, \"binary\": %s, "
        "\"represented\": %s, \"representedExact\": %s, \"absError\": %s, \"relError\": %s, "
        "\"class\": %s, \"overflowed\": %s, \"underflowedToZero\": %s, \"notes\": %s}%s\n",
        jsonString(r.input).c_str(), jsonString(f.name).c_str(), jsonNumber(r.value).c_str(),
        jsonString(r.bitsHex).c_str(), jsonString(r.binary).c_str(),
        jsonNumber(r.represented).c_str(), jsonString(r.representedExact).c_str(),
        jsonNumber(r.absError).c_str(), jsonNumber(r.relError).c_str(), jsonString(r.klass).c_str(),
        r.overflowed ? "true" : "false", r.underflowedToZero ? "true" : "false",
        jsonString(notesFor(r)).c_str(), i + 1 < rows.size() ? "," : "");
  }
  std::printf("]\n");
}

int convertMini(const ConvertOptions& o) {
  std::vector<MiniInspection> rows;
  for (const std::string& v : o.values) {
    try {
      rows.push_back(inspectMiniValue(v, o.miniFormat, o.overflow));
    } catch (const std::invalid_argument& e) {
      return usageError(std::string("VALUE: ") + e.what());
    }
  }
  if (o.json) {
    std::printf("[\n");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const MiniInspection& r = rows[i];
      std::printf("  {\"input\": %s, \"format\": %s, \"value\": %s, \"float32\": %s, \"bits\": %s, \"binary\": %s, "
                  "\"represented\": %s, \"representedExact\": %s, \"absError\": %s, \"relError\": %s, "
                  "\"class\": %s, \"notes\": %s}%s\n",
                  jsonString(r.input).c_str(), jsonString(o.miniFormat).c_str(), jsonNumber(r.value).c_str(),
                  jsonNumber(r.asFloat).c_str(), jsonString(r.codeHex).c_str(), jsonString(r.binary).c_str(),
                  jsonNumber(r.represented).c_str(), jsonString(r.representedExact).c_str(),
                  jsonNumber(r.absError).c_str(), jsonNumber(r.relError).c_str(), jsonString(r.klass).c_str(),
                  jsonString(r.notes).c_str(), i + 1 < rows.size() ? "," : "");
    }
    std::printf("]\n");
    return 0;
  }
  std::fputs(miniFormatFacts(o.miniFormat, o.overflow).c_str(), stdout);
  std::vector<std::vector<std::string>> cells = {
      {"input", "bits", "fields", "represented (exact)", "abs error", "rel error", "class", "notes"}};
  for (const MiniInspection& r : rows)
    cells.push_back({r.input, r.codeHex, r.binary, r.representedExact, formatError(r.absError), formatError(r.relError),
                     r.klass, r.notes});
  printCells(cells);
  return 0;
}

}  // namespace

int cmdConvert(const Args& args) {
  ConvertOptions o;
  if (auto err = parseOptions(args, o)) return usageError(*err);
  if (o.help) {
    std::fputs(kConvertUsage, stdout);
    return 0;
  }
  if (!o.format && o.miniFormat.empty()) return usageError("missing --to (expected e.g. --to fp16, --to bf16 or --to e4m3)");
  if (o.overflow && o.miniFormat.empty()) return usageError("--overflow applies to the fp8 formats (fp16 and bf16 overflow to inf)");
  if (o.values.empty())
    return usageError("no VALUE given (expected one or more numbers, e.g. convert --to fp16 0.1)");
  if (!o.miniFormat.empty()) return convertMini(o);
  // Everything is parsed before anything is printed: a bad VALUE gives no partial table.
  std::vector<FormatInspection> rows;
  for (const std::string& v : o.values) {
    try {
      rows.push_back(inspectValue(v, o.format->dtype));
    } catch (const std::invalid_argument& e) {
      return usageError(std::string("VALUE: ") + e.what());
    }
  }
  if (o.json)
    printJson(*o.format, rows);
  else
    printTable(*o.format, rows);
  return 0;
}

}  // namespace amp::cli
