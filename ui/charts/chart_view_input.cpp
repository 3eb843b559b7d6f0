// ChartView's interaction: left drag = rubber-band x zoom (Qt's), wheel = x zoom around the cursor
// (Shift/Ctrl+wheel: y), middle/right drag = pan, arrows = pan, +/- = zoom, Home/Esc or
// double-click = back to auto-range, right click without moving = menu. Hovering shows a
// crosshair with every run's value at that step (hover_readout.h).
#include <QAreaSeries>
#include <QCategoryAxis>
#include <QKeyEvent>
#include <QLineSeries>
#include <QMenu>
#include <QMouseEvent>
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
    hideHover();
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
    if (run < 0)
      updateHover(pos);
    else
      hideHover();
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
  hideHover();
  if (m_hoveredLegendRun >= 0) {
    m_hoveredLegendRun = -1;
    m_runLegend->setHighlightedRun(-1);
    unsetCursor();
    emit legendRunHovered(-1);
  }
  QChartView::leaveEvent(event);
}

bool ChartView::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::Leave) leaveEvent(event);
  return QChartView::viewportEvent(event);
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
  hideHover();
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

void ChartView::updateHover(const QPoint& pos, bool force) {
  if (!force && (pos - m_lastHoverPos).manhattanLength() < 2) return;
  m_lastHoverPos = pos;
  const QPointF chartPos = m_chart->mapFromScene(mapToScene(pos));
  const QRectF plot = m_chart->plotArea();
  if (!plot.contains(chartPos)) {
    hideHover();
    return;
  }
  if (m_hoverProvider) {  // heat maps and bars: one cell's text, no crosshair
    const QString text = m_hoverProvider(m_chart->mapToValue(chartPos));
    if (text.isEmpty())
      hideHover();
    else
      m_readout->showReadout(plot, m_chart->rect(), chartPos, qQNaN(), text, {});
    return;
  }
  // Every run's value at the pointer's step; a run whose nearest point is more than 30 px away
  // (it ended earlier, or has not got there yet) has no row.
  const QList<ReadoutRow> rows =
      readoutRowsAt(m_chart, chartPos, 30.0 * m_presentationScale, [this](const QAbstractSeries* s, double y) {
        return m_logY && m_primarySeries.contains(const_cast<QAbstractSeries*>(s)) ? fromDomain(y, m_logDomain) : y;
      });
  if (rows.isEmpty()) {
    hideHover();
    return;
  }
  double lineX = rows.front().position.x();
  for (const ReadoutRow& r : rows)
    if (r.nearest) lineX = r.position.x();
  const QString xLabel = m_x && !m_x->titleText().isEmpty() ? m_x->titleText() : tr("step");
  m_readout->showReadout(plot, m_chart->rect(), chartPos, lineX, readoutHtml(xLabel, rows), rows);
}

void ChartView::hideHover() { m_readout->hide(); }

QString ChartView::hoverText() const { return m_readout->isVisible() ? m_readout->html() : QString(); }

QRectF ChartView::hoverBoxSceneRect() const {
  return m_readout->isVisible() ? m_readout->mapRectToScene(m_readout->boxRect()) : QRectF();
}

}  // namespace amp::ui
