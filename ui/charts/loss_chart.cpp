#include "ui/charts/loss_chart.h"

#include <algorithm>
#include <cmath>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include "ui/charts/decimation.h"
#include "ui/run_data.h"

namespace amp::ui {

LossChart::LossChart(QWidget* parent) : ChartPanel(QStringLiteral("loss"), parent) {
  m_view->setTitle(tr("Training loss"));
  m_view->setAxisTitles(tr("step"), tr("loss"));
  m_view->setLogYAllowed(true, YDomain::Log10);

  m_slider = new QSlider(Qt::Horizontal, this);
  m_slider->setRange(0, 999);
  m_slider->setValue(int(m_smoothingWeight * 1000));
  m_slider->setToolTip(
      tr("Exponential moving average weight, debiased as in TensorBoard.\n"
         "The faint line is the raw loss."));
  m_sliderValue = new QLabel(this);
  m_sliderValue->setMinimumWidth(m_sliderValue->fontMetrics().horizontalAdvance(QStringLiteral("0.000")));
  m_logBox = new QCheckBox(tr("Log y"), this);

  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 0, 6, 0);
  controls->addWidget(new QLabel(tr("Smoothing"), this));
  controls->addWidget(m_slider, 1);
  controls->addWidget(m_sliderValue);
  controls->addSpacing(8);
  controls->addWidget(m_logBox);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 2);
  layout->setSpacing(2);
  layout->addWidget(m_view, 1);
  layout->addLayout(controls);

  connect(m_slider, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 1000.0); });
  connect(m_logBox, &QCheckBox::toggled, m_view, &ChartView::setLogY);
  connect(m_view, &ChartView::logYToggled, this, [this](bool on) {
    const QSignalBlocker block(m_logBox);
    m_logBox->setChecked(on);
  });
  m_sliderValue->setText(QString::number(m_smoothingWeight, 'f', 3));
}

void LossChart::setSmoothing(double weight) {
  weight = std::clamp(weight, 0.0, 0.999);
  if (weight == m_smoothingWeight) return;
  m_smoothingWeight = weight;
  {
    const QSignalBlocker block(m_slider);
    m_slider->setValue(int(std::lround(weight * 1000)));
  }
  m_sliderValue->setText(QString::number(weight, 'f', 3));
  for (RunSeriesSet& set : m_sets) set.ema.setWeight(weight);
  forgetDecimation();  // the smoothed values change in place
  emit smoothingChanged(weight);
  refreshNow();  // the user is looking at it
}

void LossChart::rebuildSeries() {
  m_sets.clear();
  const QVector<const RunData*> runs = visibleRuns();
  m_sets.resize(runs.size());
  // Layer by layer, not run by run: every raw line under every smoothed line, dots on top, so
  // one run's noise never hides another run's trend.
  for (int i = 0; i < runs.size(); ++i) {
    RunSeriesSet& set = m_sets[i];
    set.run = runs[i];
    set.ema.setWeight(m_smoothingWeight);
    set.raw = addRawLine(runs[i], i, tr("loss (raw)"), 0.25f, runPenStyle(runs[i]));
  }
  for (int i = 0; i < runs.size(); ++i) {
    RunSeriesSet& set = m_sets[i];
    set.smoothed = new QLineSeries;
    set.smoothed->setName(runs[i]->name);
    tagSeries(set.smoothed, runs[i], tr("loss (smoothed)"));
    m_view->addSeries(set.smoothed);
    set.smoothed->setPen(pen(runColor(runs[i], i), 2.0, runPenStyle(runs[i])));
  }
  for (int i = 0; i < runs.size(); ++i) {
    RunSeriesSet& set = m_sets[i];
    const QColor dot = runColor(runs[i], i).darker(115);
    set.test = new QScatterSeries;
    set.test->setName(runs[i]->name + tr(" (test)"));
    tagSeries(set.test, runs[i], tr("test loss"));
    m_view->addSeries(set.test);
    set.test->setMarkerSize(8);
    set.test->setColor(dot);
    set.test->setLightMarker(markerImage(dot, m_view->backgroundColor(), 8));
    m_view->setLegendEntryVisible(set.test, false);
  }
  // One neutral legend entry explains the dots for every run.
  m_testKey = new QScatterSeries;
  m_testKey->setName(tr("test loss"));
  m_testKey->setProperty("ampNoHover", true);
  m_view->addSeries(m_testKey);
  m_testKey->setMarkerSize(8);
  m_testKey->setColor(QColor(0x80, 0x80, 0x80));
}

void LossChart::updateSeries() {
  const QVector<const RunData*> runs = visibleRuns();
  const auto [xMin, xMax] = xExtent(runs);
  const DecimationRange range = m_view->decimationRange(xMin, xMax);
  const YDomain domain = m_view->yDomain();
  bool anyTest = false;
  for (RunSeriesSet& set : m_sets) {
    const RunSeries& s = set.run->series;
    setDecimated(set.raw, spanOf(xColumn(s)), spanOf(s.loss), range, domain);
    const QVector<double>& smooth = set.ema.update(s.loss);
    setDecimated(set.smoothed, spanOf(xColumn(s)), spanOf(smooth), range, domain);
    setDecimated(set.test, xAtSteps(s, s.testStep), spanOf(s.testLoss), range, domain);
    // Evaluations with an accuracy alone (a TensorBoard log) draw no dot: no legend entry either.
    anyTest = anyTest || std::any_of(s.testLoss.begin(), s.testLoss.end(), [](double v) { return std::isfinite(v); });
  }
  m_view->setCaption(nonFiniteCaption(), Qt::AlignTop | Qt::AlignRight);
  if (m_testKey) m_view->setLegendEntryVisible(m_testKey, anyTest);
  QList<LegendEntry> keys;
  // The dots are in their runs' colours: with one run the key is that colour (a grey dot read as
  // a different series beside orange dots, issue 42 item 7); with several, a neutral dot that
  // says they are each run's.
  if (anyTest) {
    QColor dot(0x80, 0x80, 0x80);
    QString label = tr("test loss");
    if (runs.size() == 1) dot = runColor(runs.first(), 0).darker(115);
    else if (runs.size() > 1) label = tr("test loss (dots, each run's colour)");
    keys << LegendEntry{label, dot, Qt::SolidLine, LegendEntry::Glyph::Dot};
  }
  // Within 0.5% at every step (of at least 10) the lines are a pixel or two apart: the one drawn
  // last covered the other (fp32 and fp16 with loss scaling in the underflow lesson).
  QList<QLineSeries*> lines;
  std::vector<std::span<const double>> losses;
  for (const RunSeriesSet& set : m_sets) {
    lines << set.smoothed;
    losses.push_back(spanOf(set.run->series.loss));
  }
  const QHash<int, QString> same = markCoincidingRuns(runs, lines, losses, 0.005, 10, 2.0, 6.0);
  updateRunLegend(m_view, this->runs(), keys, [&same](const RunData* r) { return same.value(r->id); });
  m_view->setPlaceholder(runs.isEmpty() ? tr("no runs to show") : QString());
  m_view->applyAutoRange(xMin, xMax);
}

QString LossChart::nonFiniteCaption() {
  QStringList lines;
  for (RunSeriesSet& set : m_sets) {
    const RunSeries& s = set.run->series;
    for (; set.scanned < s.loss.size(); ++set.scanned)
      if (!std::isfinite(s.loss[set.scanned]) && set.nonFinite++ == 0) set.firstNonFiniteX = s.step[set.scanned];
    if (set.nonFinite > 0)
      lines << tr("%1: loss not finite at %n step(s) from step %2 (not drawn)", nullptr, int(set.nonFinite))
                   .arg(set.run->name)
                   .arg(qint64(set.firstNonFiniteX));
  }
  return lines.join(QLatin1Char('\n'));
}

}  // namespace amp::ui
