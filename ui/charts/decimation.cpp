// Min/max-per-column decimation; see decimation.h for the contract.
#include "ui/charts/decimation.h"

#include <algorithm>
#include <cmath>

namespace amp::ui {

namespace {

bool keepPoint(double x, double y, bool positiveOnly) {
  return std::isfinite(x) && std::isfinite(y) && (!positiveOnly || y > 0);
}

}  // namespace

double toDomain(double y, YDomain domain) {
  switch (domain) {
    case YDomain::Linear: return y;
    case YDomain::Log2: return std::log2(y);
    case YDomain::Log10: return std::log10(y);
  }
  return y;
}

double fromDomain(double v, YDomain domain) {
  switch (domain) {
    case YDomain::Linear: return v;
    case YDomain::Log2: return std::exp2(v);
    case YDomain::Log10: return std::pow(10.0, v);
  }
  return v;
}

std::vector<int> decimateMinMaxIndices(std::span<const double> x, std::span<const double> y,
                                       const DecimationRange& range, bool positiveOnly) {
  const int n = int(std::min(x.size(), y.size()));
  std::vector<int> out;
  if (n == 0) return out;
  double xMin = range.xMin, xMax = range.xMax;
  if (xMax < xMin) std::swap(xMin, xMax);
  const int columns = std::max(1, range.columns);
  const auto keep = [&](int i) { return keepPoint(x[i], y[i], positiveOnly); };

  const int lo = int(std::lower_bound(x.begin(), x.begin() + n, xMin) - x.begin());
  const int hi = int(std::upper_bound(x.begin(), x.begin() + n, xMax) - x.begin());
  out.reserve(std::min(hi - lo, 2 * columns) + 2);

  // One point beyond each edge, so a zoomed-in line does not stop short of the plot's border.
  for (int i = lo - 1; i >= 0; --i) {
    if (keep(i)) {
      out.push_back(i);
      break;
    }
  }
  if (hi - lo <= 2 * columns) {
    for (int i = lo; i < hi; ++i)
      if (keep(i)) out.push_back(i);
  } else {
    const double width = xMax - xMin;
    const double perX = width > 0 ? columns / width : 0.0;
    int column = -1, minI = -1, maxI = -1;
    const auto flush = [&] {
      if (minI < 0) return;
      out.push_back(std::min(minI, maxI));  // in order of occurrence
      if (minI != maxI) out.push_back(std::max(minI, maxI));
    };
    for (int i = lo; i < hi; ++i) {
      if (!keep(i)) continue;
      const int c = std::min(columns - 1, int((x[i] - xMin) * perX));
      if (c != column) {
        flush();
        column = c;
        minI = maxI = i;
      } else {
        // Strict comparisons keep the first of equal values: a flat stretch stays one point.
        if (y[i] < y[minI]) minI = i;
        if (y[i] > y[maxI]) maxI = i;
      }
    }
    flush();
  }
  for (int i = hi; i < n; ++i) {
    if (keep(i)) {
      out.push_back(i);
      break;
    }
  }
  return out;
}

QList<QPointF> pointsAt(std::span<const double> x, std::span<const double> y,
                        const std::vector<int>& indices, YDomain domain) {
  QList<QPointF> points;
  points.reserve(qsizetype(indices.size()));
  for (int i : indices) points.append(QPointF(x[i], toDomain(y[i], domain)));
  return points;
}

QList<QPointF> decimateMinMax(std::span<const double> x, std::span<const double> y,
                              const DecimationRange& range, YDomain domain) {
  const bool positiveOnly = domain != YDomain::Linear;
  return pointsAt(x, y, decimateMinMaxIndices(x, y, range, positiveOnly), domain);
}

}  // namespace amp::ui
