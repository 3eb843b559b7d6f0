// Min/max-per-column decimation; see decimation.h for the contract.
#include "ui/charts/decimation.h"

#include <QtNumeric>
#include <algorithm>
#include <cmath>

namespace amp::ui {

namespace {

bool keepPoint(double x, double y, bool positiveOnly) {
  return std::isfinite(x) && std::isfinite(y) && (!positiveOnly || y > 0);
}

// A point whose neighbours on both sides have its exact y adds nothing to the drawn line:
// a loss scale that holds for thousands of steps becomes two points instead of one per column.
void dropFlatInteriors(std::vector<int>& idx, std::span<const double> y) {
  if (idx.size() < 3) return;
  std::size_t kept = 1;
  for (std::size_t j = 1; j + 1 < idx.size(); ++j) {
    const double v = y[std::size_t(idx[j])];
    if (v == y[std::size_t(idx[kept - 1])] && v == y[std::size_t(idx[j + 1])]) continue;
    idx[kept++] = idx[j];
  }
  idx[kept++] = idx.back();
  idx.resize(kept);
}

}  // namespace

double toDomain(double y, YDomain domain) {
  switch (domain) {
    case YDomain::Linear:
      return y;
    case YDomain::Log2:
      return std::log2(y);
    case YDomain::Log10:
      return std::log10(y);
  }
  return y;
}

double fromDomain(double v, YDomain domain) {
  switch (domain) {
    case YDomain::Linear:
      return v;
    case YDomain::Log2:
      return std::exp2(v);
    case YDomain::Log10:
      return std::pow(10.0, v);
  }
  return v;
}

std::vector<int> decimateMinMaxIndices(std::span<const double> x, std::span<const double> y,
                                       const DecimationRange& range, bool positiveOnly, bool keepFlatRuns) {
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
    // x is sorted: walk column by column up to each column's right edge, so the inner loop is
    // two comparisons per point (no division).
    const double width = xMax - xMin;
    const double columnWidth = width / columns;
    int i = lo;
    for (int c = 0; c < columns && i < hi; ++c) {
      const double edge = c == columns - 1 ? qInf() : xMin + columnWidth * (c + 1);
      int minI = -1, maxI = -1;
      double minY = qInf(), maxY = -qInf();
      for (; i < hi && x[i] < edge; ++i) {
        const double v = y[i];
        if (!(v < minY || v > maxY)) continue;  // also skips NaN
        if (!keep(i)) continue;
        // Strict comparisons keep the first of equal values: a flat stretch stays one point.
        if (v < minY) {
          minY = v;
          minI = i;
        }
        if (v > maxY) {
          maxY = v;
          maxI = i;
        }
      }
      if (minI < 0) continue;
      out.push_back(std::min(minI, maxI));  // in order of occurrence
      if (minI != maxI) out.push_back(std::max(minI, maxI));
    }
  }
  for (int i = hi; i < n; ++i) {
    if (keep(i)) {
      out.push_back(i);
      break;
    }
  }
  if (!keepFlatRuns) dropFlatInteriors(out, y);
  return out;
}

QList<QPointF> pointsAt(std::span<const double> x, std::span<const double> y, const std::vector<int>& indices,
                        YDomain domain) {
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
