// ChartView: chart setup, axes, log labels, auto-range, theme and export. Mouse, keyboard and
// tooltip handling live in chart_view_input.cpp.
#include "ui/charts/chart_view.h"

#include <QAreaSeries>
#include <QCategoryAxis>
#include <QGraphicsLayout>
#include <QGraphicsSimpleTextItem>
#include <QLegend>
#include <QPaintEngine>
#include <QValueAxis>
#include <QXYSeries>
#include <cmath>

namespace amp::ui {

namespace {

QString superscript(int n) {
  static const QChar digits[] = {u'⁰', u'¹', u'²', u'³', u'⁴', u'⁵', u'⁶', u'⁷', u'⁸', u'⁹'};
  QString out = n < 0 ? QStringLiteral("⁻") : QString();
  const QString plain = QString::number(std::abs(n));
  for (QChar c : plain) out += digits[c.digitValue()];
  return out;
}

// "2¹⁶" for log2; plain decimals near 1 for log10 ("0.01", "100"), "10⁻⁵" beyond.
QString powerLabel(int k, YDomain domain) {
  if (domain == YDomain::Log2) return QStringLiteral("2") + superscript(k);
  if (k >= -3 && k <= 4) return QString::number(std::pow(10.0, k), 'f', k < 0 ? -k : 0);
  return QStringLiteral("10") + superscript(k);
}

void setFontSize(QFont& f, int pt, bool bold = false) {
  f.setPointSize(pt);
  f.setBold(bold);
}

}  // namespace

ChartView::ChartView(QWidget* parent)
    : QChartView(new QChart, parent),
      m_yLinear(new QValueAxis(this)),
      m_yLog(new QCategoryAxis(this)) {
  m_chart = QChartView::chart();
  m_chart->setAnimationOptions(QChart::NoAnimation);  // live data: animations only lag
  m_chart->setBackgroundRoundness(0);
  m_chart->setMargins(QMargins(4, 4, 4, 4));
  m_chart->layout()->setContentsMargins(0, 0, 0, 0);
  m_chart->legend()->setAlignment(Qt::AlignBottom);
  m_chart->legend()->setShowToolTips(true);  // full names when the legend elides them
  QFont font = m_chart->titleFont();
  setFontSize(font, 10, true);
  m_chart->setTitleFont(font);
  font = m_chart->legend()->font();
  setFontSize(font, 8);
  m_chart->legend()->setFont(font);

  m_x = new QValueAxis(this);
  m_x->setLabelFormat(QStringLiteral("%.0f"));
  m_chart->addAxis(m_x, Qt::AlignBottom);
  m_yLinear->setLabelFormat(QStringLiteral("%g"));
  m_chart->addAxis(m_yLinear, Qt::AlignLeft);
  m_yLog->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  for (QAbstractAxis* axis : {static_cast<QAbstractAxis*>(m_x), static_cast<QAbstractAxis*>(m_yLinear),
                              static_cast<QAbstractAxis*>(m_yLog)})
    styleAxis(axis);
  connect(m_yLog, &QValueAxis::rangeChanged, this, &ChartView::updateLogLabels);

  m_placeholder = new QGraphicsSimpleTextItem(m_chart);
  font = m_placeholder->font();
  setFontSize(font, 11);
  m_placeholder->setFont(font);
  m_placeholder->setZValue(100);
  m_placeholder->hide();
  connect(m_chart, &QChart::plotAreaChanged, this, &ChartView::onPlotAreaChanged);

  setRenderHint(QPainter::Antialiasing);
  setRubberBand(QChartView::HorizontalRubberBand);
  setMouseTracking(true);
  setFocusPolicy(Qt::ClickFocus);
  setFrameShape(QFrame::NoFrame);
  setMinimumSize(200, 150);
  applyTheme();
}

void ChartView::setTitle(const QString& title) {
  if (m_chart->title() != title) m_chart->setTitle(title);
}
QString ChartView::title() const { return m_chart->title(); }

void ChartView::setAxisTitles(const QString& x, const QString& y) {
  if (m_x) m_x->setTitleText(x);
  m_yLinear->setTitleText(y);
  m_yLog->setTitleText(y);
}

QValueAxis* ChartView::yAxis() const { return m_logY ? m_yLog : m_yLinear; }

QValueAxis* ChartView::addSecondaryYAxis(const QString& title) {
  if (!m_ySecondary) {
    m_ySecondary = new QValueAxis(this);
    m_ySecondary->setLabelFormat(QStringLiteral("%g"));
    m_chart->addAxis(m_ySecondary, Qt::AlignRight);
    styleAxis(m_ySecondary);
  }
  m_ySecondary->setTitleText(title);
  return m_ySecondary;
}

void ChartView::setXAxis(QValueAxis* axis) {
  if (m_x) {
    m_chart->removeAxis(m_x);
    m_x->deleteLater();
  }
  m_x = axis;
  if (m_x) {
    m_chart->addAxis(m_x, Qt::AlignBottom);
    styleAxis(m_x);
  }
}

void ChartView::addAxis(QAbstractAxis* axis, Qt::Alignment alignment) {
  m_chart->addAxis(axis, alignment);
  styleAxis(axis);
}

void ChartView::addSeries(QAbstractSeries* series, QAbstractAxis* y) {
  m_chart->addSeries(series);
  if (m_x) series->attachAxis(m_x);
  if (y) {
    series->attachAxis(y);
  } else {
    series->attachAxis(yAxis());
    m_primarySeries.append(series);
  }
}

void ChartView::removeAllSeries() {
  m_primarySeries.clear();
  m_chart->removeAllSeries();  // deletes them
}

void ChartView::setLegendEntryVisible(QAbstractSeries* series, bool visible) {
  for (QLegendMarker* marker : m_chart->legend()->markers(series)) marker->setVisible(visible);
}

void ChartView::setPlaceholder(const QString& text) {
  if (m_placeholder->text() == text && m_placeholder->isVisible() == !text.isEmpty()) return;
  m_placeholder->setText(text);
  m_placeholder->setVisible(!text.isEmpty());
  onPlotAreaChanged(m_chart->plotArea());
}

void ChartView::setIncludeZero(QAbstractAxis* yAxis, bool include) {
  m_axisState[yAxis].includeZero = include;
}

void ChartView::setHoverTextProvider(std::function<QString(const QPointF&)> provider) {
  m_hoverProvider = std::move(provider);
}

// --- log y -------------------------------------------------------------------------------------

void ChartView::setLogYAllowed(bool allowed, YDomain logDomain) {
  m_logAllowed = allowed;
  m_logDomain = logDomain == YDomain::Linear ? YDomain::Log10 : logDomain;
  if (!allowed) setLogY(false);
}

void ChartView::setLogY(bool on) {
  if (on == m_logY || (on && !m_logAllowed)) return;
  QValueAxis* from = yAxis();
  m_logY = on;
  QValueAxis* to = yAxis();
  m_axisState[to] = m_axisState.value(from);
  m_chart->removeAxis(from);  // detaches the series, keeps the axis (we own it)
  m_chart->addAxis(to, Qt::AlignLeft);
  for (QAbstractSeries* s : std::as_const(m_primarySeries)) s->attachAxis(to);
  m_autoY = true;  // old y range means nothing in the new domain
  emit logYToggled(on);
  emit viewChanged();
}

void ChartView::updateLogLabels() {
  if (m_labelsBusy) return;
  m_labelsBusy = true;
  const QStringList old = m_yLog->categoriesLabels();
  for (const QString& label : old) m_yLog->remove(label);
  const double lo = m_yLog->min(), hi = m_yLog->max();
  const int first = int(std::ceil(lo - 1e-9)), last = int(std::floor(hi + 1e-9));
  const int count = std::max(1, last - first + 1);
  const int stride = std::max(1, int(std::ceil(count / 7.0)));  // about 7 labels at most
  m_yLog->setStartValue(lo);
  for (int k = first; k <= last; ++k)
    if ((k % stride) == 0) m_yLog->append(powerLabel(k, m_logDomain), k);
  m_labelsBusy = false;
}

// --- ranges ------------------------------------------------------------------------------------

double ChartView::deviceColumnsPerPixel() const {
  return m_renderColumnsPerPixel > 0 ? m_renderColumnsPerPixel : devicePixelRatioF();
}

DecimationRange ChartView::decimationRange(double dataXMin, double dataXMax) const {
  DecimationRange r;
  const double plotWidth = m_chart->plotArea().width();
  r.columns = int(std::max(plotWidth > 10 ? plotWidth : std::max(200, width()), 10.0) *
                  deviceColumnsPerPixel());
  if (m_autoX || !m_x) {
    r.xMin = dataXMin;
    r.xMax = dataXMax;
  } else {
    r.xMin = m_x->min();
    r.xMax = m_x->max();
  }
  return r;
}

void ChartView::setXRangeGuarded(double min, double max) {
  if (!m_x) return;
  if (!(max > min)) {
    min -= 1;
    max += 1;
  }
  m_settingRange = true;
  m_x->setRange(min, max);
  m_settingRange = false;
}

void ChartView::setYRangeGuarded(QValueAxis* axis, double min, double max) {
  m_settingRange = true;
  axis->setRange(min, max);
  m_settingRange = false;
}

void ChartView::applyAutoRange(double dataXMin, double dataXMax) {
  if (m_autoX && m_x && std::isfinite(dataXMin) && std::isfinite(dataXMax))
    setXRangeGuarded(dataXMin, dataXMax);
  if (!m_autoY) return;
  fitYAxis(yAxis(), m_logY);
  if (m_ySecondary) fitYAxis(m_ySecondary, false);
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
      if (area->lowerSeries()) scan(area->lowerSeries()->points());
      else zeroBaseline = true;
    } else if (auto* xy = qobject_cast<QXYSeries*>(s)) {
      scan(xy->points());
    }
  }
  if (lo > hi) return;  // nothing to fit: keep the range
  if (zeroBaseline) lo = std::min(lo, 0.0);
  if (log) {
    lo = std::floor(lo);
    hi = std::ceil(hi);
    if (hi - lo < 1) hi = lo + 1;
    setYRangeGuarded(axis, lo, hi);
    return;
  }
  if (m_axisState.value(axis).includeZero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (hi - lo <= 1e-12 * std::max(1.0, std::abs(hi))) {
    const double pad = std::abs(hi) > 0 ? std::abs(hi) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  } else {
    const double pad = (hi - lo) * 0.04;
    if (lo != 0) lo -= pad;
    if (hi != 0) hi += pad;
  }
  setYRangeGuarded(axis, lo, hi);
  m_settingRange = true;
  axis->applyNiceNumbers();
  m_settingRange = false;
}

void ChartView::resetView() {
  m_autoX = m_autoY = true;
  emit viewChanged();
}

void ChartView::onPlotAreaChanged(const QRectF& plotArea) {
  if (m_placeholder->isVisible()) {
    const QRectF r = m_placeholder->boundingRect();
    m_placeholder->setPos(plotArea.center() - QPointF(r.width() / 2, r.height() / 2));
  }
  // A new width changes how many columns the data should be decimated to.
  if (std::abs(plotArea.width() - m_lastPlotWidth) > 4) {
    m_lastPlotWidth = plotArea.width();
    emit viewChanged();
  }
}

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
  setFontSize(font, 8);
  axis->setLabelsFont(font);
  QFont titleFont = axis->titleFont();
  setFontSize(titleFont, 8);
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
  for (QAbstractAxis* axis : m_chart->axes()) styleAxis(axis);
  for (QAbstractAxis* axis : {static_cast<QAbstractAxis*>(m_yLinear), static_cast<QAbstractAxis*>(m_yLog)})
    styleAxis(axis);
  m_placeholder->setBrush(m_theme == Theme::Dark ? QColor(0xa0, 0xa0, 0xa0) : QColor(0x70, 0x70, 0x70));
  setBackgroundBrush(bg);
}

// --- export ------------------------------------------------------------------------------------

void ChartView::renderChart(QPainter* painter, const QRectF& target) {
  const QSizeF viewSize = m_chart->size();
  const QPaintEngine* engine = painter->paintEngine();
  const bool vector = engine && (engine->type() == QPaintEngine::SVG || engine->type() == QPaintEngine::Pdf);
  // Decimate for the output's pixels (a 300 dpi PNG has 3x the columns); vectors get 2 per unit.
  m_renderColumnsPerPixel = vector ? 2.0 : std::max(1.0, painter->deviceTransform().m11());
  m_lastPlotWidth = -1;  // the resize below must re-decimate
  m_chart->resize(target.size());  // lays out synchronously; plotAreaChanged re-decimates
  m_chart->scene()->render(painter, target, QRectF(m_chart->scenePos(), target.size()),
                           Qt::IgnoreAspectRatio);
  m_renderColumnsPerPixel = 0;
  m_lastPlotWidth = -1;
  m_chart->resize(viewSize);
}

bool ChartView::exportImage(const QString& path, const QString& format, QSize size, int dpi) {
  const auto f = exportFormatFor(path, format);
  if (!f) return false;
  ExportOptions options;
  if (!size.isEmpty()) options.size = size;
  else if (width() > 50 && height() > 50) options.size = this->size();
  options.dpi = dpi;
  options.background = backgroundColor();
  options.title = title();
  return exportPainting(path, *f, options, [this](QPainter* p, const QRectF& r) { renderChart(p, r); });
}

bool ChartView::exportPng(const QString& path, QSize size, int dpi) {
  return exportImage(path, QStringLiteral("png"), size, dpi);
}
bool ChartView::exportSvg(const QString& path, QSize size) {
  return exportImage(path, QStringLiteral("svg"), size);
}
bool ChartView::exportPdf(const QString& path, QSize size) {
  return exportImage(path, QStringLiteral("pdf"), size);
}

}  // namespace amp::ui
