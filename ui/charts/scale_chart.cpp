#include "ui/charts/scale_chart.h"

#include <QCheckBox>
#include <QGraphicsSimpleTextItem>
#include <QHBoxLayout>
#include <QLineSeries>
#include <QScatterSeries>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>

#include "ui/run_data.h"

namespace amp::ui {

ScaleChart::ScaleChart(QWidget* parent) : ChartPanel(QStringLiteral("scale"), parent) {
  m_view->setTitle(tr("Loss scale"));
  m_view->setAxisTitles(tr("step"), tr("loss scale"));
  // The scale only moves by powers of two: log2 by default (the menu can switch it off).
  m_view->setLogYAllowed(true, YDomain::Log2);
  m_view->setLogY(true);

  m_trackerBox = new QCheckBox(tr("Growth tracker line"), this);
  m_trackerBox->setToolTip(
      tr("Clean steps since the last scale change, as a fraction of the "
         "growth interval: the scale doubles when it reaches 1."));
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 0, 6, 0);
  controls->addWidget(m_trackerBox);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 2);
  layout->setSpacing(2);
  layout->addWidget(m_view, 1);
  layout->addLayout(controls);
  connect(m_trackerBox, &QCheckBox::toggled, this, &ScaleChart::setTrackerLineVisible);
  connect(m_view->chart(), &QChart::plotAreaChanged, this, &ScaleChart::placeLabels);
}

void ScaleChart::setTrackerLineVisible(bool visible) {
  if (visible == m_trackerVisible) return;
  m_trackerVisible = visible;
  m_trackerBox->setChecked(visible);
  invalidateSeries();
  refreshNow();
}

bool ScaleChart::usesScaler(const RunData* run) {
  if (run->config.scalerActive()) return true;
  const QVector<double>& s = run->series.scale;
  return !s.isEmpty() && (s.first() != 1.0 || s.last() != 1.0);  // loaded runs without config
}

QString ScaleChart::legendName(const RunData* run) const {
  const qsizetype skipped = run->series.skippedStep.size();
  return skipped ? tr("%1 · %n skipped", nullptr, int(skipped)).arg(run->name) : run->name;
}

QString ScaleChart::trackerText(const RunData* run) const {
  const RunSeries& s = run->series;
  const ScalerKind kind = run->config.scaler.kind;
  if (kind == ScalerKind::Static) return tr("static scale");
  const bool grows =
      kind == ScalerKind::Dynamic || kind == ScalerKind::ApexDynamic || kind == ScalerKind::Hysteresis;
  if (!grows || s.growthTracker.isEmpty()) return {};
  // A log without its config (a TensorBoard import: model "external") has neither the tracker
  // nor the growth interval: "×2 after 2000 more clean steps" was the default's, under a scale
  // that doubled every 50 (issue 42 item 6).
  if (run->config.model.name == "external") return {};
  // Said as what it means for the class: the growth tracker counts clean steps since the last
  // change, and the scale doubles when it reaches the interval ("tracker 30/40" explained nothing).
  const qint64 left = std::max<qint64>(1, run->config.scaler.growthInterval - qint64(s.growthTracker.last()));
  return left == 1 ? tr("×2 after 1 more clean step") : tr("×2 after %1 more clean steps").arg(left);
}

// Right-aligned just above where each line leaves the plot; nudged apart when they collide.
void ScaleChart::placeLabels() {
  const QRectF plot = m_view->chart()->plotArea();
  std::vector<std::pair<double, QGraphicsSimpleTextItem*>> placed;
  for (RunSeriesSet& set : m_sets) {
    if (!set.label) continue;
    const int n = set.scale->count();
    if (n == 0 || set.label->text().isEmpty()) {
      set.label->hide();
      continue;
    }
    const QPointF end = m_view->chart()->mapToPosition(set.scale->at(n - 1), set.scale);
    const QRectF r = set.label->boundingRect();
    double y = std::clamp(end.y() - r.height() - 1, plot.top() + 1, plot.bottom() - r.height() - 1);
    for (const auto& [otherY, other] : placed)
      if (std::abs(otherY - y) < r.height()) y = otherY + (y <= otherY ? -r.height() : r.height());
    // Nudged out of the plot it would overprint the title or the step labels: inside, or not
    // at all when the runs' labels do not fit beside each other (the hover still tells).
    bool fits = y >= plot.top() && y + r.height() <= plot.bottom();
    for (const auto& [otherY, other] : placed) fits = fits && std::abs(otherY - y) >= r.height() - 0.5;
    if (!fits) {
      set.label->hide();
      continue;
    }
    set.label->setPos(plot.right() - r.width() - 4, y);
    set.label->show();
    placed.push_back({y, set.label});
  }
}

void ScaleChart::rebuildSeries() {
  for (RunSeriesSet& set : m_sets) delete set.label;
  m_sets.clear();
  m_view->hideSecondaryYAxis();
  m_trackerAxis = nullptr;
  if (m_trackerVisible) {
    m_trackerAxis = m_view->addSecondaryYAxis(tr("tracker / growth interval"));
    m_trackerAxis->setLabelFormat(QStringLiteral("%.1f"));
    m_view->setIncludeZero(m_trackerAxis, true);
  }
  int index = 0;
  for (const RunData* run : visibleRuns()) {
    const int colorIndex = index++;
    if (!usesScaler(run)) continue;
    RunSeriesSet set;
    set.run = run;
    const QColor color = runColor(run, colorIndex);
    set.scale = new QLineSeries;
    set.scale->setName(legendName(run));
    tagSeries(set.scale, run, tr("loss scale"));
    m_view->addSeries(set.scale);
    set.scale->setPen(pen(color, 2.0, runPenStyle(run)));

    set.skipped = new QScatterSeries;
    set.skipped->setName(run->name + tr(" (skipped)"));
    tagSeries(set.skipped, run, tr("skipped step; scale"));
    m_view->addSeries(set.skipped);
    set.skipped->setMarkerSize(9);
    set.skipped->setColor(color);
    set.skipped->setLightMarker(markerImage(color, QColor(0xb0, 0x10, 0x10), 9, Marker::Triangle));
    m_view->setLegendEntryVisible(set.skipped, false);

    set.label = new QGraphicsSimpleTextItem(m_view->chart());
    QFont font = set.label->font();
    font.setPointSizeF(8 * m_view->presentationScale());  // grows with the presentation scale
    set.label->setFont(font);
    set.label->setBrush(m_view->theme() == ChartView::Theme::Dark ? color.lighter(130) : color.darker(130));
    set.label->setZValue(50);
    if (m_trackerAxis) {
      set.tracker = new QLineSeries;
      set.tracker->setName(run->name + tr(" (tracker)"));
      tagSeries(set.tracker, run, tr("tracker / interval"));
      m_view->addSeries(set.tracker, m_trackerAxis);
      QColor faint = color;
      faint.setAlphaF(0.6f);
      set.tracker->setPen(pen(faint, 1.0, Qt::DashLine));
      m_view->setLegendEntryVisible(set.tracker, false);
    }
    m_sets.push_back(std::move(set));
  }
  m_skippedKey = new QScatterSeries;
  m_skippedKey->setName(tr("skipped step"));
  m_skippedKey->setProperty("ampNoHover", true);
  m_view->addSeries(m_skippedKey);
  m_skippedKey->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
  m_skippedKey->setMarkerSize(9);
  m_skippedKey->setColor(QColor(0x90, 0x90, 0x90));
  m_skippedKey->setBorderColor(QColor(0xb0, 0x10, 0x10));
}

void ScaleChart::updateSeries() {
  QVector<const RunData*> shown;
  for (const RunSeriesSet& set : m_sets) shown.append(set.run);
  const auto [xMin, xMax] = xExtent(shown);
  const DecimationRange range = m_view->decimationRange(xMin, xMax);
  const YDomain domain = m_view->yDomain();
  bool anySkipped = false;
  for (RunSeriesSet& set : m_sets) {
    const RunSeries& s = set.run->series;
    setDecimated(set.scale, spanOf(xColumn(s)), spanOf(s.scale), range, domain);
    setDecimated(set.skipped, xAtSteps(s, s.skippedStep), spanOf(s.skippedScale), range, domain);
    anySkipped = anySkipped || !s.skippedStep.isEmpty();
    const QString name = legendName(set.run);
    if (set.scale->name() != name) set.scale->setName(name);
    const QString tracker = trackerText(set.run);
    if (set.label->text() != tracker) set.label->setText(tracker);
    if (set.tracker) {
      const double interval = std::max(1, set.run->config.scaler.growthInterval);
      if (set.trackerFraction.size() > std::size_t(s.growthTracker.size())) set.trackerFraction.clear();
      for (qsizetype i = qsizetype(set.trackerFraction.size()); i < s.growthTracker.size(); ++i)
        set.trackerFraction.push_back(s.growthTracker[i] / interval);
      setDecimated(set.tracker, spanOf(xColumn(s)), {set.trackerFraction.data(), set.trackerFraction.size()},
                   range);
    }
  }
  if (m_skippedKey) m_view->setLegendEntryVisible(m_skippedKey, anySkipped);
  QVector<const RunData*> legendRuns;  // runs with a scaler, hidden ones too (click to show)
  for (const RunData* r : runs())
    if (r && usesScaler(r)) legendRuns.append(r);
  QList<LegendEntry> keys;
  if (anySkipped)
    keys << LegendEntry{tr("skipped step"), QColor(0x90, 0x90, 0x90), Qt::SolidLine, LegendEntry::Glyph::Triangle};
  // Runs whose scale is the same at every step (two-workers: the 2-rank run moves its scale
  // exactly as the single process does): the covered line shows as a halo beneath the one on
  // top, and the legend says "= 1_rank (identical)", as the loss chart does (issue 42 item 4).
  QList<QLineSeries*> lines;
  std::vector<std::span<const double>> scales;
  for (const RunSeriesSet& set : m_sets) {
    lines << set.scale;
    scales.push_back(spanOf(set.run->series.scale));
  }
  const QHash<int, QString> same = markCoincidingRuns(shown, lines, scales, 1e-6, 2, 2.0, 6.0);
  updateRunLegend(m_view, legendRuns, keys, [this, &same](const RunData* r) {
    const qsizetype skipped = r->series.skippedStep.size();
    return (skipped ? tr(" · %n skipped", nullptr, int(skipped)) : QString()) + same.value(r->id);
  });
  m_view->setPlaceholder(m_sets.empty() && !visibleRuns().isEmpty()
                             ? tr("no loss scaling in these runs\n(fp32 and bf16 need none)")
                         : visibleRuns().isEmpty() ? tr("no runs to show")
                                                   : QString());
  m_view->applyAutoRange(xMin, xMax);
  placeLabels();
}

}  // namespace amp::ui
