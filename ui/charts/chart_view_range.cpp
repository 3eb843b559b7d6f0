// ChartView's ranges: what to decimate, automatic ranges with round ticks, quiet replaces that
// Qt lays out once per refresh, reset, and the reaction to a resized plot area.
#include <QAreaSeries>
#include <QCategoryAxis>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QLineSeries>
#include <QSignalBlocker>
#include <QValueAxis>
#include <QXYSeries>
#include <algorithm>
#include <cmath>

#include "ui/charts/chart_view.h"

namespace amp::ui {

// --- ranges ------------------------------------------------------------------------------------

double ChartView::deviceColumnsPerPixel() const {
  return m_renderColumnsPerPixel > 0 ? m_renderColumnsPerPixel : devicePixelRatioF();
}

DecimationRange ChartView::decimationRange(double dataXMin, double dataXMax) const {
  DecimationRange r;
  const double plotWidth = m_chart->plotArea().width();
  r.columns =
      int(std::max(plotWidth > 10 ? plotWidth : std::max(200, width()), 10.0) * deviceColumnsPerPixel());
  if (m_autoX || !m_x) {
    r.xMin = dataXMin;
    r.xMax = dataXMax;
  } else {
    r.xMin = m_x->min();
    r.xMax = m_x->max();
  }
  return r;
}

void ChartView::setXRange(double min, double max) {
  if (!m_x) return;
  if (!(max > min)) {
    min -= 1;
    max += 1;
  }
  if (qobject_cast<QCategoryAxis*>(m_x)) {
    setAxisRange(m_x, min, max);  // labels are its ticks
    return;
  }
  const double interval = niceStep(max - min, 5);
  // As many decimals as the ticks need (epochs, seconds): "%.0f" printed 0.25 and 0.5 as "0".
  const int decimals = interval > 0 && interval < 1 ? int(std::ceil(-std::log10(interval) - 1e-9)) : 0;
  const QString format = QStringLiteral("%.%1f").arg(decimals);
  if (m_x->labelFormat() != format) m_x->setLabelFormat(format);
  setRangeWithTicks(m_x, min, max, interval);
}

// Only when it changes: every range change re-lays out every series of the chart (Qt Charts
// rebuilds each line's path and hover shape), the main cost of a refresh.
void ChartView::setAxisRange(QValueAxis* axis, double min, double max) {
  if (axis->min() != min || axis->max() != max) axis->setRange(min, max);
}

// Ticks at multiples of `interval` (Qt's dynamic ticks). The order of the two changes matters:
// Qt lays the axis out after each, and a small interval on the old, wide range (or the old
// interval on a new, wide range) would briefly create thousands of tick items.
void ChartView::setRangeWithTicks(QValueAxis* axis, double min, double max, double interval) {
  if (!(interval > 0)) {
    setAxisRange(axis, min, max);
    return;
  }
  const bool dynamic = axis->tickType() == QValueAxis::TicksDynamic;
  const double oldInterval = dynamic ? axis->tickInterval() : 0;
  const double ticksIfIntervalFirst = (axis->max() - axis->min()) / interval;
  const double ticksIfRangeFirst = oldInterval > 0 ? (max - min) / oldInterval : 0;
  if (!dynamic || ticksIfRangeFirst <= ticksIfIntervalFirst) {
    setAxisRange(axis, min, max);
    if (axis->tickInterval() != interval) axis->setTickInterval(interval);
  } else {
    if (axis->tickInterval() != interval) axis->setTickInterval(interval);
    setAxisRange(axis, min, max);
  }
  if (!dynamic) {
    axis->setTickAnchor(0);
    axis->setTickType(QValueAxis::TicksDynamic);
  }
}

void ChartView::updateXTicks() {
  // After a rubber-band zoom (Qt set the range): ticks for the new, smaller range.
  if (!m_x || qobject_cast<QCategoryAxis*>(m_x) || m_x->tickType() != QValueAxis::TicksDynamic) return;
  const double interval = niceStep(m_x->max() - m_x->min(), 5);
  if (interval > 0 && m_x->tickInterval() != interval) m_x->setTickInterval(interval);
}

double ChartView::niceStep(double span, int ticks) {
  const double raw = span / std::max(1, ticks - 1);
  if (!(raw > 0) || !std::isfinite(raw)) return 0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / magnitude;
  return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * magnitude;
}

void ChartView::setNiceRange(QValueAxis* axis, double lo, double hi, int ticks) {
  // Outward to multiples of a 1, 2 or 5 x 10^k step, ticks on those multiples: one setRange,
  // where QValueAxis::applyNiceNumbers() would change the range twice.
  const double step = niceStep(hi - lo, ticks);
  if (step <= 0) {
    setAxisRange(axis, lo, hi);
    return;
  }
  const double niceLo = std::floor(lo / step + 1e-9) * step;
  const double niceHi = std::ceil(hi / step - 1e-9) * step;
  setRangeWithTicks(axis, niceLo, niceHi, step);
}

void ChartView::replacePoints(QXYSeries* series, const QList<QPointF>& points) {
  // Qt skips the relayout of an empty series on a range change: those are replaced openly.
  if (points.isEmpty() || series->chart() != m_chart) {
    series->replace(points);
    return;
  }
  {
    const QSignalBlocker quiet(series);
    series->replace(points);
  }
  if (!m_replaced.contains(series)) m_replaced.append(series);
  if (!m_flushQueued) {  // in case no applyAutoRange() follows
    m_flushQueued = true;
    QMetaObject::invokeMethod(
        this, [this] { flushReplaced({}); }, Qt::QueuedConnection);
  }
}

void ChartView::flushReplaced(const QList<const QAbstractAxis*>& relaidOut) {
  m_flushQueued = false;
  for (QXYSeries* s : std::as_const(m_replaced)) {
    bool done = false;
    for (const QAbstractAxis* axis : s->attachedAxes()) done = done || relaidOut.contains(axis);
    if (!done) emit s->pointsReplaced();
  }
  m_replaced.clear();
}

void ChartView::applyAutoRange(double dataXMin, double dataXMax) {
  reapplyLegendVisibility();
  // No data: no tick labels either (an empty chart showed "0 0 1 1 1"), the placeholder says why.
  m_hasData = std::isfinite(dataXMin) && std::isfinite(dataXMax);
  updateLabelVisibility();
  // Note which axes move: their series are laid out anew by Qt, with their new points.
  QList<QPair<QValueAxis*, QPointF>> before;
  for (QValueAxis* axis : {m_x, yAxis(), m_ySecondary})
    if (axis) before.append({axis, QPointF(axis->min(), axis->max())});
  if (m_autoX && m_x && std::isfinite(dataXMin) && std::isfinite(dataXMax)) setXRange(dataXMin, dataXMax);
  if (m_autoY) {
    fitYAxis(yAxis(), m_logY);
    if (m_ySecondary && m_ySecondary->isVisible()) fitYAxis(m_ySecondary, false);
  }
  QList<const QAbstractAxis*> moved;
  for (const auto& [axis, range] : before)
    if (axis->min() != range.x() || axis->max() != range.y()) moved.append(axis);
  flushReplaced(moved);
  // Live data under a still pointer: the readout follows the new values (and ranges).
  if (!m_inRender && m_readout->isVisible() && underMouse()) updateHover(m_lastHoverPos, true);
}

void ChartView::fitYAxis(QValueAxis* axis, bool log) {
  const double xLo = m_x ? m_x->min() : -qInf(), xHi = m_x ? m_x->max() : qInf();
  double lo = qInf(), hi = -qInf();
  bool zeroBaseline = false;
  const auto scan = [&](const QList<QPointF>& points) {
    for (const QPointF& p : points) {
      if (p.x() < xLo || p.x() > xHi || !std::isfinite(p.y())) continue;
      lo = std::min(lo, p.y());
      hi = std::max(hi, p.y());
    }
  };
  for (QAbstractSeries* s : m_chart->series()) {
    if (!s->isVisible() || s->property("ampNoAutoRange").toBool() || !s->attachedAxes().contains(axis))
      continue;
    if (auto* area = qobject_cast<QAreaSeries*>(s)) {
      if (area->upperSeries()) scan(area->upperSeries()->points());
      if (area->lowerSeries())
        scan(area->lowerSeries()->points());
      else
        zeroBaseline = true;
    } else if (auto* xy = qobject_cast<QXYSeries*>(s)) {
      scan(xy->points());
    }
  }
  if (lo > hi) return;  // nothing to fit: keep the range
  if (zeroBaseline) lo = std::min(lo, 0.0);
  if (log) {
    // Beyond the data by a twentieth of the span (at least a quarter of a power): a loss scale
    // that sits at 2^16 or 2^0 for a whole run is a line clear of the frame, not on it (issue 25),
    // and markers at the extremes stay whole.
    // At least a power either side of a flat line, so the axis names its neighbours (a lone
    // "2^16" beside a flat line read as an empty chart in exports, issue 42 item 5).
    const double mid = (lo + hi) / 2;
    lo = std::min(lo, mid - 1.0);
    hi = std::max(hi, mid + 1.0);
    const double pad = std::max(0.25, 0.05 * (hi - lo));
    lo -= pad;
    hi += pad;
    setAxisRange(axis, lo, hi);
    return;
  }
  const AxisState state = m_axisState.value(axis);
  if (state.includeZero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (state.minSpan > 0 && hi - lo < state.minSpan) {
    // Widened about the data's middle, then shifted back inside the floor and ceiling.
    const double mid = (lo + hi) / 2;
    lo = mid - state.minSpan / 2;
    hi = mid + state.minSpan / 2;
    if (lo < state.spanFloor) {
      hi += state.spanFloor - lo;
      lo = state.spanFloor;
    }
    if (hi > state.spanCeiling) {
      lo -= hi - state.spanCeiling;
      hi = state.spanCeiling;
    }
    setNiceRange(axis, lo, hi);
    return;
  }
  if (hi - lo <= 1e-12 * std::max(1.0, std::abs(hi))) {
    const double pad = std::abs(hi) > 0 ? std::abs(hi) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  } else {
    const double pad = (hi - lo) * 0.04;
    // Padding must not invent negative values for positive data (losses, bytes) or vice versa.
    if (lo != 0) lo = lo > 0 ? std::max(0.0, lo - pad) : lo - pad;
    if (hi != 0) hi = hi < 0 ? std::min(0.0, hi + pad) : hi + pad;
  }
  setNiceRange(axis, lo, hi);
}

void ChartView::resetView() {
  m_autoX = m_autoY = true;
  emit viewChanged();
}

void ChartView::placeOverlays(const QRectF& plotArea) {
  if (!m_placeholderText.isEmpty()) {
    // Wrapped to the plot's width and centred, so a long message never spills off the chart.
    m_placeholder->setTextWidth(std::max(40.0, plotArea.width() - 16));
    const QRectF r = m_placeholder->boundingRect();
    m_placeholder->setPos(plotArea.left() + 8, plotArea.center().y() - r.height() / 2);
  }
  if (m_captionBox->isVisible() && !m_captionBelow) {
    const QRectF r = m_caption->boundingRect();
    m_captionBox->setRect(0, 0, r.width() + 8, r.height() + 4);
    m_caption->setPos(4, 2);
    const double x =
        (m_captionCorner & Qt::AlignRight) ? plotArea.right() - r.width() - 12 : plotArea.left() + 4;
    const double y =
        (m_captionCorner & Qt::AlignBottom) ? plotArea.bottom() - r.height() - 8 : plotArea.top() + 4;
    m_captionBox->setPos(x, y);
  }
}

void ChartView::onPlotAreaChanged(const QRectF& plotArea) {
  placeOverlays(plotArea);
  // A new width changes how many columns the data should be decimated to. Queued: this runs
  // inside Qt Charts' own layout (an axis range change re-lays the chart out synchronously),
  // where refreshing again would recurse.
  if (m_inRender || m_viewChangePending) return;
  if (std::abs(plotArea.width() - m_lastPlotWidth) > 4) {
    m_viewChangePending = true;
    QMetaObject::invokeMethod(
        this,
        [this] {
          m_viewChangePending = false;
          const double width = m_chart->plotArea().width();
          if (std::abs(width - m_lastPlotWidth) <= 4) return;
          m_lastPlotWidth = width;
          emit viewChanged();
        },
        Qt::QueuedConnection);
  }
}

}  // namespace amp::ui
