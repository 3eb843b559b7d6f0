#include "ui/charts/histogram_bins.h"

#include <algorithm>
#include <vector>

#include <QCategoryAxis>
#include <cstdlib>

#include "ui/charts/chart_view.h"  // superscript

namespace amp::ui {

namespace {
constexpr double kSpecialLeft[3] = {19, 22, 25};  // zero, inf, nan
constexpr double kSpecialWidth = 2;
}  // namespace

double binLeft(int bin) {
  if (bin < kHistExpBins) return kHistMinExp + bin;
  return kSpecialLeft[bin - kHistExpBins];
}

double binWidth(int bin) { return bin < kHistExpBins ? 1.0 : kSpecialWidth; }

int binAt(double pos) {
  if (pos >= kHistMinExp && pos < kHistMaxExp + 1) return int(pos - kHistMinExp);
  for (int i = 0; i < 3; ++i)
    if (pos >= kSpecialLeft[i] && pos < kSpecialLeft[i] + kSpecialWidth) return kHistExpBins + i;
  return -1;
}

QString powerOfTwo(int exponent) { return QStringLiteral("2") + superscript(exponent); }

QString binName(int bin) {
  if (bin < kHistExpBins) return powerOfTwo(kHistMinExp + bin);
  if (bin == kHistBinZero) return QStringLiteral("zero");
  if (bin == kHistBinInf) return QStringLiteral("inf");
  return QStringLiteral("nan");
}

QString histogramKindLabel(HistogramKind kind) {
  switch (kind) {
    case HistogramKind::WeightGrad:
      return QStringLiteral("weight grad");
    case HistogramKind::ActivationGrad:
      return QStringLiteral("activation grad");
    case HistogramKind::Activation:
      return QStringLiteral("activation");
    case HistogramKind::Weight:
      return QStringLiteral("weight");
  }
  return {};
}

QCategoryAxis* makeExponentAxis(QObject* parent, bool compact) {
  auto* axis = new QCategoryAxis(parent);
  axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  axis->setRange(kHistAxisMin, kHistAxisMax);
  axis->setStartValue(kHistAxisMin);
  // The fp16 thresholds get their own labels; 2^-40 and 2^16 mark the ends of the bins.
  if (!compact)
    for (int e : {-40, -30, kFp16SubnormalExp, kFp16NormalExp, 0, kFp16OverflowExp}) axis->append(powerOfTwo(e), e);
  if (compact) {
    fitCompactExponentAxis(axis, 6);
    return axis;
  }
  axis->append(QStringLiteral("0"), binCenter(kHistBinZero));
  axis->append(QStringLiteral("inf"), binCenter(kHistBinInf));
  axis->append(QStringLiteral("nan"), binCenter(kHistBinNan));
  return axis;
}

void fitCompactExponentAxis(QCategoryAxis* axis, int maxLabels) {
  // By importance; the edge label last. Categories must be appended in increasing order.
  const std::vector<double> byImportance{kFp16SubnormalExp, kFp16OverflowExp, 0, kFp16NormalExp, -40,
                                         kHistAxisMax - 0.5};
  const int keep = std::clamp(maxLabels, 2, int(byImportance.size()));
  std::vector<double> kept(byImportance.begin(), byImportance.begin() + keep);
  std::sort(kept.begin(), kept.end());
  const QStringList old = axis->categoriesLabels();
  for (const QString& label : old) axis->remove(label);
  for (double v : kept)
    // "0 inf nan" at the top edge: nearer to 2^16 a short axis would drop it as overlapping.
    axis->append(v == kHistAxisMax - 0.5 ? QStringLiteral("0 inf nan") : powerOfTwo(int(v)), v);
}

}  // namespace amp::ui
