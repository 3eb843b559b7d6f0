#include "ui/run_colors.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace amp::ui {

namespace {

// Tableau 10's blue, orange, red, green and purple, darkened where a hue was too light to stand
// out on white; all keep at least 3:1 against the light and the dark chart backgrounds.
const QColor kPrecision[] = {
    QColor(0x4e79a7),  // fp32
    QColor(0xe8741a),  // fp16, scaled
    QColor(0xd62f33),  // fp16 without a scaler: the failing case
    QColor(0x3f8f3a),  // bf16
    QColor(0x9b5d9c),  // pure fp16
};

// Distinct from the five above and from each other (teal, violet, magenta, olive, slate blue,
// dark gold, cyan, grey-violet), then three that come nearer to the precisions' hues (steel
// blue, sage, vermilion), needed only when eleven runs already share precisions. Violet was a
// brown (#9c6b4e) that the dark theme made hard to tell from fp16's orange (issue 42 item 7).
const QColor kExtra[] = {QColor(0x2a9d8f), QColor(0x9d4edd), QColor(0xc2439f), QColor(0x7f8c1d),
                         QColor(0x6b6ecf), QColor(0xb08d1f), QColor(0x1b9ec2), QColor(0x8a7f99),
                         QColor(0x2e86ab), QColor(0x5e8c6a), QColor(0xd4593a)};

double channel(double c) { return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }

double luminance(const QColor& c) {
  return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
}

bool taken(const QColor& c, const std::vector<QColor>& inUse) {
  return std::find(inUse.begin(), inUse.end(), c) != inUse.end();
}

}  // namespace

PrecisionFamily precisionFamily(const RunConfig& config) {
  switch (config.mode) {
    case PrecisionMode::Fp32:
      return PrecisionFamily::Fp32;
    case PrecisionMode::AmpBf16:
    case PrecisionMode::Fp8:  // bf16 AMP underneath (its own colours: issue 39's views)
      return PrecisionFamily::Bf16;
    case PrecisionMode::PureFp16:
      return PrecisionFamily::PureFp16;
    case PrecisionMode::AmpFp16:
      break;
  }
  // No scaler, or one that never scales (kind none: scale 1, nothing skipped): the failing case.
  const bool scaled = config.scalerActive() && config.scaler.kind != ScalerKind::None;
  return scaled ? PrecisionFamily::Fp16 : PrecisionFamily::Fp16Unscaled;
}

QColor precisionColor(PrecisionFamily family) { return kPrecision[int(family)]; }

int extraRunColorCount() { return int(std::size(kExtra)); }

QColor extraRunColor(int index) {
  const int n = extraRunColorCount();
  return kExtra[((index % n) + n) % n];
}

QColor colorForNewRun(const RunConfig& config, const std::vector<QColor>& inUse) {
  const QColor own = precisionColor(precisionFamily(config));
  if (!taken(own, inUse)) return own;
  const auto nearest = [&](const QColor& c) {
    double d = 1e9;
    for (const QColor& u : inUse) d = std::min(d, colourDifference(c, u));
    return d;
  };
  // The palette's order first (the same runs get the same colours in every lesson), skipping a
  // colour close to one on screen; when every free one is close, the farthest of them.
  int farthest = -1;
  double best = -1;
  for (int i = 0; i < extraRunColorCount(); ++i) {
    if (taken(extraRunColor(i), inUse)) continue;
    const double d = nearest(extraRunColor(i));
    if (d >= kDistinctRunColours) return extraRunColor(i);
    if (d > best) best = d, farthest = i;
  }
  if (farthest >= 0) return extraRunColor(farthest);
  // Every colour is on screen: cycle, so neighbours still differ.
  return extraRunColor(int(inUse.size()));
}

double colourDifference(const QColor& a, const QColor& b) {
  const auto lab = [](const QColor& c) {
    const double r = channel(c.redF()), g = channel(c.greenF()), bl = channel(c.blueF());
    const double x = (0.4124 * r + 0.3576 * g + 0.1805 * bl) / 0.95047, y = 0.2126 * r + 0.7152 * g + 0.0722 * bl,
                 z = (0.0193 * r + 0.1192 * g + 0.9505 * bl) / 1.08883;
    const auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116; };
    return std::array<double, 3>{116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
  };
  const auto p = lab(a), q = lab(b);
  return std::sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2]));
}

double contrastRatio(const QColor& a, const QColor& b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

}  // namespace amp::ui
