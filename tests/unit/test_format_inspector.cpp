// The format inspector (engine/telemetry/format_inspector.h): decimal text -> fp16/bf16 bits,
// exact represented value, errors, class; the format facts table; exact decimal printing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "engine/telemetry/format_inspector.h"
#include "kernels/common/float16.h"

namespace amp {
namespace {

static_assert(kFp16Facts.maxFinite == 65504.0);
static_assert(kFp16Facts.minSubnormal == 0x1p-24 && kFp16Facts.minNormal == 0x1p-14);
static_assert(kBf16Facts.minSubnormal == 0x1p-133 && kBf16Facts.minNormal == 0x1p-126);
static_assert(formatFacts(DType::BF16) == &kBf16Facts && formatFacts(DType::F32) == nullptr);

TEST(FormatFacts, AgreeWithTheBitPatterns) {
  for (const FormatFacts& f : kLowPrecisionFormats) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_EQ(bitsToDouble(f.maxFiniteBits, f), f.maxFinite);
    EXPECT_EQ(bitsToDouble(static_cast<std::uint16_t>(1u << f.mantissaBits), f), f.minNormal);
    EXPECT_EQ(bitsToDouble(1, f), f.minSubnormal);
    const std::uint16_t one = roundDoubleToBits(1.0, f);
    EXPECT_EQ(bitsToDouble(one + 1, f) - 1.0, f.epsilon);
    EXPECT_TRUE(std::isinf(bitsToDouble(f.infBits, f)));
    EXPECT_EQ(f.maxFinite,
              (2.0 - std::ldexp(1.0, -f.mantissaBits)) * std::ldexp(1.0, f.maxExponent));
  }
  EXPECT_EQ(kBf16Facts.maxFinite, static_cast<double>(bf16BitsToFloat(0x7F7F)));
}

TEST(FormatInspector, BriefExamples) {
  const FormatInspection below = inspectValue("65519.99", DType::F16);
  EXPECT_EQ(below.bits, 0x7BFF);
  EXPECT_EQ(below.bitsHex, "0x7bff");
  EXPECT_EQ(below.binary, "0 11110 1111111111");
  EXPECT_EQ(below.represented, 65504.0);
  EXPECT_EQ(below.klass, "normal");
  EXPECT_FALSE(below.overflowed);

  const FormatInspection over = inspectValue("65520", DType::F16);
  EXPECT_EQ(over.bits, 0x7C00);
  EXPECT_EQ(over.klass, "inf");
  EXPECT_TRUE(over.overflowed);
  EXPECT_TRUE(std::isinf(over.absError));

  const FormatInspection tiny = inspectValue("1e-8", DType::F16);
  EXPECT_EQ(tiny.bits, 0x0000);
  EXPECT_EQ(tiny.klass, "zero");
  EXPECT_TRUE(tiny.underflowedToZero);
  EXPECT_EQ(tiny.relError, 1.0);
  EXPECT_EQ(tiny.absError, 1e-8);

  const FormatInspection tenth = inspectValue("0.1", DType::BF16);
  EXPECT_EQ(tenth.bits, 0x3DCD);
  EXPECT_EQ(tenth.binary, "0 01111011 1001101");
  EXPECT_EQ(tenth.represented, 0.10009765625);
  EXPECT_EQ(tenth.representedExact, "0.10009765625");
  EXPECT_DOUBLE_EQ(tenth.absError, 0.10009765625 - 0.1);
  EXPECT_DOUBLE_EQ(tenth.relError, (0.10009765625 - 0.1) / 0.1);
}

// The text's double lies just above a midpoint of the 16-bit format, but rounding it to float
// first lands exactly on that midpoint, which then ties to even, downwards: double rounding.
// The inspector rounds the double directly.
TEST(FormatInspector, NoDoubleRounding) {
  const char* halfText = "1.00048828125091";  // 1 + 2^-11 + about 9.1e-13
  EXPECT_EQ(floatToHalfBits(static_cast<float>(std::stod(halfText))), 0x3C00);  // via float
  EXPECT_EQ(inspectValue(halfText, DType::F16).bits, 0x3C01);                   // direct
  const char* bf16Text = "1.00390625000001";  // 1 + 2^-8 + about 1e-14
  EXPECT_EQ(floatToBf16Bits(static_cast<float>(std::stod(bf16Text))), 0x3F80);
  EXPECT_EQ(inspectValue(bf16Text, DType::BF16).bits, 0x3F81);
  // Exact midpoints still tie to even.
  EXPECT_EQ(inspectValue("1.00048828125", DType::F16).bits, 0x3C00);
  EXPECT_EQ(inspectValue("0x1.006p0", DType::F16).bits, 0x3C02);
  EXPECT_EQ(inspectValue("65520", DType::F16).bits, 0x7C00);
  EXPECT_EQ(inspectValue("0x1p-25", DType::F16).bits, 0x0000);
  EXPECT_EQ(inspectValue("0x1.0000000000001p-25", DType::F16).bits, 0x0001);
}

// The text's exact value is rounded once. Its nearest double may sit exactly on a 16-bit tie
// while the text lies just off it: then the side decides, not ties-to-even (issue 24's cases).
// "exact" means the kept value equals the text, not merely the text's nearest double.
TEST(FormatInspector, DecimalTextIsRoundedOnceFromItsExactValue) {
  struct Case {
    const char* text;
    DType fmt;
    std::uint16_t bits;
    bool exact;
  };
  const Case cases[] = {
      {"1.00048828125000000000000001", DType::F16, 0x3c01, false},   // above the tie 1 + 2^-11
      {"1.00048828124999999999999999", DType::F16, 0x3c00, false},   // below it
      {"1.00048828125", DType::F16, 0x3c00, false},                  // on it: to even
      {"1.00146484375", DType::F16, 0x3c02, false},                  // on 1 + 3 * 2^-11: to even
      {"-1.00048828125000000000000001", DType::F16, 0xbc01, false},  // the sign is the magnitude's
      {"65519.9999999999999", DType::F16, 0x7bff, false},            // below the overflow tie
      {"65520.0000000000001", DType::F16, 0x7c00, false},            // above it
      {"65520", DType::F16, 0x7c00, false},                          // on it: to even (inf)
      {"1.00390625000000000000001", DType::BF16, 0x3f81, false},     // above bf16's tie 1 + 2^-8
      {"1.00390625", DType::BF16, 0x3f80, false},
      {"0.5", DType::F16, 0x3800, true},
      {"5e-1", DType::F16, 0x3800, true},
      {"0.50000000000000000000000001", DType::F16, 0x3800, false},   // rounds to 0.5, not exact
      {"65504", DType::F16, 0x7bff, true},
      {"0.1", DType::F16, 0x2e66, false},
  };
  for (const Case& c : cases) {
    const FormatInspection r = inspectValue(c.text, c.fmt);
    EXPECT_EQ(r.bits, c.bits) << c.text << " " << dtypeName(c.fmt) << ": got " << r.bitsHex;
    EXPECT_EQ(r.exact, c.exact) << c.text;
  }
}

TEST(FormatInspector, SpecialValuesAndSyntax) {
  EXPECT_EQ(inspectValue("-1", DType::F16).bits, 0xBC00);
  EXPECT_EQ(inspectValue("+2", DType::F16).bits, 0x4000);
  EXPECT_EQ(inspectValue("  2\t", DType::F16).input, "2");
  EXPECT_EQ(inspectValue("-0", DType::F16).bits, 0x8000);
  EXPECT_EQ(inspectValue("-0", DType::F16).klass, "zero");
  EXPECT_FALSE(inspectValue("0", DType::F16).underflowedToZero);
  EXPECT_EQ(inspectValue("6e-8", DType::F16).klass, "subnormal");
  EXPECT_EQ(inspectValue("0x1p-24", DType::F16).bits, 0x0001);
  EXPECT_EQ(inspectValue("0X1.FFCP15", DType::F16).bits, 0x7BFF);
  EXPECT_EQ(inspectValue("1e-40", DType::BF16).klass, "subnormal");
  EXPECT_EQ(inspectValue("0x1p-133", DType::BF16).bits, 0x0001);

  const FormatInspection inf = inspectValue("-inf", DType::BF16);
  EXPECT_EQ(inf.bits, 0xFF80);
  EXPECT_EQ(inf.klass, "inf");
  EXPECT_FALSE(inf.overflowed);
  EXPECT_EQ(inf.absError, 0.0);
  EXPECT_EQ(inspectValue("Infinity", DType::F16).bits, 0x7C00);

  const FormatInspection nan = inspectValue("nan", DType::F16);
  EXPECT_EQ(nan.bits, 0x7E00);
  EXPECT_EQ(nan.klass, "nan");
  EXPECT_TRUE(std::isnan(nan.represented));
  EXPECT_EQ(inspectValue("-nan", DType::BF16).bits, 0xFFC0);

  // Text beyond double's range is still finite (or non-zero) text.
  EXPECT_TRUE(inspectValue("1e400", DType::F16).overflowed);
  EXPECT_TRUE(inspectValue("-1e-400", DType::BF16).underflowedToZero);
  EXPECT_EQ(inspectValue("-1e-400", DType::BF16).bits, 0x8000);
  EXPECT_TRUE(inspectValue("0x1p-2000", DType::F16).underflowedToZero);
  EXPECT_TRUE(inspectValue("0x1p2000", DType::BF16).overflowed);

  for (const char* bad :
       {"abc", "", "  ", "1.2.3", "--1", "+-1", "0x", "0xinf", "1e", "1,5", "0x-1", "1 2", "nanx"})
    EXPECT_THROW(inspectValue(bad, DType::F16), std::invalid_argument) << bad;
  EXPECT_THROW(inspectValue("1", DType::F32), std::invalid_argument);
  try {
    inspectValue("abc", DType::F16);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"abc\""), std::string::npos) << e.what();
  }
}

TEST(FormatInspector, ExactDecimal) {
  EXPECT_EQ(exactDecimal(65504.0), "65504");
  EXPECT_EQ(exactDecimal(0.1), "0.1000000000000000055511151231257827021181583404541015625");
  EXPECT_EQ(exactDecimal(0x1p-24), "5.9604644775390625e-08");
  EXPECT_EQ(exactDecimal(0x1p-14), "0.00006103515625");
  EXPECT_EQ(exactDecimal(-2.5), "-2.5");
  EXPECT_EQ(exactDecimal(1e20), "1e+20");
  EXPECT_EQ(exactDecimal(-0.0), "-0");
  EXPECT_EQ(exactDecimal(-HUGE_VAL), "-inf");
  EXPECT_EQ(exactDecimal(0x1.FEp127), "3.3895313892515354759047080037148786688e+38");
}

// Every 16-bit value printed exactly and read back gives the same bits (and the same value).
TEST(FormatInspector, EveryPatternRoundTripsThroughItsExactDecimal) {
  for (const FormatFacts& f : kLowPrecisionFormats) {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
      const auto bits = static_cast<std::uint16_t>(b);
      const double v = bitsToDouble(bits, f);
      if (std::isnan(v)) continue;
      const FormatInspection r = inspectValue(exactDecimal(v), f.dtype);
      ASSERT_EQ(r.bits, bits) << f.name << " " << exactDecimal(v);
      ASSERT_EQ(r.absError, 0.0) << f.name << " " << exactDecimal(v);
    }
  }
}

// For float inputs written exactly (hex), the inspector's double rounding agrees with the
// scalar float conversions of float16.h.
TEST(FormatInspector, AgreesWithFloatConversions) {
  std::uint64_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float f = bitsToFloat(static_cast<std::uint32_t>(state >> 32));
    if (std::isnan(f)) continue;
    char text[64];
    std::snprintf(text, sizeof text, "%a", static_cast<double>(f));
    ASSERT_EQ(inspectValue(text, DType::F16).bits, floatToHalfBits(f)) << text;
    ASSERT_EQ(inspectValue(text, DType::BF16).bits, floatToBf16Bits(f)) << text;
  }
}

}  // namespace
}  // namespace amp
