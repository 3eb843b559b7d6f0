// Run colours (ui/run_colors.h): a precision has one colour in every lesson, a second run of a
// precision already listed takes a colour no precision owns, and every colour stands out from
// both themes' chart backgrounds. Issue 25: the same precision was orange in one lesson and blue
// in the next, and pale pink and yellow (contrast 1.6-2.0 on white) vanished.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>

#include "engine/config/config_schema.h"
#include "ui/run_colors.h"
#include "ui/theme.h"

using namespace amp;
using namespace amp::ui;

namespace {

RunConfig configFor(const char* mode, const char* scaler = "auto") {
  RunConfig c;
  setConfigValue(c, "amp.mode", mode);
  setConfigValue(c, "scaler.enabled", scaler);
  return c;
}

const QColor kLightChart(Qt::white), kDarkChart(0x1f, 0x21, 0x24);  // ChartView::backgroundColor

}  // namespace

TEST(RunColors, EachPrecisionHasItsOwnColourWhateverCameFirst) {
  EXPECT_EQ(precisionFamily(configFor("fp32")), PrecisionFamily::Fp32);
  EXPECT_EQ(precisionFamily(configFor("fp16")), PrecisionFamily::Fp16);
  EXPECT_EQ(precisionFamily(configFor("fp16", "false")), PrecisionFamily::Fp16Unscaled);
  RunConfig kindNone = configFor("fp16");
  setConfigValue(kindNone, "scaler.kind", "none");  // the underflow lesson's unscaled run
  EXPECT_EQ(precisionFamily(kindNone), PrecisionFamily::Fp16Unscaled);
  EXPECT_EQ(precisionFamily(configFor("bf16")), PrecisionFamily::Bf16);
  EXPECT_EQ(precisionFamily(configFor("pure_fp16")), PrecisionFamily::PureFp16);
  std::set<QRgb> own;
  for (int f = 0; f < 5; ++f) own.insert(precisionColor(PrecisionFamily(f)).rgb());
  EXPECT_EQ(own.size(), 5u);

  // bf16 first, then fp32, then fp16: each its own, not the first, second and third colour.
  std::vector<QColor> listed;
  for (const char* mode : {"bf16", "fp32", "fp16"}) {
    const RunConfig c = configFor(mode);
    const QColor colour = colorForNewRun(c, listed);
    EXPECT_EQ(colour, precisionColor(precisionFamily(c))) << mode;
    listed.push_back(colour);
  }
}

TEST(RunColors, ASecondRunOfAPrecisionTakesAColourNoPrecisionOwns) {
  std::set<QRgb> own;
  for (int f = 0; f < 5; ++f) own.insert(precisionColor(PrecisionFamily(f)).rgb());
  std::vector<QColor> listed{colorForNewRun(configFor("fp16"), {})};
  const QColor second = colorForNewRun(configFor("fp16"), listed);
  listed.push_back(second);
  const QColor third = colorForNewRun(configFor("fp16"), listed);
  EXPECT_FALSE(own.count(second.rgb()));
  EXPECT_FALSE(own.count(third.rgb()));
  EXPECT_NE(second, third);
  // The first fp16 run deleted: the next fp16 run is orange again.
  listed.erase(listed.begin());
  EXPECT_EQ(colorForNewRun(configFor("fp16"), listed), precisionColor(PrecisionFamily::Fp16));
  // Every colour taken: still a colour, and not the same as the last one given.
  std::vector<QColor> all;
  for (int i = 0; i < kRunColorCount; ++i) all.push_back(runColor(i));
  EXPECT_TRUE(colorForNewRun(configFor("fp32"), all).isValid());
}

TEST(RunColors, EveryColourStandsOutOnBothThemes) {
  std::set<QRgb> distinct;
  for (int i = 0; i < kRunColorCount; ++i) {
    const QColor c = runColor(i);
    distinct.insert(c.rgb());
    EXPECT_GE(contrastRatio(c, kLightChart), 3.0) << c.name().toStdString() << " on white";
    EXPECT_GE(contrastRatio(c, kDarkChart), 3.0) << c.name().toStdString() << " on the dark chart";
  }
  EXPECT_EQ(int(distinct.size()), kRunColorCount);
  for (int f = 0; f < 5; ++f) {
    const QColor c = precisionColor(PrecisionFamily(f));
    EXPECT_GE(contrastRatio(c, kLightChart), 3.0) << c.name().toStdString();
    EXPECT_GE(contrastRatio(c, kDarkChart), 3.0) << c.name().toStdString();
  }
  // The formula, checked at its ends and at a textbook value (#767676 on white: 4.54).
  EXPECT_NEAR(contrastRatio(Qt::black, Qt::white), 21.0, 1e-9);
  EXPECT_NEAR(contrastRatio(QColor(0x76, 0x76, 0x76), Qt::white), 4.54, 0.01);
}

namespace {
// CIE76 colour difference (CIELAB, D65): about 2.3 is just noticeable; under 50 two line colours
// of similar lightness are easily confused on a dark chart.
double deltaE(const QColor& a, const QColor& b) {
  auto lab = [](const QColor& c) {
    auto lin = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
    const double r = lin(c.redF()), g = lin(c.greenF()), bl = lin(c.blueF());
    const double x = (0.4124 * r + 0.3576 * g + 0.1805 * bl) / 0.95047, y = 0.2126 * r + 0.7152 * g + 0.0722 * bl,
                 z = (0.0193 * r + 0.1192 * g + 0.9505 * bl) / 1.08883;
    auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116; };
    return std::array<double, 3>{116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
  };
  const auto p = lab(a), q = lab(b);
  return std::sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2]));
}
}  // namespace

// Issue 42 item 7: a lesson's extra runs took brown after teal, hard to tell from fp16's orange
// in the dark theme (ΔE 48). The colours a handful of extra runs take stay far from it.
TEST(RunColors, TheFirstExtraColoursAreFarFromFp16Orange) {
  const QColor orange = precisionColor(PrecisionFamily::Fp16);
  for (int i = 0; i < 5; ++i)
    EXPECT_GE(deltaE(extraRunColor(i), orange), 50.0) << extraRunColor(i).name().toStdString();
}

// A second run of a precision already on screen (two fp8 recipes: both bf16's green underneath)
// took teal, ΔE 40 from the green: two lines that read as one. The first four runs of any one
// precision, and fp8 runs after an fp32 one, now differ from every colour before them by ΔE 50.
TEST(RunColors, ConsecutiveRunsOfOnePrecisionAreFarApart) {
  for (const char* mode : {"fp32", "fp16", "bf16", "fp8", "pure_fp16"}) {
    std::vector<QColor> listed;
    for (int k = 0; k < 4; ++k) {
      const QColor c = colorForNewRun(configFor(mode), listed);
      for (const QColor& before : listed)
        EXPECT_GE(colourDifference(c, before), kDistinctRunColours)
            << mode << " run " << k + 1 << ": " << c.name().toStdString() << " vs " << before.name().toStdString();
      EXPECT_NEAR(colourDifference(c, c), 0.0, 1e-12);
      listed.push_back(c);
    }
  }
  // The test's own formula above and the library's agree.
  EXPECT_NEAR(colourDifference(QColor(0x2a9d8f), QColor(0x3f8f3a)), deltaE(QColor(0x2a9d8f), QColor(0x3f8f3a)), 1e-9);
  std::vector<QColor> listed{colorForNewRun(configFor("fp32"), {})};
  for (int k = 0; k < 3; ++k) {
    const QColor c = colorForNewRun(configFor("fp8"), listed);
    for (const QColor& before : listed) EXPECT_GE(colourDifference(c, before), kDistinctRunColours) << c.name().toStdString();
    listed.push_back(c);
  }
}
