#include "ui/charts/throughput_chart.h"

#include <algorithm>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QVBoxLayout>
#include <QValueAxis>

#include "ui/run_data.h"
#include "ui/config_diff.h"
#include "ui/run_groups.h"
#include "ui/speed_ratio.h"

namespace amp::ui {

ThroughputChart::ThroughputChart(QWidget* parent) : ChartPanel(QStringLiteral("throughput"), parent) {
  m_view->setTitle(tr("Throughput"));
  m_showBox = new QComboBox(this);
  m_showBox->addItem(tr("samples/s"), int(Show::SamplesPerSecond));
  m_showBox->addItem(tr("step time (ms)"), int(Show::StepTime));
  m_showBox->addItem(tr("samples/s and step time"), int(Show::Both));
  m_showBox->setToolTip(tr("Smoothed (exponential moving average, weight %1); the faint line is each step's raw rate")
                            .arg(kSmoothing));
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
    msAxis = m_view->addSecondaryYAxis(tr("step time, ms (dashed)"));
    m_view->setIncludeZero(msAxis, true);
  }
  const QVector<const RunData*> runs = visibleRuns();
  // Layer by layer: every faint raw line beneath every smoothed one.
  m_sets.resize(std::size_t(runs.size()));
  for (int i = 0; i < runs.size(); ++i) {
    RunSeriesSet& set = m_sets[std::size_t(i)];
    set.run = runs[i];
    set.samplesEma.setWeight(kSmoothing);
    set.stepMsEma.setWeight(kSmoothing);
    if (samples && !runs[i]->notLogged(QStringLiteral("samples_per_s"))) {
      set.samplesRaw = addRawLine(runs[i], i, tr("samples/s (raw)"), 0.18f);
    }
  }
  for (int i = 0; i < runs.size(); ++i) {
    RunSeriesSet& set = m_sets[std::size_t(i)];
    const QColor color = runColor(runs[i], i);
    // An imported run whose log had no throughput (or step time): no line at 0, the legend says so.
    if (samples && !runs[i]->notLogged(QStringLiteral("samples_per_s"))) {
      set.samples = new QLineSeries;
      set.samples->setName(runs[i]->name);
      tagSeries(set.samples, runs[i], tr("samples/s (smoothed)"));
      m_view->addSeries(set.samples);
      set.samples->setPen(pen(color, 2.0, runPenStyle(runs[i])));
    }
    if (stepTime && !runs[i]->notLogged(QStringLiteral("step_ms"))) {
      set.stepMs = new QLineSeries;
      set.stepMs->setName(samples ? runs[i]->name + tr(" (step ms)") : runs[i]->name);
      tagSeries(set.stepMs, runs[i], tr("step time, ms (smoothed)"));
      m_view->addSeries(set.stepMs, msAxis);
      // Dashed beside samples/s (smoothed, so the dashes read); solid when alone.
      set.stepMs->setPen(pen(color, samples ? 1.2 : 2.0, samples ? Qt::DashLine : runPenStyle(runs[i])));
      if (samples) m_view->setLegendEntryVisible(set.stepMs, false);
    }
  }
}

const SpeedRatio& ThroughputChart::speedOf(const RunData& run, const RunData& base) const {
  // Sorting every step time at each redraw would cost a long run's legend more than its lines:
  // the figure is taken again only when either run has new steps or the baseline changed.
  CachedSpeed& c = m_speeds[run.id];
  if (c.baseId != base.id || c.runSteps != run.series.stepMs.size() || c.baseSteps != base.series.stepMs.size()) {
    c = {base.id, run.series.stepMs.size(), base.series.stepMs.size(), speedRatioOf(run, base)};
  }
  return c.speed;
}

QHash<int, QString> ThroughputChart::rateSuffixes() const {
  // Each run against the fp32 run of its own group (or of its workload), as the runs table does.
  QVector<RunData*> all;
  for (const RunData* r : runs()) all.append(const_cast<RunData*>(r));  // automaticBaseline only reads
  auto latest = [this](const RunData* r) -> double {
    for (const RunSeriesSet& set : m_sets)
      if (set.run == r && !set.samplesEma.smoothed().isEmpty()) return set.samplesEma.smoothed().back() * m_samplesUnit;
    return 0;
  };
  QHash<int, QString> out;
  for (const RunSeriesSet& set : m_sets) {
    if (!set.samples && !set.stepMs) {
      out[set.run->id] = tr(" · not logged");
      continue;
    }
    const double rate = latest(set.run);
    if (!(rate > 0)) continue;
    QString text = rate >= 1e4 ? tr(" · %1k/s").arg(rate / 1000, 0, 'f', rate >= 1e5 ? 0 : 1)
                               : tr(" · %1/s").arg(rate, 0, 'f', 0);
    // The runs table's speed-up in its words (ui/speed_ratio.h): round by round for runs that
    // trained in turns, "~1.3× fp32 (noisy)" where the step times are too noisy to conclude, and
    // ⚠ against a run of another workload. Not the smoothed rates' ratio: that read 0.45× where
    // the table and the lesson said 0.89×.
    if (const RunData* base = automaticBaseline(*set.run, all); base && base != set.run) {
      const QString ratio = speedRatioText(speedOf(*set.run, *base), tr(" fp32"));
      if (!ratio.isEmpty())
        text += (workloadDifferences(base->config, set.run->config).isEmpty() ? QStringLiteral(" · ")
                                                                               : QStringLiteral(" · ⚠ ")) +
                ratio;
    }
    out[set.run->id] = text;
  }
  return out;
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
    if (set.samplesShown.size() > s.samplesPerS.size()) set.samplesShown.clear();
    for (qsizetype i = set.samplesShown.size(); i < s.samplesPerS.size(); ++i)
      set.samplesShown.push_back(s.samplesPerS[i] / unit);
    const QVector<double>& smoothed = set.samplesEma.update(set.samplesShown);  // the new tail only
    if (set.samplesRaw) setDecimated(set.samplesRaw, spanOf(xColumn(s)), spanOf(set.samplesShown), range);
    if (set.samples) setDecimated(set.samples, spanOf(xColumn(s)), spanOf(smoothed), range);
    if (set.stepMs) setDecimated(set.stepMs, spanOf(xColumn(s)), spanOf(set.stepMsEma.update(s.stepMs)), range);
  }
  const QHash<int, QString> rates = rateSuffixes();
  updateRunLegend(m_view, this->runs(), {}, [&rates](const RunData* r) { return rates.value(r->id); });
  const bool anyLine = std::any_of(m_sets.begin(), m_sets.end(), [](const RunSeriesSet& set) { return set.samples || set.stepMs; });
  m_view->setPlaceholder(runs.isEmpty() ? tr("no runs to show")
                         : anyLine      ? QString()
                                        : tr("not logged (imported from TensorBoard without a throughput tag)"));
  m_view->applyAutoRange(xMin, xMax);
}

}  // namespace amp::ui
