// ChartView's look and output: light/dark colours applied by hand (QChart::setTheme would
// reset the run colours), and rendering at any size for PNG/SVG/PDF export.
#include <QCategoryAxis>
#include <QGraphicsLayout>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QLegend>
#include <QPaintEngine>
#include <QValueAxis>
#include <algorithm>

#include "ui/charts/chart_view.h"

namespace amp::ui {

// --- theme -------------------------------------------------------------------------------------

QColor ChartView::backgroundColor() const {
  return m_theme == Theme::Dark ? QColor(0x1f, 0x21, 0x24) : QColor(Qt::white);
}
QColor ChartView::textColor() const {
  return m_theme == Theme::Dark ? QColor(0xdc, 0xdc, 0xdc) : QColor(0x20, 0x20, 0x20);
}
QColor ChartView::gridColor() const {
  return m_theme == Theme::Dark ? QColor(0x3c, 0x3f, 0x44) : QColor(0xe3, 0xe3, 0xe3);
}

void ChartView::setTheme(Theme theme) {
  if (theme == m_theme) return;
  m_theme = theme;
  applyTheme();
  emit themeChanged();
}

// Colours set by hand rather than with QChart::setTheme(), which would also reset every
// series' pen and brush (the run colours).
void ChartView::styleAxis(QAbstractAxis* axis) const {
  QFont font = axis->labelsFont();
  setPointSize(font, 8 * m_presentationScale);
  axis->setLabelsFont(font);
  QFont titleFont = axis->titleFont();
  setPointSize(titleFont, 8 * m_presentationScale);
  axis->setTitleFont(titleFont);
  axis->setLabelsColor(textColor());
  axis->setTitleBrush(textColor());
  axis->setGridLineColor(gridColor());
  axis->setMinorGridLineColor(gridColor().lighter(m_theme == Theme::Dark ? 80 : 104));
  axis->setLinePenColor(m_theme == Theme::Dark ? QColor(0x80, 0x80, 0x80) : QColor(0x90, 0x90, 0x90));
}

void ChartView::applyTheme() {
  const QColor bg = backgroundColor();
  m_chart->setBackgroundBrush(bg);
  m_chart->setBackgroundPen(Qt::NoPen);
  m_chart->setPlotAreaBackgroundBrush(bg);
  m_chart->setPlotAreaBackgroundVisible(true);
  m_chart->setTitleBrush(textColor());
  m_chart->legend()->setLabelColor(textColor());
  m_runLegend->setTextColor(textColor());
  for (QAbstractAxis* axis : m_chart->axes()) styleAxis(axis);
  for (QAbstractAxis* axis : {static_cast<QAbstractAxis*>(m_yLinear), static_cast<QAbstractAxis*>(m_yLog)})
    styleAxis(axis);
  m_placeholder->setDefaultTextColor(m_theme == Theme::Dark ? QColor(0xa0, 0xa0, 0xa0)
                                                            : QColor(0x70, 0x70, 0x70));
  QColor box = bg;
  box.setAlphaF(0.85f);
  m_captionBox->setBrush(box);
  m_caption->setBrush(textColor());
  setBackgroundBrush(bg);
  styleReadout();
}

void ChartView::styleReadout() {
  QFont font = m_caption->font();
  setPointSize(font, 8.5 * m_presentationScale);
  m_readout->setLook(font, textColor(), backgroundColor(),
                     m_theme == Theme::Dark ? QColor(0x90, 0x90, 0x90) : QColor(0x80, 0x80, 0x80));
}

// --- export ------------------------------------------------------------------------------------

void ChartView::renderChart(QPainter* painter, const QRectF& target) {
  const QSizeF viewSize = m_chart->size();
  const QPaintEngine* engine = painter->paintEngine();
  const bool vector = engine && (engine->type() == QPaintEngine::SVG || engine->type() == QPaintEngine::Pdf);
  // Decimate for the output's pixels (a 300 dpi PNG has 3x the columns); vectors get 2 per unit.
  m_renderColumnsPerPixel = vector ? 2.0 : std::max(1.0, painter->deviceTransform().m11());
  m_inRender = true;
  hideHover();  // the pointer's readout is not part of the chart
  m_chart->resize(target.size());  // lays the chart out synchronously
  layoutRunLegend();               // the legend's rows for the export's width
  emit viewChanged();              // the panel re-decimates and re-ranges for this size
  m_chart->layout()->activate();   // new axis label widths, laid out before painting
  onPlotAreaChanged(m_chart->plotArea());
  m_chart->scene()->render(painter, target, QRectF(m_chart->scenePos(), target.size()),
                           Qt::IgnoreAspectRatio);
  m_renderColumnsPerPixel = 0;
  m_chart->resize(viewSize);
  layoutRunLegend();
  emit viewChanged();
  m_chart->layout()->activate();
  m_inRender = false;
  onPlotAreaChanged(m_chart->plotArea());
}

}  // namespace amp::ui
