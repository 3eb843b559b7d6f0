#include "ui/charts/histogram_view.h"

#include <QFontMetricsF>
#include <QAreaSeries>
#include <QCategoryAxis>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QTabBar>
#include <QLineSeries>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <QLegend>
#include <QLegendMarker>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "ui/charts/heat_map_item.h"
#include "ui/charts/histogram_bins.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {

QAreaSeries* makeArea(const QString& name) {
  auto* upper = new QLineSeries;
  auto* lower = new QLineSeries;
  auto* area = new QAreaSeries(upper, lower);
  upper->setParent(area);  // QAreaSeries does not own its edges
  lower->setParent(area);
  area->setName(name);
  return area;
}

}  // namespace

void HistogramView::setBand(QAreaSeries* area, double left, double right, double bottom, double top) {
  area->upperSeries()->replace({QPointF(left, top), QPointF(right, top)});
  area->lowerSeries()->replace({QPointF(left, bottom), QPointF(right, bottom)});
}

void HistogramView::legibleSwatch(QAreaSeries* area, QColor color) {
  // The bands are faint on purpose (the bars go over them), but a legend swatch that faint is
  // a near-black square on the dark theme and nearly white on the light one (issue 25): the
  // legend shows the band's hue at two-thirds opacity instead.
  color.setAlpha(std::max(color.alpha(), 170));
  for (QLegendMarker* marker : m_view->chart()->legend()->markers(area)) marker->setBrush(color);
}

void HistogramView::setBackgroundBand(QAreaSeries* area, double left, double right, double bottom,
                                      double top) {
  const BackgroundBand band{area, left, right, bottom, top};
  auto it = std::find_if(m_backgroundBands.begin(), m_backgroundBands.end(),
                         [&](const BackgroundBand& b) { return b.area == area; });
  if (it == m_backgroundBands.end())
    m_backgroundBands.push_back(band);
  else
    *it = band;
  clipBackgroundBands();
}

void HistogramView::clipBackgroundBands() {
  const QValueAxis* x = m_view->xAxis();
  const QValueAxis* y = m_view->yAxis();
  for (const BackgroundBand& b : m_backgroundBands) {
    if (!b.area) continue;
    const double left = std::max(b.left, x->min()), right = std::min(b.right, x->max());
    const double bottom = std::max(b.bottom, y->min()), top = std::min(b.top, y->max());
    if (left < right && bottom < top)
      setBand(b.area, left, right, bottom, top);
    else
      setBand(b.area, 0, 0, 0, 0);  // outside the axes: nothing to draw
  }
}

HistogramView::HistogramView(QWidget* parent)
    : ChartPanel(QStringLiteral("histogram"), parent), m_heatView(new ChartView(this)) {
  m_view->setTitle(tr("Exponent histogram"));
  m_view->setCaptionBelowPlot(true);
  m_view->setXAxis(makeExponentAxis(m_view));
  m_view->setAxisTitles(tr("|value| by binary exponent"), tr("fraction of values"));
  m_view->setIncludeZero(m_view->yAxis(), true);
  m_view->setHoverTextProvider([this](const QPointF& v) { return barsHoverText(v); });

  m_heatView->setTitle(tr("Over time"));
  m_heatView->setYAxis(makeExponentAxis(m_heatView, true));
  m_heatView->setAxisTitles(tr("step"), tr("exponent"));
  m_heatView->setHoverTextProvider([this](const QPointF& v) { return heatHoverText(v); });
  connect(m_view->xAxis(), &QValueAxis::rangeChanged, this, [this] { clipBackgroundBands(); });
  connect(m_view->yAxis(), &QValueAxis::rangeChanged, this, [this] { clipBackgroundBands(); });
  m_heat = new HeatMapItem(m_heatView->chart(), nullptr);
  connectView(m_heatView);
  const auto moved = [this] { m_heat->geometryChanged(); };
  // As many exponent labels as the heat map's height holds whole (about two label heights each).
  connect(m_heatView->chart(), &QChart::plotAreaChanged, this, [this](const QRectF& area) {
    auto* axis = qobject_cast<QCategoryAxis*>(m_heatView->yAxis());
    if (!axis) return;
    const double label = QFontMetricsF(axis->labelsFont()).height();
    const int fits = label > 0 ? int(area.height() / (1.8 * label)) + 1 : 6;
    if (fits != m_heatAxisLabels) {
      m_heatAxisLabels = fits;
      fitCompactExponentAxis(axis, fits);
    }
  });
  connect(m_heatView->chart(), &QChart::plotAreaChanged, this, moved);
  connect(m_heatView->xAxis(), &QValueAxis::rangeChanged, this, moved);
  connect(m_heatView->yAxis(), &QValueAxis::rangeChanged, this, moved);

  m_runBox = new QComboBox(this);
  // As wide as the longest run name: sized on first show (no runs yet) it read "underflo▾".
  m_runBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_tensorBox = new QComboBox(this);
  m_tensorBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_tensorBox->setMinimumContentsLength(12);
  m_domainBox = new QComboBox(this);
  m_domainBox->addItem(tr("scaled + unscaled"), int(Domain::Both));
  m_domainBox->addItem(tr("scaled (as stored)"), int(Domain::Scaled));
  m_domainBox->addItem(tr("unscaled (÷ scale)"), int(Domain::Unscaled));
  m_domainBox->setToolTip(
      tr("Gradients carry the loss scale while stored; unscaled is what "
         "they are worth after the optimizer divides it out."));
  m_compareBox = new QComboBox(this);
  m_compareBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_compareBox->setToolTip(tr("Another run's histogram of the same tensor, as an outline over the bars "
                              "(an fp16 run beside a bf16 one)"));
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 2, 6, 0);
  controls->addWidget(m_runBox);
  controls->addWidget(m_tensorBox, 1);
  controls->addWidget(m_domainBox);
  controls->addWidget(m_compareBox);
  m_chartTabs = new QTabBar(this);
  m_chartTabs->setDocumentMode(true);
  m_chartTabs->setExpanding(false);
  m_chartTabs->setDrawBase(false);
  m_chartTabs->addTab(tr("Exponents now"));
  m_chartTabs->addTab(tr("Over time"));
  m_chartTabs->setToolTip(tr("The panel is short: one chart at a time (a taller window shows both)."));
  m_chartTabs->hide();
  connect(m_chartTabs, &QTabBar::currentChanged, this, [this] { updateCompactLayout(); });
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addLayout(controls);
  layout->addWidget(m_chartTabs, 0, Qt::AlignLeft);
  layout->addWidget(m_view, 1);
  layout->addWidget(m_heatView, 1);

  connect(m_runBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSelectedRun(m_runBox->itemData(i).toInt()); });
  connect(m_tensorBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSelectedTensor(m_tensorBox->itemData(i).toString()); });
  connect(m_domainBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setDomain(Domain(m_domainBox->itemData(i).toInt())); });
  connect(m_compareBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setComparedRun(m_compareBox->itemData(i).toInt()); });
}

void HistogramView::resizeEvent(QResizeEvent* event) {
  ChartPanel::resizeEvent(event);
  updateCompactLayout();
}

void HistogramView::setPresentationScale(double factor) {
  ChartPanel::setPresentationScale(factor);
  updateCompactLayout();
}

void HistogramView::updateCompactLayout() {
  // Two stacked charts need ~240 px each for their axes, labels and legends; below that the
  // labels elide to "..." and the plots shrink to slivers, so show one at a time instead.
  // In pixels of the presentation scale: at 1.5 every label and legend is half as tall again.
  m_compact = height() < kCompactBelowPx * m_view->presentationScale();
  m_chartTabs->setVisible(m_compact);
  m_view->setVisible(!m_compact || m_chartTabs->currentIndex() == 0);
  m_heatView->setVisible(!m_compact || m_chartTabs->currentIndex() == 1);
}

QString HistogramView::tensorKey(const HistogramRecord& r) {
  return QString::fromLatin1(histogramKindName(r.kind)) + QLatin1Char('|') + QString::fromStdString(r.tensor);
}

void HistogramView::setSelectedRun(int runId) {
  if (runId == m_selectedId) return;
  m_selectedId = runId;
  const QSignalBlocker block(m_runBox);
  m_runBox->setCurrentIndex(m_runBox->findData(runId));
  m_tensorListFrames = 0;  // another run: other tensors
  refreshNow();
}

void HistogramView::setSelectedTensor(const QString& key) {
  if (key == m_tensorKey) return;
  m_tensorKey = key;
  const QSignalBlocker block(m_tensorBox);
  m_tensorBox->setCurrentIndex(m_tensorBox->findData(key));
  refreshNow();
}

void HistogramView::setDomain(Domain domain) {
  if (domain == m_domain) return;
  m_domain = domain;
  const QSignalBlocker block(m_domainBox);
  m_domainBox->setCurrentIndex(m_domainBox->findData(int(domain)));
  refreshNow();
}

const RunData* HistogramView::selected() const { return visibleRunOrNewestWithHistograms(m_selectedId); }

void HistogramView::setComparedRun(int runId) {
  if (runId == m_compareId) return;
  m_compareId = runId;
  const QSignalBlocker block(m_compareBox);
  m_compareBox->setCurrentIndex(std::max(0, m_compareBox->findData(runId)));
  refreshNow();
}

QList<QPointF> HistogramView::comparedOutline() const {
  return m_compare && m_compare->isVisible() ? m_compare->points() : QList<QPointF>();
}

const HistogramRecord* HistogramView::findRecord(const HistogramFrame& frame) const {
  for (const HistogramRecord& r : frame.records)
    if (tensorKey(r) == m_tensorKey) return &r;
  return nullptr;
}

void HistogramView::updateTensorList(const RunData* run) {
  // An fp8 run's quantised tensors (from its steps' fp8 records) are recorded on the same
  // histogram steps as its frames.
  if (run->histograms.size() == m_tensorListFrames) return;
  m_tensorListFrames = run->histograms.size();
  const QSignalBlocker block(m_tensorBox);
  m_tensorBox->clear();
  for (const HistogramRecord& r : run->histograms.back().records)
    m_tensorBox->addItem(QStringLiteral("%1 · %2 (%3)")
                             .arg(QString::fromStdString(r.tensor), histogramKindLabel(r.kind),
                                  QString::fromLatin1(dtypeName(r.dtype).data())),
                         tensorKey(r));
  if (run->config.mode == PrecisionMode::Fp8) {
    QHash<QString, QString> formats;
    const std::vector<HistogramFrame> fp8 = fp8Frames(*run, &formats);
    if (!fp8.empty())
      for (const HistogramRecord& r : fp8.back().records)
        m_tensorBox->addItem(r.tensor.rfind("fp8blocks:", 0) == 0
                                 ? tr("%1 · fp8 block scales").arg(QString::fromStdString(r.tensor.substr(10)))
                                 : tr("%1 · fp8 %2, after its scale")
                                       .arg(QString::fromStdString(r.tensor.substr(4)), formats.value(tensorKey(r)).toUpper()),
                             tensorKey(r));
  }
  int index = m_tensorBox->findData(m_tensorKey);
  if (index < 0) index = 0;
  m_tensorBox->setCurrentIndex(index);
  m_tensorKey = m_tensorBox->itemData(index).toString();
}

void HistogramView::rebuildSeries() {
  {
    const QSignalBlocker block(m_runBox);
    m_runBox->clear();
    for (const RunData* r : visibleRuns()) m_runBox->addItem(r->name, r->id);
    const RunData* sel = selected();
    m_runBox->setCurrentIndex(sel ? m_runBox->findData(sel->id) : -1);
  }
  {
    const QSignalBlocker block(m_compareBox);
    m_compareBox->clear();
    m_compareBox->addItem(tr("compare: none"), -1);
    for (const RunData* r : visibleRuns()) m_compareBox->addItem(tr("vs %1").arg(r->name), r->id);
    m_compareBox->setCurrentIndex(std::max(0, m_compareBox->findData(m_compareId)));
  }
  m_tensorListFrames = 0;
  m_heatRun = nullptr;
  m_shown.reset();
  m_backgroundBands.clear();  // their series went with the view's (ChartPanel::setRuns)

  // Bands first, so the bars are drawn over them; placed (full height or strip) per run.
  auto band = [this](const QString& name, QColor color) {
    QAreaSeries* area = makeArea(name);
    area->setProperty("ampNoHover", true);
    area->setProperty("ampNoAutoRange", true);
    m_view->addSeries(area);
    area->setBrush(color);
    area->setPen(Qt::NoPen);
    area->setProperty("ampBandColor", color);  // the full band's; a strip is drawn stronger
    legibleSwatch(area, color);
    return area;
  };
  // Short legend names (a narrow chart truncates long ones); the axis labels give the bounds.
  m_fp16Normal = band(tr("fp16 normal"), QColor(44, 160, 44, 34));
  m_fp16Subnormal = band(tr("fp16 subnormal"), QColor(255, 127, 14, 46));
  m_bf16Normal = band(tr("bf16 normal ≥2⁻¹²⁶ ←"), QColor(31, 119, 180, 40));
  addFp8Bands();  // E4M3, E5M2, E2M1: shown for an fp8 run's quantised tensors
  m_fp8Run = nullptr;
  m_fp8FormatShown.clear();

  m_unscaled = makeArea(tr("unscaled"));
  m_view->addSeries(m_unscaled);
  m_scaled = makeArea(tr("scaled"));
  m_view->addSeries(m_scaled);
  m_compare = new QLineSeries;
  m_view->addSeries(m_compare);
  m_compare->setVisible(false);
  m_view->setLegendEntryVisible(m_compare, false);  // no run compared: no nameless swatch

  m_rangeLines.clear();
  const struct {
    QString name;
    int exponent;
    QColor color;
    Qt::PenStyle style;
  } lines[] = {{tr("fp16 subnormal ≥ 2⁻²⁴"), kFp16SubnormalExp, QColor(0xff, 0x7f, 0x0e), Qt::DashLine},
               {tr("fp16 normal ≥ 2⁻¹⁴"), kFp16NormalExp, QColor(0xd6, 0x27, 0x28), Qt::SolidLine},
               {tr("fp16 overflow > 65504"), kFp16OverflowExp, QColor(0xd6, 0x27, 0x28), Qt::DashDotLine}};
  for (const auto& l : lines) {
    auto* line = new QLineSeries;
    line->setName(l.name);
    line->setProperty("ampNoHover", true);
    line->setProperty("ampNoAutoRange", true);
    line->setProperty("ampExponent", l.exponent);
    m_heatView->addSeries(line);
    line->setPen(pen(l.color, 1.4, l.style));
    m_rangeLines.push_back(line);
  }
  m_heat->setAnchor(m_rangeLines.front());
}

}  // namespace amp::ui
