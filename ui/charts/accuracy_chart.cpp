#include "ui/charts/accuracy_chart.h"

#include <QLineSeries>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "ui/run_data.h"

namespace amp::ui {

AccuracyChart::AccuracyChart(QWidget* parent) : ChartPanel(QStringLiteral("accuracy"), parent) {
  m_view->setTitle(tr("Test accuracy and loss"));
  m_view->setAxisTitles(tr("step"), tr("test accuracy, % (solid)"));
  // At least 10 points of accuracy on the axis (within 0-100%): a 0.2-point difference looks
  // like one, not like the whole height of the chart.
  m_view->setMinimumSpan(m_view->yAxis(), 10.0, 0.0, 100.0);
  QValueAxis* lossAxis = m_view->addSecondaryYAxis(tr("test loss (dashed)"));
  m_view->setIncludeZero(lossAxis, true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 2);
  layout->addWidget(m_view, 1);
}

void AccuracyChart::rebuildSeries() {
  m_sets.clear();
  const QVector<const RunData*> runs = visibleRuns();
  for (int i = 0; i < runs.size(); ++i) {
    RunSeriesSet set;
    set.run = runs[i];
    const QColor color = runColor(runs[i], i);
    set.accuracy = new QLineSeries;
    set.accuracy->setName(runs[i]->name);
    tagSeries(set.accuracy, runs[i], tr("test accuracy (%)"));
    m_view->addSeries(set.accuracy);
    set.accuracy->setPen(pen(color, 2.0, runPenStyle(runs[i])));
    // Evaluations are sparse: show where they are.
    set.accuracy->setPointsVisible(true);
    set.accuracy->setMarkerSize(7);
    set.accuracy->setLightMarker(markerImage(color, color.darker(140), 7));

    set.loss = new QLineSeries;
    set.loss->setName(runs[i]->name + tr(" (test loss)"));
    tagSeries(set.loss, runs[i], tr("test loss"));
    m_view->addSeries(set.loss, m_view->secondaryYAxis());
    set.loss->setPen(pen(color, 1.2, Qt::DashLine));
    m_view->setLegendEntryVisible(set.loss, false);
    m_sets.push_back(std::move(set));
  }
}

void AccuracyChart::updateSeries() {
  const QVector<const RunData*> runs = visibleRuns();
  double xMin = qInf(), xMax = -qInf();
  for (RunSeriesSet& set : m_sets) {
    const RunSeries& s = set.run->series;
    if (!s.testStep.isEmpty()) {
      const std::span<const double> x = xAtSteps(s, s.testStep);
      xMin = std::min(xMin, x.front());
      xMax = std::max(xMax, x.back());
    }
  }
  // The x range spans the training steps too, so the first evaluation is not at the far left.
  const auto [stepMin, stepMax] = xExtent(runs);
  if (xMin <= xMax) {
    xMin = std::min(xMin, stepMin);
    xMax = std::max(xMax, stepMax);
  }
  const DecimationRange range = m_view->decimationRange(xMin, xMax);
  for (RunSeriesSet& set : m_sets) {
    const RunSeries& s = set.run->series;
    if (set.percent.size() > std::size_t(s.testAcc.size())) set.percent.clear();
    for (qsizetype i = qsizetype(set.percent.size()); i < s.testAcc.size(); ++i)
      set.percent.push_back(s.testAcc[i] * 100.0);  // NaN (no accuracy) stays NaN: skipped
    const std::span<const double> x = xAtSteps(s, s.testStep);
    setDecimated(set.accuracy, x, {set.percent.data(), set.percent.size()}, range);
    setDecimated(set.loss, x, spanOf(s.testLoss), range);
  }
  const bool any = xMin <= xMax;
  // Runs that reach the same accuracy at every evaluation (to 0.1%): the covered one's line
  // shows as a halo beneath, and the legend says which runs coincide.
  QList<QLineSeries*> lines;
  std::vector<std::span<const double>> accuracies;
  for (const RunSeriesSet& set : m_sets) {
    lines << set.accuracy;
    accuracies.push_back({set.percent.data(), set.percent.size()});
  }
  const QHash<int, QString> same = markCoincidingRuns(runs, lines, accuracies, 0.001, 2, 2.0, 6.0);
  updateRunLegend(m_view, this->runs(), {}, [&same](const RunData* r) { return same.value(r->id); });
  // Runs whose data holds no test set will never be evaluated: say so, not "yet" (issue 25).
  // A run opened from a file has no hasTestSet: its data's name says it (synthetic data has
  // none), and a run that has ended without an evaluation never will have one: "yet" promised
  // one to a CLI run exported long after it finished (issue 42 item 5).
  const bool noneHasATestSet = std::all_of(runs.begin(), runs.end(), [](const RunData* r) {
    return r->hasTestSet.has_value() ? !*r->hasTestSet : r->config.data.name == "synthetic";
  });
  const bool allEnded = std::none_of(runs.begin(), runs.end(), [](const RunData* r) { return isActive(r->status); });
  m_view->setPlaceholder(runs.isEmpty()       ? tr("no runs to show")
                         : any                ? QString()
                         : noneHasATestSet    ? tr("no test set in these runs' data\n(synthetic data "
                                                   "has none; elsewhere data.test_fraction is 0)")
                         : allEnded           ? tr("no test set was evaluated in these runs\n(train.eval_every "
                                                   "is 0, or larger than the run)")
                                              : tr("no test set evaluated yet"));
  // A little room past the first and last evaluation: their dots sat on the frame, half cut.
  const double lo = any ? xMin : stepMin, hi = any ? xMax : stepMax;
  // Half a dot and a little more, in data units for the plot's present width.
  const double plotWidth = std::max(50.0, m_view->chart()->plotArea().width());
  const double share = std::max(0.015, 6.0 * m_view->presentationScale() / plotWidth);
  const double pad = std::isfinite(hi - lo) ? std::max(0.5, (hi - lo) * share) : 0.0;
  m_view->applyAutoRange(lo - pad, hi + pad);
}

}  // namespace amp::ui
