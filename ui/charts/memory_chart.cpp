#include "ui/charts/memory_chart.h"

#include <QAreaSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLineSeries>
#include <QPen>
#include <QResizeEvent>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <QValueAxis>
#include <cmath>

#include "ui/run_data.h"

namespace amp::ui {

namespace {

const QColor kCategoryColors[kMemCategoryCount] = {QColor(0x1f, 0x77, 0xb4), QColor(0x9e, 0xc9, 0xe8),
                                                   QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                                                   QColor(0x94, 0x67, 0xbd), QColor(0x9a, 0x9a, 0x9a)};

QString categoryLabel(int c) {
  static const char* const names[kMemCategoryCount] = {"weights",     "master weights",  "gradients",
                                                       "activations", "optimizer state", "workspace"};
  return QString::fromLatin1(names[c]);
}

// Legend names: six entries must fit under a narrow chart.
QString categoryShortLabel(int c) {
  static const char* const names[kMemCategoryCount] = {"weights",     "master",    "grads",
                                                       "activations", "optimizer", "workspace"};
  return QString::fromLatin1(names[c]);
}

// "fp8" or "fp4" for a run whose Linear layers quantise (amp.mode=fp8), "" otherwise.
QString quantisedKind(const RunData* run) {
  if (!run || run->config.mode != PrecisionMode::Fp8) return {};
  return run->config.fp8.recipe == "nvfp4" ? QStringLiteral("fp4") : QStringLiteral("fp8");
}

// Binary units: the allocator counts bytes, and tensors come in powers of two.
std::pair<double, QString> unitFor(double maxBytes) {
  if (maxBytes >= 1024.0 * 1024 * 1024) return {1024.0 * 1024 * 1024, QStringLiteral("GiB")};
  if (maxBytes >= 1024.0 * 1024) return {1024.0 * 1024, QStringLiteral("MiB")};
  if (maxBytes >= 1024.0) return {1024.0, QStringLiteral("KiB")};
  return {1.0, QStringLiteral("bytes")};
}

// Drops indices where no layer changes: real memory is flat for most steps, and every point
// kept costs six layers' worth of polygon to fill.
void dropUnchanged(std::vector<int>& idx, const std::array<QVector<double>, kMemCategoryCount>& mem) {
  if (idx.size() < 3) return;
  const auto same = [&](int a, int b) {
    for (const QVector<double>& v : mem)
      if (v.value(a) != v.value(b)) return false;
    return true;
  };
  std::size_t kept = 1;
  for (std::size_t j = 1; j + 1 < idx.size(); ++j)
    if (!same(idx[j], idx[kept - 1]) || !same(idx[j], idx[j + 1])) idx[kept++] = idx[j];
  idx[kept++] = idx.back();
  idx.resize(kept);
}

}  // namespace

MemoryChart::MemoryChart(QWidget* parent)
    : ChartPanel(QStringLiteral("memory"), parent), m_peakView(new ChartView(this)) {
  m_view->setTitle(tr("Memory"));
  m_view->setIncludeZero(m_view->yAxis(), true);
  // The six categories go in the wrapping legend below (see rebuildSeries): QLegend on the right
  // took a third of a narrow chart's width, and the step labels were elided to "2…".
  m_peakView->setTitle(tr("Peak by category"));
  m_peakView->setXAxis(nullptr);
  m_peakView->yAxis()->setVisible(false);  // bars bring their own axes
  m_peakView->setInteractive(false);
  m_peakView->setRubberBand(QChartView::NoRubberBand);
  m_peakAxis = new QBarCategoryAxis(m_peakView);
  // Short names: Qt Charts gives a y axis at most ~40% of the chart's width and elides longer
  // labels to "…" ("master weights" did in a 1920x1080 window).
  for (int c = 0; c < kMemCategoryCount; ++c) m_peakAxis->append(categoryShortLabel(c));
  // Qt 6 truncates category labels to "…" whenever it judges them long, however much room the
  // chart has ("weights" was elided at 1920x1080): the six short names always fit.
  m_peakAxis->setTruncateLabels(false);
  m_peakView->addAxis(m_peakAxis, Qt::AlignLeft);
  m_peakValues = new QValueAxis(m_peakView);
  m_peakValues->setLabelFormat(QStringLiteral("%g"));
  m_peakView->addAxis(m_peakValues, Qt::AlignBottom);
  m_peakView->setHoverTextProvider([this](const QPointF& v) { return peakHoverText(v); });
  connectView(m_peakView);

  m_runBox = new QComboBox(this);
  m_runBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  auto* charts = new QHBoxLayout;
  charts->setSpacing(0);
  charts->addWidget(m_view, 3);
  charts->addWidget(m_peakView, 2);
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 0, 6, 0);
  controls->addWidget(new QLabel(tr("Run"), this));
  controls->addWidget(m_runBox);
  controls->addStretch(1);
  m_deviceLabel = new QLabel(this);
  m_deviceLabel->setToolTip(
      tr("The device's memory as the driver reports it after the latest step: other programs and "
         "the CUDA context count against it too. The chart counts this run's tensors."));
  controls->addWidget(m_deviceLabel);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 2);
  layout->setSpacing(2);
  layout->addLayout(charts, 1);
  layout->addLayout(controls);
  connect(m_runBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSelectedRun(m_runBox->itemData(i).toInt()); });
}

QString MemoryChart::categoryName(int c, const RunData* run, bool brief) {
  const QString kind = quantisedKind(run);
  if (!kind.isEmpty() && c == int(MemCategory::Weights))
    // The engine counts a quantised layer's weight as its codes and their scales (both in the
    // Weights category), beside the bf16 casts of any layer kept in bf16 (fp8.keep_bf16).
    return brief ? tr("%1 weights + scales").arg(kind)
                 : kind == QLatin1String("fp4")
                       ? tr("fp4 weights and their scales (4-bit E2M1 codes, two a byte, an E4M3 scale per 16 "
                            "and an fp32 one per tensor; bf16 casts of layers kept in bf16)")
                       : tr("fp8 weights and their scales (1-byte codes with their block or tensor scales; "
                            "bf16 casts of layers kept in bf16)");
  if (!kind.isEmpty() && c == int(MemCategory::MasterWeights))
    return brief ? tr("fp32 masters") : tr("fp32 master weights (what the optimizer updates)");
  return brief ? categoryShortLabel(c) : categoryLabel(c);
}

QStringList MemoryChart::areaNames() const {
  QStringList out;
  for (const QAreaSeries* a : m_areas) out << (a ? a->name() : QString());
  return out;
}

void MemoryChart::setSelectedRun(int runId) {
  if (runId == m_selectedId) return;
  m_selectedId = runId;
  const QSignalBlocker block(m_runBox);
  m_runBox->setCurrentIndex(m_runBox->findData(runId));
  emit selectedRunChanged(runId);
  refreshNow();
}

const RunData* MemoryChart::selected() const {
  const QVector<const RunData*> runs = visibleRuns();
  for (const RunData* r : runs)
    if (r->id == m_selectedId) return r;
  return runs.isEmpty() ? nullptr : runs.last();  // the newest: the one just started
}

void MemoryChart::rebuildSeries() {
  const QVector<const RunData*> runs = visibleRuns();
  {
    const QSignalBlocker block(m_runBox);
    m_runBox->clear();
    for (const RunData* r : runs) m_runBox->addItem(r->name, r->id);
    const RunData* sel = selected();
    m_runBox->setCurrentIndex(sel ? m_runBox->findData(sel->id) : -1);
  }
  m_total.clear();
  m_totalRun = nullptr;
  m_peaks.clear();
  m_unit = 0;  // forces the axis titles to be set
  for (int c = 0; c < kMemCategoryCount; ++c) {
    // Each layer owns its edges (QAreaSeries does not): a shared edge would dangle once the
    // layer below is deleted.
    auto* upper = new QLineSeries;
    auto* lower = c > 0 ? new QLineSeries : nullptr;
    auto* area = new QAreaSeries(upper, lower);
    upper->setParent(area);
    if (lower) lower->setParent(area);
    area->setName(categoryName(c, selected(), true));
    m_view->addSeries(area);
    area->setBrush(kCategoryColors[c]);
    area->setPen(pen(kCategoryColors[c].darker(130), 0.8));
    m_areas[c] = area;
  }
  // Drawn over the areas: what stays allocated between steps (weights, masters, gradients,
  // optimizer state) against the in-step peak that activations add.
  m_heldLine = new QLineSeries;
  m_heldLine->setName(tr("held"));
  m_heldLine->setPen(pen(m_view->textColor(), 1.4, Qt::DashLine));  // readable on light and dark
  m_view->addSeries(m_heldLine);
  m_peakSeries = nullptr;
  updatePeakVisibility();
  if (runs.size() >= 2) {
    m_peakSeries = new QHorizontalBarSeries;
    for (int i = 0; i < runs.size(); ++i) {
      auto* set = new QBarSet(runs[i]->name);
      for (int c = 0; c < kMemCategoryCount; ++c) set->append(0.0);
      set->setColor(runColor(runs[i], i));  // bars: colour only, no line style
      set->setBorderColor(runColor(runs[i], i).darker(130));
      m_peakSeries->append(set);
    }
    m_peakView->addSeries(m_peakSeries, m_peakValues);
    m_peakSeries->attachAxis(m_peakAxis);
    updateRunLegend(m_peakView, runs);
  }
  m_namesKind = quantisedKind(selected());
  setCategoryLegend();
}

void MemoryChart::setCategoryLegend() {
  QList<LegendEntry> keys;
  for (int c = 0; c < kMemCategoryCount; ++c)
    keys << LegendEntry{m_areas[c]->name(), kCategoryColors[c], Qt::SolidLine, LegendEntry::Glyph::Dot};
  keys << LegendEntry{tr("held"), m_view->textColor(), Qt::DashLine, LegendEntry::Glyph::Line};
  m_view->setRunLegend({}, keys);
}

// The per-category bars need room for their category names: in a narrow panel (a grid cell at
// 1280x800) the stacked areas get the whole width and the bars wait for a wider panel or a tab.
void MemoryChart::updatePeakVisibility() {
  const bool show = visibleRuns().size() >= 2 && width() >= kPeakMinWidth;
  if (m_peakView->isVisible() != show) m_peakView->setVisible(show);
}

void MemoryChart::resizeEvent(QResizeEvent* event) {
  ChartPanel::resizeEvent(event);
  updatePeakVisibility();
}

void MemoryChart::updateSeries() {
  const RunData* run = selected();
  const QVector<const RunData*> runs = visibleRuns();
  if (!run) {
    for (QAreaSeries* a : m_areas) a->upperSeries()->clear();
    if (m_heldLine) m_heldLine->clear();
    m_deviceLabel->clear();
    m_view->setPlaceholder(tr("no runs to show"));
    m_view->applyAutoRange(qQNaN(), qQNaN());
    return;
  }
  if (run->notLogged(QStringLiteral("memory"))) {
    // An imported log has no memory figures: zeros would draw as a measured (and, on the auto
    // range, negative-looking) band.
    for (QAreaSeries* a : m_areas) {
      a->upperSeries()->clear();
      if (a->lowerSeries()) a->lowerSeries()->clear();
    }
    if (m_heldLine) m_heldLine->clear();
    m_deviceLabel->clear();
    m_view->setTitle(tr("Memory · %1").arg(run->name));
    m_view->setPlaceholder(tr("%1: memory not logged (imported from TensorBoard)").arg(run->name));
    m_view->applyAutoRange(qQNaN(), qQNaN());
    if (m_peakSeries) updatePeaks(runs, m_unit > 0 ? m_unit : 1.0);
    return;
  }
  if (quantisedKind(run) != m_namesKind) {  // another run chosen: an fp8 run's names, or back
    m_namesKind = quantisedKind(run);
    for (int c = 0; c < kMemCategoryCount; ++c) m_areas[c]->setName(categoryName(c, run, true));
    setCategoryLegend();
    m_unit = 0;  // the hover tags again, below
  }
  const RunSeries& s = run->series;
  const int n = s.size();
  if (m_totalRun != run || qsizetype(m_total.size()) > n) {
    m_total.clear();
    m_totalRun = run;
  }
  for (qsizetype i = qsizetype(m_total.size()); i < n; ++i) {
    double sum = 0;
    for (int c = 0; c < kMemCategoryCount; ++c) sum += s.memPeak[c].value(i);
    m_total.push_back(sum);
  }
  double maxBytes = 0;
  for (const RunData* r : runs)
    for (int c = 0; c < kMemCategoryCount; ++c)
      maxBytes = std::max(maxBytes, r->series.memPeak[c].isEmpty() ? 0.0 : r->series.memPeak[c].last());
  if (!m_total.empty()) maxBytes = std::max(maxBytes, m_total.back());
  const auto [unit, unitName] = unitFor(maxBytes);
  if (unit != m_unit) {
    m_unit = unit;
    m_unitName = unitName;
    m_view->setAxisTitles(xAxisTitle(), unitName);  // the legend and hover say "peak in step"
    for (int c = 0; c < kMemCategoryCount; ++c)
      tagSeries(m_areas[c], run->name, tr("%1 (%2)").arg(categoryName(c, run, false), unitName));
    tagSeries(m_heldLine, run->name, tr("held after the step (%1)").arg(unitName));
  }
  m_view->setTitle(run->backendName.startsWith(QLatin1String("cuda")) ? tr("Device memory · %1").arg(run->name)
                                                                       : tr("Memory · %1").arg(run->name));

  const auto [xMin, xMax] = xExtent({run});
  const QVector<double>& xs = xColumn(s);
  const DecimationRange range = m_view->decimationRange(xMin, xMax);
  std::vector<int> idx =
      decimateMinMaxIndices(spanOf(xs), {m_total.data(), m_total.size()}, range,
                            /*positiveOnly=*/false, /*keepFlatRuns=*/true);  // layers share them
  dropUnchanged(idx, s.memPeak);
  QList<QPointF> below;
  for (int c = 0; c < kMemCategoryCount; ++c) {
    QList<QPointF> points;
    points.reserve(qsizetype(idx.size()));
    // Each category's peak within the step: at the end of a step activations are already
    // freed, so "current" would hide exactly what mixed precision shrinks.
    const QVector<double>& bytes = s.memPeak[c];
    for (std::size_t j = 0; j < idx.size(); ++j)
      points.append(QPointF(
          xs[idx[j]], bytes.value(idx[j]) / m_unit + (below.isEmpty() ? 0.0 : below[qsizetype(j)].y())));
    if (QLineSeries* lower = m_areas[c]->lowerSeries()) lower->replace(below);
    m_areas[c]->upperSeries()->replace(points);
    below = std::move(points);
  }
  QList<QPointF> held;
  held.reserve(qsizetype(idx.size()));
  for (int i : idx) {
    double sum = 0;
    for (int c = 0; c < kMemCategoryCount; ++c) sum += s.memCurrent[c].value(i);
    held.append(QPointF(xs[i], sum / m_unit));
  }
  m_heldLine->replace(held);
  if (s.deviceTotal > 0) {
    const double gib = 1024.0 * 1024 * 1024;
    m_deviceLabel->setText(tr("%1: %2 GiB free of %3 GiB")
                               .arg(run->backendName)
                               .arg(s.deviceFree / gib, 0, 'f', 1)
                               .arg(s.deviceTotal / gib, 0, 'f', 1));
  } else {
    m_deviceLabel->clear();  // host memory: the machine's own tools tell it better
  }
  m_view->setPlaceholder(n == 0 ? tr("no steps yet") : QString());
  m_view->applyAutoRange(xMin, xMax);
  if (m_peakSeries) updatePeaks(runs, m_unit);
}

// Peak of each category on its own, over the whole run (the tracker's per-step peaks).
void MemoryChart::updatePeaks(const QVector<const RunData*>& runs, double unit) {
  const QList<QBarSet*> sets = m_peakSeries->barSets();
  m_peaks.resize(std::size_t(runs.size()));
  double top = 0;
  for (int i = 0; i < runs.size() && i < sets.size(); ++i) {
    PeakCache& cache = m_peaks[std::size_t(i)];
    const RunSeries& s = runs[i]->series;
    if (cache.run != runs[i] || cache.done > s.size()) cache = {runs[i], 0, {}};
    for (int c = 0; c < kMemCategoryCount; ++c)
      for (qsizetype j = cache.done; j < s.memPeak[c].size(); ++j)
        cache.max[std::size_t(c)] = std::max(cache.max[std::size_t(c)], s.memPeak[c][j]);
    cache.done = s.size();
    for (int c = 0; c < kMemCategoryCount; ++c) {
      const double v = cache.max[std::size_t(c)] / unit;
      if (sets[i]->at(c) != v) sets[i]->replace(c, v);
      top = std::max(top, v);
    }
  }
  m_peakValues->setTitleText(tr("peak, %1").arg(m_unitName));
  m_peakView->setNiceRange(m_peakValues, 0, top > 0 ? top * 1.03 : 1.0, 4);
}

QString MemoryChart::peakHoverText(const QPointF& value) const {
  if (!m_peakSeries || m_peakSeries->count() == 0) return {};
  // Horizontal bars: categories along y; within one, bars share barWidth(), one slot per run.
  const int c = int(std::lround(value.y()));
  if (c < 0 || c >= kMemCategoryCount) return {};
  const double width = m_peakSeries->barWidth();
  const double offset = value.y() - c + width / 2;
  if (offset < 0 || offset >= width) return {};
  const int i = int(offset / (width / m_peakSeries->count()));
  const QBarSet* set = m_peakSeries->barSets().value(i);
  if (!set) return {};
  const RunData* run = std::size_t(i) < m_peaks.size() ? m_peaks[std::size_t(i)].run : nullptr;
  return tr("<b>%1</b><br/>%2 peak: %3 %4")
      .arg(set->label().toHtmlEscaped(), categoryName(c, run, false), QString::number(set->at(c), 'g', 4), m_unitName);
}

void MemoryChart::render(QPainter* painter, const QRectF& target) {
  refreshNow();
  if (!m_peakSeries || target.width() < kPeakMinWidth) {
    m_view->renderChart(painter, target);
    return;
  }
  const double split = target.width() * 0.6;
  m_view->renderChart(painter, QRectF(target.topLeft(), QSizeF(split, target.height())));
  m_peakView->renderChart(
      painter, QRectF(target.left() + split, target.top(), target.width() - split, target.height()));
}

}  // namespace amp::ui
