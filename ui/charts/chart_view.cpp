// ChartView: chart setup, axes, series, overlays and the log y axis. Ranges and refresh in
// chart_view_range.cpp, theme and export in chart_view_render.cpp, mouse, keyboard and tooltip
// in chart_view_input.cpp.
#include "ui/charts/chart_view.h"

#include <QCategoryAxis>
#include <QGraphicsLayout>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QLegend>
#include <QLegendMarker>
#include <QTextDocument>
#include <QTextOption>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

namespace amp::ui {

QString superscript(int n) {
  static const QChar digits[] = {u'⁰', u'¹', u'²', u'³', u'⁴', u'⁵', u'⁶', u'⁷', u'⁸', u'⁹'};
  QString out = n < 0 ? QStringLiteral("⁻") : QString();
  const QString plain = QString::number(std::abs(n));
  for (QChar c : plain) out += digits[c.digitValue()];
  return out;
}

namespace {

// "2¹⁶" for log2; plain decimals near 1 for log10 ("0.01", "100"), "10⁻⁵" beyond.
QString powerLabel(int k, YDomain domain) {
  if (domain == YDomain::Log2) return QStringLiteral("2") + superscript(k);
  if (k >= -3 && k <= 4) return QString::number(std::pow(10.0, k), 'f', k < 0 ? -k : 0);
  return QStringLiteral("10") + superscript(k);
}

}  // namespace

ChartView::ChartView(QWidget* parent)
    : QChartView(new QChart, parent), m_yLinear(new QValueAxis(this)), m_yLog(new QCategoryAxis(this)) {
  m_chart = QChartView::chart();
  m_chart->setAnimationOptions(QChart::NoAnimation);  // live data: animations only lag
  m_chart->setBackgroundRoundness(0);
  m_chart->setMargins(QMargins(4, 4, 4, 4));
  m_chart->layout()->setContentsMargins(0, 0, 0, 0);
  m_chart->legend()->setAlignment(Qt::AlignBottom);
  m_chart->legend()->setShowToolTips(true);  // full names when the legend elides them
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
  connect(m_x, &QValueAxis::rangeChanged, this, &ChartView::updateXTicks);

  m_placeholder = new QGraphicsTextItem(m_chart);
  m_placeholder->document()->setDefaultTextOption(QTextOption(Qt::AlignHCenter));
  m_placeholder->setZValue(100);
  m_placeholder->hide();
  m_captionBox = new QGraphicsRectItem(m_chart);
  m_captionBox->setZValue(99);
  m_captionBox->setPen(Qt::NoPen);
  m_captionBox->hide();
  m_caption = new QGraphicsSimpleTextItem(m_captionBox);
  m_runLegend = new ChartLegend(m_chart);
  m_runLegend->setZValue(98);
  m_runLegend->hide();
  m_readout = new HoverReadout(m_chart);
  applyFonts();
  connect(m_chart, &QChart::plotAreaChanged, this, &ChartView::onPlotAreaChanged);

  setRenderHint(QPainter::Antialiasing);
  setRubberBand(QChartView::HorizontalRubberBand);
  setMouseTracking(true);
  setFocusPolicy(Qt::ClickFocus);
  setFrameShape(QFrame::NoFrame);
  setMinimumSize(200, 150);
  applyTheme();
}

void ChartView::setPointSize(QFont& font, double points, bool bold) {
  font.setPointSizeF(points);
  font.setBold(bold);
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
  m_ySecondary->setVisible(true);
  updateCompactAxes();
  return m_ySecondary;
}

// Hidden rather than removed: Qt Charts kept drawing a removed axis' labels over its successor.
void ChartView::hideSecondaryYAxis() {
  if (m_ySecondary) m_ySecondary->setVisible(false);
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
    connect(m_x, &QValueAxis::rangeChanged, this, &ChartView::updateXTicks);
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
  m_replaced.clear();
  m_chart->removeAllSeries();  // deletes them
}

void ChartView::setLegendEntryVisible(QAbstractSeries* series, bool visible) {
  series->setProperty("ampLegendHidden", !visible);
  reapplyLegendVisibility();
}

// Markers are compared with what we last set on them (a property), not with isVisible(): that
// reads false for every marker while QLegend keeps its items hidden until its next layout, so
// a marker to hide would look hidden already and stay shown.
void ChartView::reapplyLegendVisibility() {
  for (QLegendMarker* marker : m_chart->legend()->markers()) {
    const bool visible = !marker->series()->property("ampLegendHidden").toBool();
    const QVariant applied = marker->property("ampVisible");
    if (applied.isValid() && applied.toBool() == visible) continue;
    marker->setVisible(visible);
    marker->setProperty("ampVisible", visible);
  }
}

void ChartView::setRunLegend(const QString& heading, const QList<LegendEntry>& entries) {
  m_chart->legend()->setVisible(false);
  if (heading == m_runLegend->heading() && entries.size() == m_runLegend->entries().size()) {
    bool same = true;
    for (int i = 0; i < entries.size() && same; ++i) {
      const LegendEntry& a = entries[i];
      const LegendEntry& b = m_runLegend->entries()[i];
      same = a.label == b.label && a.color == b.color && a.style == b.style && a.glyph == b.glyph &&
             a.runId == b.runId && a.hidden == b.hidden;
    }
    if (same && m_runLegend->isVisible() == !entries.isEmpty()) return;
  }
  m_runLegend->setEntries(heading, entries);
  m_runLegend->setVisible(!entries.isEmpty());
  layoutRunLegend();
}

// Qt Charts gives all vertical axes together at most 40% of the chart's width and elides their
// tick labels to "…" beyond that: a narrow chart with an axis on each side (accuracy and test
// loss, samples/s and step time) drops the rotated axis titles and the right axis' labels, so
// the left axis' numbers keep their room. The hover still gives every value.
void ChartView::updateCompactAxes() {
  int vertical = 0;
  for (QAbstractAxis* axis : m_chart->axes(Qt::Vertical)) vertical += axis->isVisible() ? 1 : 0;
  // An export keeps the right axis down to a narrower chart: a dashboard exported at x1.5 (cells
  // of 600 px) dropped the test-loss axis, and its dashed lines read against the accuracy's.
  const double narrow = (m_inRender ? 300 : 420) * m_presentationScale;
  m_compactAxes = vertical >= 2 && m_chart->size().width() < narrow;
  // Narrow: only the secondary axis' tick labels go (the hover readout gives those values). Its
  // title and the primary's stay, so the dashed lines still say what they are: hiding the titles
  // too left the accuracy chart without a y label and its test-loss lines without an axis.
  for (QAbstractAxis* axis : m_chart->axes(Qt::Vertical))
    if (!axis->isTitleVisible()) axis->setTitleVisible(true);
  updateLabelVisibility();
}

void ChartView::updateLabelVisibility() {
  for (QAbstractAxis* axis : {static_cast<QAbstractAxis*>(m_x), static_cast<QAbstractAxis*>(yAxis()),
                              static_cast<QAbstractAxis*>(m_ySecondary)}) {
    if (!axis) continue;
    const bool want = m_hasData && !(m_compactAxes && axis == m_ySecondary);
    if (axis->labelsVisible() != want) axis->setLabelsVisible(want);
    if (axis == m_ySecondary && axis->isLineVisible() == m_compactAxes) axis->setLineVisible(!m_compactAxes);
  }
}

// Below the plot, in a bottom margin as tall as its rows: the chart lays its axes out above it.
void ChartView::layoutRunLegend() {
  updateCompactAxes();
  const QSizeF size = m_chart->size();
  double height = 0;
  if (m_runLegend->isVisible() && size.width() > 20) {
    height = m_runLegend->layoutFor(size.width() - 12, std::max(20.0, size.height() * 0.3));
    m_runLegend->setPos(6, size.height() - height - 3);
  }
  if (m_captionBelow && m_captionBox->isVisible()) {
    // Over the legend, left-aligned with it: the plot keeps all of its area.
    const QRectF r = m_caption->boundingRect();
    m_captionBox->setRect(0, 0, r.width() + 8, r.height() + 4);
    m_caption->setPos(4, 2);
    height += r.height() + 6;
    m_captionBox->setPos(2, size.height() - height - 3);
  }
  const QMargins margins(4, 4, 4, 4 + int(std::ceil(height)) + (height > 0 ? 2 : 0));
  if (m_chart->margins() != margins) m_chart->setMargins(margins);
}

int ChartView::legendRunAt(const QPoint& viewPos) const {
  if (!m_runLegend->isVisible()) return -1;
  const QPointF local = m_runLegend->mapFromScene(mapToScene(viewPos));
  const int i = m_runLegend->entryAt(local);
  return i < 0 ? -1 : m_runLegend->entries()[i].runId;
}

void ChartView::setPresentationScale(double factor) {
  factor = std::clamp(factor, 0.5, 4.0);
  if (factor == m_presentationScale) return;
  m_presentationScale = factor;
  applyFonts();
  for (QAbstractAxis* axis : m_chart->axes()) styleAxis(axis);
  for (QAbstractAxis* axis : {static_cast<QAbstractAxis*>(m_yLinear), static_cast<QAbstractAxis*>(m_yLog)})
    styleAxis(axis);
  layoutRunLegend();
  placeOverlays(m_chart->plotArea());
  emit themeChanged();
}

void ChartView::applyFonts() {
  const double f = m_presentationScale;
  QFont font = m_chart->titleFont();
  setPointSize(font, 10 * f, true);
  m_chart->setTitleFont(font);
  font = m_chart->legend()->font();
  setPointSize(font, 8 * f);
  m_chart->legend()->setFont(font);
  m_runLegend->setFont(font);
  font = m_placeholder->font();
  setPointSize(font, 11 * f);
  m_placeholder->setFont(font);
  font = m_caption->font();
  setPointSize(font, 8 * f);
  m_caption->setFont(font);
  styleReadout();
}

void ChartView::setPlaceholder(const QString& text) {
  if (m_placeholderText == text) return;
  m_placeholderText = text;
  m_placeholder->setPlainText(text);
  m_placeholder->setVisible(!text.isEmpty());
  placeOverlays(m_chart->plotArea());
}

void ChartView::setCaption(const QString& text, Qt::Alignment corner) {
  if (m_caption->text() == text && m_captionBox->isVisible() == !text.isEmpty() && corner == m_captionCorner)
    return;
  m_captionCorner = corner;
  m_caption->setText(text);
  m_captionBox->setVisible(!text.isEmpty());
  if (m_captionBelow) layoutRunLegend();  // its height is the bottom margin's
  placeOverlays(m_chart->plotArea());
}

void ChartView::setCaptionBelowPlot(bool below) {
  if (below == m_captionBelow) return;
  m_captionBelow = below;
  layoutRunLegend();
  placeOverlays(m_chart->plotArea());
}

QRectF ChartView::captionSceneRect() const {
  return m_captionBox->isVisible() ? m_captionBox->sceneBoundingRect() : QRectF();
}

QString ChartView::caption() const { return m_captionBox->isVisible() ? m_caption->text() : QString(); }

double ChartView::captionHeight() const {
  return m_captionBox->isVisible() ? m_captionBox->rect().height() : 0.0;
}

void ChartView::setYAxis(QValueAxis* axis) {
  setLogYAllowed(false);
  m_chart->removeAxis(m_yLinear);
  m_axisState.remove(m_yLinear);
  m_yLinear->deleteLater();
  m_yLinear = axis;
  m_chart->addAxis(axis, Qt::AlignLeft);
  styleAxis(axis);
}

void ChartView::setIncludeZero(QAbstractAxis* yAxis, bool include) {
  m_axisState[yAxis].includeZero = include;
}

void ChartView::setMinimumSpan(QAbstractAxis* yAxis, double span, double floor, double ceiling) {
  AxisState& state = m_axisState[yAxis];
  state.minSpan = span;
  state.spanFloor = floor;
  state.spanCeiling = ceiling;
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
  QList<QPair<double, QString>> labels;
  for (int k = first; k <= last; ++k)
    if ((k % stride) == 0) labels.append({double(k), powerLabel(k, m_logDomain)});
  if (m_logDomain == YDomain::Log10 && count <= 2) {
    // Under two decades: 2 and 5 of each decade too, or the axis has one or two labels.
    for (int k = int(std::floor(lo)); k <= int(std::ceil(hi)); ++k)
      for (double m : {2.0, 5.0}) {
        const double pos = k + std::log10(m);
        if (pos >= lo && pos <= hi) labels.append({pos, QString::number(m * std::pow(10.0, k), 'g', 3)});
      }
    std::sort(labels.begin(), labels.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  m_yLog->setStartValue(lo);
  for (const auto& [pos, label] : labels) m_yLog->append(label, pos);
  m_labelsBusy = false;
}

}  // namespace amp::ui
