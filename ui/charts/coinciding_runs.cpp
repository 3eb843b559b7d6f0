#include "ui/charts/coinciding_runs.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>

namespace amp::ui {

namespace {

// The largest relative difference of a and b over their common prefix; negative when they part
// by more than relTol, or a value is finite in one and not in the other.
double agreement(std::span<const double> a, std::span<const double> b, double relTol) {
  const std::size_t n = std::min(a.size(), b.size());
  double worst = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const bool fa = std::isfinite(a[k]), fb = std::isfinite(b[k]);
    if (fa != fb) return -1;
    if (!fa) continue;
    const double scale = std::max({std::abs(a[k]), std::abs(b[k]), 1e-300});
    const double rel = std::abs(a[k] - b[k]) / scale;
    if (rel > relTol) return -1;
    worst = std::max(worst, rel);
  }
  return worst;
}

}  // namespace

std::vector<Coincidence> coincidingRuns(const std::vector<std::span<const double>>& columns, double relTol,
                                        int minCommon) {
  std::vector<Coincidence> out;
  for (int j = 1; j < int(columns.size()); ++j)
    for (int i = 0; i < j; ++i) {
      if (int(std::min(columns[i].size(), columns[j].size())) < std::max(1, minCommon)) continue;
      const double worst = agreement(columns[i], columns[j], relTol);
      if (worst < 0) continue;
      out.push_back({j, i, worst});
      break;
    }
  return out;
}

QString coincidenceSuffix(const QString& coveredName, double maxRelDiff) {
  if (maxRelDiff == 0)
    return QCoreApplication::translate("amp::ui::ChartPanel", " = %1 (identical)").arg(coveredName);
  // Two significant digits of the percentage: "±0.031%", "±0.5%"; never an exponent.
  const double percent = maxRelDiff * 100;
  const QString figure = percent < 0.001 ? QStringLiteral("<0.001") : QString::number(percent, 'g', 2);
  return QCoreApplication::translate("amp::ui::ChartPanel", " = %1 (±%2%)").arg(coveredName, figure);
}

}  // namespace amp::ui
