#include "ui/charts/lost_updates_chart.h"

#include <QLineSeries>
#include <QVBoxLayout>
#include <numeric>

#include "ui/run_data.h"

namespace amp::ui {

LostUpdatesChart::LostUpdatesChart(QWidget* parent) : ChartPanel(QStringLiteral("updates"), parent) {
  m_view->setTitle(tr("Weight updates lost to rounding"));
  m_view->setAxisTitles(tr("step"), tr("updates lost, %"));
  m_view->setLogYAllowed(true, YDomain::Log10);
  m_view->setLogY(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 2);
  layout->addWidget(m_view, 1);
}

void LostUpdatesChart::rebuildSeries() {
  m_sets.clear();
  const QVector<const RunData*> runs = visibleRuns();
  m_sets.resize(std::size_t(runs.size()));
  for (int i = 0; i < runs.size(); ++i) {  // every faint raw line beneath every smoothed one
    RunSeriesSet& set = m_sets[std::size_t(i)];
    set.run = runs[i];
    set.ema.setWeight(kSmoothing);
    set.raw = addRawLine(runs[i], i, tr("updates lost, % (raw)"), 0.22f);
  }
  for (int i = 0; i < runs.size(); ++i) {
    RunSeriesSet& set = m_sets[std::size_t(i)];
    set.smoothed = new QLineSeries;
    set.smoothed->setName(runs[i]->name);
    tagSeries(set.smoothed, runs[i], tr("updates lost, %"));
    m_view->addSeries(set.smoothed);
    set.smoothed->setPen(pen(runColor(runs[i], i), 2.0, runPenStyle(runs[i])));
  }
}

void LostUpdatesChart::updateSeries() {
  const QVector<const RunData*> runs = visibleRuns();
  const auto [xMin, xMax] = xExtent(runs);
  const DecimationRange range = m_view->decimationRange(xMin, xMax);
  const YDomain domain = m_view->yDomain();
  for (RunSeriesSet& set : m_sets) {
    const RunSeries& s = set.run->series;
    if (set.run->config.isExternal()) continue;  // recorded elsewhere: lost updates not measured
    if (set.percent.size() > s.lostUpdateFrac.size()) set.percent.clear();
    for (qsizetype i = set.percent.size(); i < s.lostUpdateFrac.size(); ++i)
      set.percent.push_back(s.lostUpdateFrac[i] * 100.0);
    const QVector<double>& smoothed = set.ema.update(set.percent);
    // A step that lost nothing has no log: decimateMinMax drops values <= 0 in a log domain.
    setDecimated(set.raw, spanOf(xColumn(s)), spanOf(set.percent), range, domain);
    setDecimated(set.smoothed, spanOf(xColumn(s)), spanOf(smoothed), range, domain);
  }
  // The legend: each run's mean over the run, the runs table's "Lost upd." figure.
  updateRunLegend(m_view, this->runs(), {}, [](const RunData* r) {
    const QVector<double>& f = r->series.lostUpdateFrac;
    if (r->config.isExternal()) return tr(" · not measured (recorded outside AMP Studio)");
    if (f.isEmpty()) return QString();
    const double mean = std::accumulate(f.begin(), f.end(), 0.0) / double(f.size());
    return tr(" · mean %1%").arg(mean * 100.0, 0, 'g', 3);
  });
  m_view->setPlaceholder(runs.isEmpty() ? tr("no runs to show") : QString());
  m_view->applyAutoRange(xMin, xMax);
}

}  // namespace amp::ui
