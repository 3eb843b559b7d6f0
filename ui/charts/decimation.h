// Min/max decimation of (x, y) columns for plotting: at most two points per pixel column, the
// column's minimum and maximum in the order they occur, so that a single overflow spike or a
// loss-scale halving survives however many steps share that column. Pure functions, no Qt
// widgets: the charts call them on every refresh and the unit tests call them directly.
#pragma once

#include <QList>
#include <QPointF>
#include <span>
#include <vector>

namespace amp::ui {

// What the y values become on the way out. The log domains drop y <= 0 (a log axis cannot show
// them, and Qt's QLogValueAxis would silently drop the whole series) and emit log_base(y), which
// the chart plots on a linear axis labelled in powers of the base.
enum class YDomain { Linear, Log2, Log10 };

struct DecimationRange {
  double xMin = 0;
  double xMax = 0;
  int columns = 0;  // pixel columns the range spans on screen (device pixels)
};

// Indices of the points to draw, ascending. x must be sorted ascending (steps are); non-finite y
// are skipped (the line joins across them), as are y <= 0 when positiveOnly. The nearest kept
// point on either side of [xMin, xMax] is included so the line runs on to the plot's edges.
// Ranges holding no more than 2 * columns points come back whole. Unless keepFlatRuns, a point
// whose kept neighbours both have its exact y is dropped (it changes nothing drawn: a loss
// scale held for 2000 steps is two points); keep them when several series share the indices.
std::vector<int> decimateMinMaxIndices(std::span<const double> x, std::span<const double> y,
                                       const DecimationRange& range, bool positiveOnly = false,
                                       bool keepFlatRuns = false);

// The same, as points ready for QXYSeries::replace(); y mapped into `domain`.
QList<QPointF> decimateMinMax(std::span<const double> x, std::span<const double> y,
                              const DecimationRange& range, YDomain domain = YDomain::Linear);

// Picks indices out of (x, y) as points, y mapped into `domain` (used to sample several stacked
// layers at one shared set of indices).
QList<QPointF> pointsAt(std::span<const double> x, std::span<const double> y, const std::vector<int>& indices,
                        YDomain domain = YDomain::Linear);

// Read-only view of a RunSeries column (QVector<double>) for the functions above.
inline std::span<const double> spanOf(const QList<double>& v) {
  return {v.constData(), std::size_t(v.size())};
}

// log2 / log10 / identity.
double toDomain(double y, YDomain domain);
double fromDomain(double v, YDomain domain);

}  // namespace amp::ui
