// ChartView's interaction: left drag = rubber-band x zoom (Qt's), wheel = x zoom around the cursor
// (Shift/Ctrl+wheel: y), middle/right drag = pan, arrows = pan, +/- = zoom, Home/Esc or
// double-click = back to auto-range, right click without moving = menu. Hovering shows the
// nearest plotted point (step, value, run).
#include <QAreaSeries>
#include <QCategoryAxis>
#include <QKeyEvent>
#include <QLineSeries>
#include <QMenu>
#include <QMouseEvent>
#include <QToolTip>
#include <QValueAxis>
#include <QResizeEvent>
#include <QWheelEvent>
#include <QXYSeries>
#include <algorithm>
#include <cmath>

#include "ui/charts/chart_view.h"

namespace amp::ui {

void ChartView::mousePressEvent(QMouseEvent* event) {
  const Qt::MouseButton b = event->button();
  if (b == Qt::LeftButton) {
    const int run = legendRunAt(event->position().toPoint());
    if (run >= 0) {  // a legend entry: hide or show that run, no zoom
      emit legendRunClicked(run);
      event->accept();
      return;
    }
  }
  if (b == Qt::MiddleButton || b == Qt::RightButton) {
    m_panButton = b;
    m_panStart = m_panLast = event->position().toPoint();
    m_panMoved = false;
    QToolTip::hideText();
    event->accept();
    return;
  }
  if (b == Qt::LeftButton && m_interactive && m_x) QChartView::mousePressEvent(event);
}

void ChartView::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (m_panButton != Qt::NoButton) {
    if ((pos - m_panStart).manhattanLength() > 3) m_panMoved = true;
    if (m_panMoved && m_interactive) {
      const QPoint total = pos - m_panStart;
      // Small vertical jitter while dragging sideways must not freeze the y auto-range.
      const double dy = std::abs(total.y()) > 12 || !m_autoY ? pos.y() - m_panLast.y() : 0.0;
      panBy(pos.x() - m_panLast.x(), dy);
    }
    m_panLast = pos;
    event->accept();
    return;
  }
  if (event->buttons() == Qt::NoButton) {
    const int run = legendRunAt(pos);
    if (run != m_hoveredLegendRun) {
      m_hoveredLegendRun = run;
      m_runLegend->setHighlightedRun(run);
      setCursor(run >= 0 ? Qt::PointingHandCursor : Qt::ArrowCursor);
      emit legendRunHovered(run);
    }
    if (run < 0) updateHover(pos);
  }
  QChartView::mouseMoveEvent(event);
}

void ChartView::mouseReleaseEvent(QMouseEvent* event) {
  if (m_panButton != Qt::NoButton && event->button() == m_panButton) {
    const bool click = !m_panMoved && m_panButton == Qt::RightButton;
    m_panButton = Qt::NoButton;
    if (click) showContextMenu(event->position().toPoint());
    event->accept();
    return;
  }
  if (event->button() != Qt::LeftButton || !m_interactive || !m_x) return;
  const double oldMin = m_x->min(), oldMax = m_x->max();
  QChartView::mouseReleaseEvent(event);  // the rubber band zooms the chart here
  if (m_x->min() != oldMin || m_x->max() != oldMax) {
    m_autoX = false;  // y stays automatic: it fits the data now in view
    emit viewChanged();
  }
}

void ChartView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    resetView();
    event->accept();
  }
}

void ChartView::wheelEvent(QWheelEvent* event) {
  if (!m_interactive || !m_x) {
    event->ignore();
    return;
  }
  const double notches = event->angleDelta().y() / 120.0;
  if (notches == 0) return;
  const double factor = std::pow(0.85, notches);
  const QPointF pos = mapToScene(event->position().toPoint());
  const QPointF chartPos = m_chart->mapFromScene(pos);
  if (event->modifiers() & (Qt::ShiftModifier | Qt::ControlModifier))
    zoomYAround(factor, chartPos.y());
  else
    zoomXAround(factor, chartPos.x());
  event->accept();
}

void ChartView::keyPressEvent(QKeyEvent* event) {
  const QRectF plot = m_chart->plotArea();
  switch (event->key()) {
    case Qt::Key_Left:
      panBy(plot.width() * 0.1, 0);
      break;
    case Qt::Key_Right:
      panBy(-plot.width() * 0.1, 0);
      break;
    case Qt::Key_Up:
      panBy(0, plot.height() * 0.1);
      break;
    case Qt::Key_Down:
      panBy(0, -plot.height() * 0.1);
      break;
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      zoomXAround(0.8, plot.center().x());
      break;
    case Qt::Key_Minus:
      zoomXAround(1.25, plot.center().x());
      break;
    case Qt::Key_Home:
    case Qt::Key_Escape:
      resetView();
      break;
    case Qt::Key_L:
      toggleLogY();
      break;
    default:
      QChartView::keyPressEvent(event);
      return;
  }
  event->accept();
}

void ChartView::leaveEvent(QEvent* event) {
  QToolTip::hideText();
  if (m_hoveredLegendRun >= 0) {
    m_hoveredLegendRun = -1;
    m_runLegend->setHighlightedRun(-1);
    unsetCursor();
    emit legendRunHovered(-1);
  }
  QChartView::leaveEvent(event);
}

void ChartView::resizeEvent(QResizeEvent* event) {
  QChartView::resizeEvent(event);  // resizes the chart
  layoutRunLegend();
}

void ChartView::setUserXRange(double min, double max) {
  if (!m_x || !(max - min > 1e-9) || !std::isfinite(min) || !std::isfinite(max)) return;
  m_autoX = false;
  setXRange(min, max);
  emit viewChanged();
}

void ChartView::zoomXAround(double factor, double pixelX) {
  if (!m_interactive || !m_x) return;
  const QRectF plot = m_chart->plotArea();
  const double frac = std::clamp((pixelX - plot.left()) / std::max(1.0, plot.width()), 0.0, 1.0);
  const double lo = m_x->min(), hi = m_x->max();
  const double c = lo + frac * (hi - lo);
  setUserXRange(c - (c - lo) * factor, c + (hi - c) * factor);
}

void ChartView::zoomYAround(double factor, double pixelY) {
  const QRectF plot = m_chart->plotArea();
  const double frac = std::clamp((plot.bottom() - pixelY) / std::max(1.0, plot.height()), 0.0, 1.0);
  m_autoY = false;
  for (QValueAxis* axis : {yAxis(), m_ySecondary}) {
    if (!axis) continue;
    const double lo = axis->min(), hi = axis->max(), c = lo + frac * (hi - lo);
    const double newLo = c - (c - lo) * factor, newHi = c + (hi - c) * factor;
    if (qobject_cast<QCategoryAxis*>(axis))
      setAxisRange(axis, newLo, newHi);
    else
      setRangeWithTicks(axis, newLo, newHi, niceStep(newHi - newLo, 5));
  }
}

void ChartView::panBy(double dxPixels, double dyPixels) {
  if (!m_interactive || !m_x) return;
  const QRectF plot = m_chart->plotArea();
  if (plot.width() < 1 || plot.height() < 1) return;
  if (dyPixels != 0) {
    m_autoY = false;
    for (QValueAxis* axis : {yAxis(), m_ySecondary}) {
      if (!axis) continue;
      const double dv = dyPixels * (axis->max() - axis->min()) / plot.height();
      setAxisRange(axis, axis->min() + dv, axis->max() + dv);
    }
  }
  if (dxPixels != 0) {
    const double dv = -dxPixels * (m_x->max() - m_x->min()) / plot.width();
    setUserXRange(m_x->min() + dv, m_x->max() + dv);
  }
}

void ChartView::showContextMenu(const QPoint& pos) {
  QMenu menu(this);
  menu.addAction(tr("Reset view"), this, &ChartView::resetView);
  if (m_logAllowed) {
    QAction* log = menu.addAction(tr("Log scale"), this, &ChartView::toggleLogY);
    log->setCheckable(true);
    log->setChecked(m_logY);
  }
  menu.addSeparator();
  menu.addAction(tr("Export as PNG…"), this, [this] { emit exportRequested(ExportFormat::Png); });
  menu.addAction(tr("Export as SVG…"), this, [this] { emit exportRequested(ExportFormat::Svg); });
  menu.addAction(tr("Export as PDF…"), this, [this] { emit exportRequested(ExportFormat::Pdf); });
  menu.exec(mapToGlobal(pos));
}

void ChartView::updateHover(const QPoint& pos) {
  if ((pos - m_lastHoverPos).manhattanLength() < 2) return;
  m_lastHoverPos = pos;
  const QPointF chartPos = m_chart->mapFromScene(mapToScene(pos));
  const QString text = m_chart->plotArea().contains(chartPos) ? nearestPointText(chartPos) : QString();
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(mapToGlobal(pos), text, this, QRect(), 10000);
}

QString ChartView::nearestPointText(const QPointF& chartPos) const {
  if (m_hoverProvider) return m_hoverProvider(m_chart->mapToValue(chartPos));
  constexpr double kMaxDistance2 = 20.0 * 20.0;
  double best = kMaxDistance2;
  const QAbstractSeries* bestSeries = nullptr;
  QPointF bestValue;
  for (QAbstractSeries* s : m_chart->series()) {
    if (!s->isVisible() || s->property("ampNoHover").toBool()) continue;
    const auto* area = qobject_cast<const QAreaSeries*>(s);
    const QXYSeries* xy =
        area ? static_cast<const QXYSeries*>(area->upperSeries()) : qobject_cast<const QXYSeries*>(s);
    if (!xy) continue;
    const QList<QPointF> points = xy->points();
    if (points.isEmpty()) continue;
    // Points are sorted by x: look only at the few around the cursor.
    const double cx = m_chart->mapToValue(chartPos, s).x();
    const auto it = std::lower_bound(points.begin(), points.end(), cx,
                                     [](const QPointF& p, double x) { return p.x() < x; });
    const qsizetype at = it - points.begin();
    for (qsizetype i = std::max<qsizetype>(0, at - 48); i < std::min(points.size(), at + 48); ++i) {
      const QPointF d = m_chart->mapToPosition(points[i], s) - chartPos;
      const double d2 = d.x() * d.x() + d.y() * d.y();
      if (d2 >= best) continue;
      best = d2;
      bestSeries = s;
      bestValue = points[i];
      if (area && area->lowerSeries() && area->lowerSeries()->count() > i)
        bestValue.ry() -= area->lowerSeries()->at(i).y();  // the layer, not the stack
    }
  }
  if (!bestSeries) return {};
  QString run = bestSeries->property("ampRun").toString();
  if (run.isEmpty()) run = bestSeries->name();
  QString what = bestSeries->property("ampValue").toString();
  if (what.isEmpty()) what = tr("value");
  const QString xLabel = m_x && !m_x->titleText().isEmpty() ? m_x->titleText() : tr("step");
  double y = bestValue.y();
  if (m_logY && m_primarySeries.contains(const_cast<QAbstractSeries*>(bestSeries)))
    y = fromDomain(y, m_logDomain);
  return QStringLiteral("<b>%1</b><br/>%2 %3<br/>%4 %5")
      .arg(run.toHtmlEscaped(), xLabel,
           QString::number(bestValue.x(), 'f', std::abs(bestValue.x() - std::round(bestValue.x())) < 1e-9 ? 0 : 2),
           what.toHtmlEscaped(),
           QString::number(y, 'g', 5));
}

}  // namespace amp::ui
