#include "ui/charts/throughput_chart.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QVBoxLayout>
#include <QValueAxis>

#include "ui/run_data.h"

namespace amp::ui {

ThroughputChart::ThroughputChart(QWidget* parent) : ChartPanel(QStringLiteral("throughput"), parent) {
  m_view->setTitle(tr("Throughput"));
  m_showBox = new QComboBox(this);
  m_showBox->addItem(tr("samples/s and step time"), int(Show::Both));
  m_showBox->addItem(tr("samples/s"), int(Show::SamplesPerSecond));
  m_showBox->addItem(tr("step time (ms)"), int(Show::StepTime));
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 0, 6, 0);
  controls->addWidget(new QLabel(tr("Show"), this));
  controls->addWidget(m_showBox);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 2);
  layout->setSpacing(2);
  layout->addWidget(m_view, 1);
  layout->addLayout(controls);
  connect(m_showBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setShown(Show(m_showBox->itemData(i).toInt())); });
}

void ThroughputChart::setShown(Show show) {
  if (show == m_show) return;
  m_show = show;
  m_showBox->setCurrentIndex(m_showBox->findData(int(show)));
  invalidateSeries();
  refreshNow();
}

void ThroughputChart::rebuildSeries() {
  m_sets.clear();
  m_view->hideSecondaryYAxis();
  const bool samples = m_show != Show::StepTime;
  const bool stepTime = m_show != Show::SamplesPerSecond;
  // samples/s on the left; step time on the left when alone, else on the right.
  m_view->setAxisTitles(
      xAxisTitle(), samples ? (stepTime ? tr("samples/s (solid)") : tr("samples/s")) : tr("step time (ms)"));
  m_view->setIncludeZero(m_view->yAxis(), true);
  QValueAxis* msAxis = nullptr;
  if (samples && stepTime) {
    msAxis = m_view->addSecondaryYAxis(tr("step time, ms (faint)"));
    m_view->setIncludeZero(msAxis, true);
  }
  const QVector<const RunData*> runs = visibleRuns();
  for (int i = 0; i < runs.size(); ++i) {
    RunSeriesSet set;
    set.run = runs[i];
    const QColor color = runColor(runs[i], i);
    if (samples) {
      set.samples = new QLineSeries;
      set.samples->setName(runs[i]->name);
      tagSeries(set.samples, runs[i], tr("samples/s"));
      m_view->addSeries(set.samples);
      set.samples->setPen(pen(color, 1.0, runPenStyle(runs[i])));  // noisy lines: 1 px strokes on Qt's fast path
    }
    if (stepTime) {
      set.stepMs = new QLineSeries;
      set.stepMs->setName(samples ? runs[i]->name + tr(" (step ms)") : runs[i]->name);
      tagSeries(set.stepMs, runs[i], tr("step time (ms)"));
      m_view->addSeries(set.stepMs, msAxis);
      // Fainter rather than dashed: dashes are lost on a noisy line and slow to stroke.
      QColor faint = color;
      if (samples) faint.setAlphaF(0.45f);
      set.stepMs->setPen(pen(faint, 1.0));
      if (samples) m_view->setLegendEntryVisible(set.stepMs, false);
    }
    m_sets.push_back(set);
  }
}

void ThroughputChart::updateSeries() {
  const QVector<const RunData*> runs = visibleRuns();
  const auto [xMin, xMax] = xExtent(runs);
  const DecimationRange range = m_view->decimationRange(xMin, xMax);
  // Thousands when the rates reach 10,000: a five-digit tick label is what a narrow axis elides.
  double top = 0;
  for (RunSeriesSet& set : m_sets) {
    const QVector<double>& v = set.run->series.samplesPerS;
    if (set.peakDone > v.size()) set.peakDone = 0, set.peak = 0;
    for (; set.peakDone < v.size(); ++set.peakDone) set.peak = std::max(set.peak, v[set.peakDone]);
    top = std::max(top, set.peak);
  }
  const double unit = top >= 1e4 ? 1000.0 : 1.0;
  if (unit != m_samplesUnit) {
    m_samplesUnit = unit;
    for (RunSeriesSet& set : m_sets) set.samplesShown.clear();
    forgetDecimation();
  }
  if (m_show != Show::StepTime) {
    const QString title = unit > 1 ? tr("k samples/s") : tr("samples/s");
    m_view->yAxis()->setTitleText(m_show == Show::Both ? title + tr(" (solid)") : title);
  }
  for (RunSeriesSet& set : m_sets) {
    const RunSeries& s = set.run->series;
    if (set.samplesShown.size() > std::size_t(s.samplesPerS.size())) set.samplesShown.clear();
    for (qsizetype i = qsizetype(set.samplesShown.size()); i < s.samplesPerS.size(); ++i)
      set.samplesShown.push_back(s.samplesPerS[i] / unit);
    if (set.samples)
      setDecimated(set.samples, spanOf(xColumn(s)), {set.samplesShown.data(), set.samplesShown.size()}, range);
    if (set.stepMs) setDecimated(set.stepMs, spanOf(xColumn(s)), spanOf(s.stepMs), range);
  }
  updateRunLegend(m_view, this->runs());
  m_view->setPlaceholder(runs.isEmpty() ? tr("no runs to show") : QString());
  m_view->applyAutoRange(xMin, xMax);
}

}  // namespace amp::ui
