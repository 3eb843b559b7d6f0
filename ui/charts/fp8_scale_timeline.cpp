#include "ui/charts/fp8_scale_timeline.h"

#include <QAreaSeries>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <cmath>

#include "ui/charts/fp8_series.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {

constexpr int kMaxRuns = 4;  // overlaid: more would hide each other's bands

QString powerLabel(int e) { return QStringLiteral("2%1").arg(superscript(e)); }

}  // namespace

Fp8ScaleTimeline::Fp8ScaleTimeline(QWidget* parent) : ChartPanel(QStringLiteral("fp8-scale"), parent) {
  m_view->setTitle(tr("fp8 scale timeline"));
  m_view->setAxisTitles(tr("step"), tr("magnitude"));
  m_tensorBox = new QComboBox(this);  // first: the log switch below refreshes the panel
  m_tensorBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_tensorBox->setToolTip(tr("The quantised tensor: a Linear layer's input x, weight w or output gradient dy"));
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 0, 6, 0);
  controls->addWidget(new QLabel(tr("Tensor"), this));
  controls->addWidget(m_tensorBox);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 2);
  layout->setSpacing(2);
  layout->addWidget(m_view, 1);
  layout->addLayout(controls);
  connect(m_tensorBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSelectedTensor(m_tensorBox->itemText(i)); });
  // Amax and the scale's reach span many binades: log2, labelled 2ⁿ.
  m_view->setLogYAllowed(true, YDomain::Log2);
  m_view->setLogY(true);
}

QStringList Fp8ScaleTimeline::tensors() const {
  QStringList out;
  for (int i = 0; i < m_tensorBox->count(); ++i) out << m_tensorBox->itemText(i);
  return out;
}

void Fp8ScaleTimeline::setSelectedTensor(const QString& tensor) {
  if (tensor == m_tensor) return;
  m_tensor = tensor;
  {
    const QSignalBlocker block(m_tensorBox);
    m_tensorBox->setCurrentIndex(m_tensorBox->findText(tensor));
  }
  invalidateSeries();
  refreshNow();
}

void Fp8ScaleTimeline::fillTensorBox() {
  QStringList all;
  QString spiked;
  for (const RunData* r : visibleRuns()) {
    for (const QString& t : fp8TensorsInModelOrder(*r))
      if (!all.contains(t)) all << t;
    const Fp8Spike s = fp8Spike(r->config.fp8);
    if (spiked.isEmpty() && s.step > 0) spiked = s.tensor;
  }
  const QSignalBlocker block(m_tensorBox);
  m_tensorBox->clear();
  m_tensorBox->addItems(all);
  if (!all.contains(m_tensor)) m_tensor = all.contains(spiked) ? spiked : all.value(0);
  m_tensorBox->setCurrentIndex(m_tensorBox->findText(m_tensor));
}

void Fp8ScaleTimeline::rebuildSeries() {
  m_sets.clear();
  fillTensorBox();
  int index = 0;
  for (const RunData* run : visibleRuns()) {
    const int colorIndex = index++;
    if (int(m_sets.size()) >= kMaxRuns) break;
    if (!fp8TensorsInModelOrder(*run).contains(m_tensor)) continue;
    Set set;
    set.run = run;
    const QColor color = runColor(run, colorIndex);
    const Qt::PenStyle style = runPenStyle(run);
    // The band first, so the lines are drawn over it.
    set.bandUpper = new QLineSeries;
    set.bandLower = new QLineSeries;
    set.band = new QAreaSeries(set.bandUpper, set.bandLower);
    set.bandUpper->setParent(set.band);
    set.bandLower->setParent(set.band);
    set.band->setName(run->name + tr(" (format range after the scale)"));
    tagSeries(set.band, run, tr("format range"), false);
    m_view->addSeries(set.band);
    QColor fill = color;
    fill.setAlpha(m_sets.empty() ? 40 : 28);
    set.band->setBrush(fill);
    set.band->setPen(Qt::NoPen);
    m_view->setLegendEntryVisible(set.band, false);

    set.scale = new QLineSeries;
    set.scale->setName(run->name + tr(" (max ÷ scale)"));
    tagSeries(set.scale, run, tr("format max ÷ scale"));
    m_view->addSeries(set.scale);
    set.scale->setPen(pen(color.darker(125), 2.6, style));

    set.history = new QLineSeries;
    set.history->setName(run->name + tr(" (history amax)"));
    tagSeries(set.history, run, tr("history amax"));
    m_view->addSeries(set.history);
    set.history->setPen(pen(color, 1.4, Qt::DashLine));
    m_view->setLegendEntryVisible(set.history, false);

    set.amax = new QLineSeries;
    set.amax->setName(run->name);
    tagSeries(set.amax, run, tr("amax"));
    m_view->addSeries(set.amax);
    set.amax->setPen(pen(color, 1.4, style));

    // The spike under the clipped-step triangle: the spike's own step clips, both must show.
    set.spike = new QScatterSeries;
    set.spike->setName(run->name + tr(" (injected spike)"));
    tagSeries(set.spike, run, tr("injected spike; amax"));
    m_view->addSeries(set.spike);
    set.spike->setMarkerSize(17);
    set.spike->setLightMarker(markerImage(QColor(0xff, 0xd7, 0x00), QColor(0x20, 0x20, 0x20), 17));
    m_view->setLegendEntryVisible(set.spike, false);
    set.clipped = new QScatterSeries;
    set.clipped->setName(run->name + tr(" (clipped)"));
    tagSeries(set.clipped, run, tr("clipped step; amax"));
    m_view->addSeries(set.clipped);
    set.clipped->setMarkerSize(9);
    set.clipped->setLightMarker(markerImage(color, QColor(0xb0, 0x10, 0x10), 9, Marker::Triangle));
    m_view->setLegendEntryVisible(set.clipped, false);

    m_sets.push_back(set);
  }
}

void Fp8ScaleTimeline::updateSeries() {
  // Runs start before their first records: once records arrive (or a run gains the tensor),
  // the series are made again for the runs that have it now.
  QStringList have;
  int shown = 0;
  for (const RunData* run : visibleRuns())
    if (shown < kMaxRuns && hasFp8Records(*run)) {
      const QStringList t = fp8TensorsInModelOrder(*run);
      if (m_tensor.isEmpty() || t.contains(m_tensor)) have << QString::number(run->id), ++shown;
    }
  QStringList built;
  for (const Set& set : m_sets) built << QString::number(set.run->id);
  if (have != built || (m_tensor.isEmpty() && !have.isEmpty())) {
    m_view->removeAllSeries();
    rebuildSeries();
  }
  const YDomain domain = m_view->yDomain();
  const auto y = [domain](double v) { return toDomain(v, domain); };
  double xMin = qInf(), xMax = -qInf();
  bool anyClipped = false, anySpike = false;
  QString format;
  for (Set& set : m_sets) {
    const Fp8TensorSeries s = fp8Series(*set.run, m_tensor);
    if (s.size() == 0) continue;
    xMin = std::min(xMin, s.step.first() - 0.5);
    xMax = std::max(xMax, s.step.last() + 0.5);
    if (format.isEmpty()) format = s.format;
    const std::optional<Fp8FormatRange> range = fp8FormatRange(s.format);
    QList<QPointF> amax, history, upper, lower, clipped, spike;
    const Fp8Spike sp = fp8Spike(set.run->config.fp8);
    for (int i = 0; i < s.size(); ++i) {
      const double st = s.step[i];
      if (s.amax[i] > 0 && std::isfinite(s.amax[i])) amax << QPointF(st, y(s.amax[i]));
      if (std::isfinite(s.historyAmax[i]) && s.historyAmax[i] > 0) history << QPointF(st, y(s.historyAmax[i]));
      if (range && s.scale[i] > 0 && std::isfinite(s.scale[i])) {
        // The scale acts for the whole step: a step line from half a step before to half after.
        const double top = y(range->max / s.scale[i]), bottom = y(range->minSubnormal / s.scale[i]);
        upper << QPointF(st - 0.5, top) << QPointF(st + 0.5, top);
        lower << QPointF(st - 0.5, bottom) << QPointF(st + 0.5, bottom);
      }
      if (s.overflow[i] > 0 && s.amax[i] > 0) clipped << QPointF(st, y(s.amax[i]));
      if (sp.step > 0 && sp.tensor == m_tensor && qint64(st) == sp.step && s.amax[i] > 0)
        spike << QPointF(st, y(s.amax[i]));
    }
    m_view->replacePoints(set.amax, amax);
    m_view->replacePoints(set.history, history);
    set.bandUpper->replace(upper);
    set.bandLower->replace(lower);
    m_view->replacePoints(set.scale, upper);
    m_view->replacePoints(set.clipped, clipped);
    m_view->replacePoints(set.spike, spike);
    anyClipped = anyClipped || !clipped.isEmpty();
    anySpike = anySpike || !spike.isEmpty();
  }
  QVector<const RunData*> legendRuns;
  for (const Set& set : m_sets) legendRuns << set.run;
  const QColor grey(0x80, 0x80, 0x80);
  QList<LegendEntry> keys;
  keys << LegendEntry{tr("amax"), grey, Qt::SolidLine} << LegendEntry{tr("history max"), grey, Qt::DashLine}
       << LegendEntry{tr("max ÷ scale (thick)"), grey.darker(130), Qt::SolidLine};
  if (anyClipped)
    keys << LegendEntry{tr("clipped step"), grey, Qt::SolidLine, LegendEntry::Glyph::Triangle};
  if (anySpike)
    keys << LegendEntry{tr("injected spike"), QColor(0xff, 0xd7, 0x00), Qt::SolidLine, LegendEntry::Glyph::Dot};
  updateRunLegend(m_view, legendRuns, keys);
  const std::optional<Fp8FormatRange> range = fp8FormatRange(format);
  m_view->setTitle(m_tensor.isEmpty() ? tr("fp8 scale timeline") : tr("fp8 scale timeline · %1").arg(m_tensor));
  m_view->setCaption(range ? tr("%1: the band is %2…%3 ÷ scale; amax above the thick line clips, "
                                "values below the band flush to zero")
                                 .arg(fp8FormatLabel(format), powerLabel(range->minSubnormalExp),
                                      QString::number(range->max))
                           : QString(),
                     Qt::AlignBottom | Qt::AlignLeft);
  m_view->setPlaceholder(visibleRuns().isEmpty() ? tr("no runs to show")
                         : m_sets.empty()        ? tr("no quantised tensors in these runs\n(amp.mode=fp8 records them)")
                                                 : QString());
  if (!std::isfinite(xMin)) xMin = 0, xMax = 1;
  m_view->applyAutoRange(xMin, xMax);
}

QList<QPointF> Fp8ScaleTimeline::seriesPoints(int runId, const QString& which) const {
  for (const Set& set : m_sets) {
    if (set.run->id != runId) continue;
    const QXYSeries* s = which == QLatin1String("amax")      ? static_cast<QXYSeries*>(set.amax)
                         : which == QLatin1String("history") ? set.history
                         : which == QLatin1String("scale")   ? set.scale
                         : which == QLatin1String("floor")   ? set.bandLower
                         : which == QLatin1String("clipped") ? static_cast<QXYSeries*>(set.clipped)
                         : which == QLatin1String("spike")   ? set.spike
                                                             : nullptr;
    return s ? s->points() : QList<QPointF>{};
  }
  return {};
}

QStringList Fp8ScaleTimeline::shownRuns() const {
  QStringList out;
  for (const Set& set : m_sets) out << set.run->name;
  return out;
}

}  // namespace amp::ui
