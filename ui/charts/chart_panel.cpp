#include "ui/charts/chart_panel.h"

#include <QAbstractSeries>
#include <QFileDialog>
#include <QLineSeries>
#include <QMessageBox>
#include <QPainter>
#include <QSet>
#include <QShowEvent>
#include <QValueAxis>
#include <QXYSeries>
#include <algorithm>
#include <cmath>

#include "ui/charts/coinciding_runs.h"
#include "ui/last_folder.h"
#include "ui/run_data.h"
#include "ui/theme.h"

namespace amp::ui {

ChartPanel::ChartPanel(const QString& name, QWidget* parent)
    : QWidget(parent), m_view(new ChartView(this)), m_name(name) {
  connectView(m_view);
}

void ChartPanel::connectView(ChartView* view) {
  connect(view, &ChartView::viewChanged, this, &ChartPanel::refreshNow);
  connect(view, &ChartView::exportRequested, this, &ChartPanel::exportInteractively);
  // Series colours that depend on the theme (marker borders, labels) are set when built.
  connect(view, &ChartView::themeChanged, this, [this] {
    invalidateSeries();
    refreshNow();
    if (m_highlighted >= 0) {
      const int run = m_highlighted;
      m_highlighted = -1;
      highlightRun(run);
    }
  });
  connect(view, &ChartView::legendRunClicked, this, &ChartPanel::runVisibilityToggleRequested);
  connect(view, &ChartView::legendRunHovered, this, &ChartPanel::highlightRun);
}

void ChartPanel::setRuns(const QVector<const RunData*>& runs) {
  m_runs = runs;
  m_signature.clear();  // pointers may be reused for other runs: rebuild regardless
  refresh();
}

void ChartPanel::resetViews() {
  for (ChartView* v : views()) v->resetView();
}

QVector<const RunData*> ChartPanel::visibleRuns() const {
  QVector<const RunData*> out;
  for (const RunData* r : m_runs)
    if (r && r->visible) out.append(r);
  return out;
}

QString ChartPanel::runSignature() const {
  QString sig = QStringLiteral("#");  // never empty, so a cleared signature always differs
  for (const RunData* r : m_runs) {
    if (!r || !r->visible) continue;
    sig += QStringLiteral("%1|%2|%3|%4;").arg(quintptr(r)).arg(r->id).arg(r->color.rgba()).arg(r->name);
  }
  return sig;
}

void ChartPanel::refresh() {
  if (!isVisible()) {
    m_dirty = true;  // done on show, or before an export
    return;
  }
  refreshNow();
}

void ChartPanel::refreshNow() {
  if (m_refreshing) return;  // a signal from inside our own update: the data is current
  m_refreshing = true;
  m_dirty = false;
  const QString sig = runSignature();
  if (sig != m_signature) {
    m_signature = sig;
    for (ChartView* v : views()) v->removeAllSeries();
    m_decimated.clear();
    rebuildSeries();
  }
  updateSeries();
  m_refreshing = false;
}

void ChartPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (m_dirty) refreshNow();
}

void ChartPanel::setTheme(ChartView::Theme theme) {
  for (ChartView* v : views()) v->setTheme(theme);
}

void ChartPanel::render(QPainter* painter, const QRectF& target) {
  if (m_dirty) refreshNow();
  m_view->renderChart(painter, target);
}

bool ChartPanel::exportTo(const QString& path, const QString& format, QSize size, int dpi,
                          QString* error) {
  const auto f = exportFormatFor(path, format);
  if (!f) {
    if (error) *error = path + tr(": not a PNG, SVG or PDF file name");
    return false;
  }
  ExportOptions options;
  if (!size.isEmpty())
    options.size = size;
  else if (width() > 50 && height() > 50)
    options.size = this->size();
  options.dpi = dpi;
  options.background = m_view->backgroundColor();
  options.title = m_view->title();
  return exportPainting(path, *f, options, [this](QPainter* p, const QRectF& r) { render(p, r); }, error);
}

void ChartPanel::exportInteractively(ExportFormat format) {
  static const char* const suffixes[] = {"png", "svg", "pdf"};
  const QString suffix = QString::fromLatin1(suffixes[int(format)]);
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export chart"), inLastFolder(m_name + QLatin1Char('.') + suffix),
                                   tr("%1 files (*.%2)").arg(suffix.toUpper(), suffix));
  if (path.isEmpty()) return;
  rememberFolderOf(path);
  // PNG at twice the on-screen size and 192 dpi: sharp on slides and in print.
  const bool png = format == ExportFormat::Png;
  const QSize base = size().isEmpty() ? QSize(1000, 700) : size();
  QString error;
  if (!exportTo(path, suffix, png ? base * 2 : base, png ? 192 : 96, &error))
    QMessageBox::warning(this, tr("Export chart"), tr("The chart was not exported: %1").arg(error));
}

QColor ChartPanel::runColor(const RunData* run, int index) {
  if (run && run->color.isValid()) return run->color;
  static const QColor fallback[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                    QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b)};
  return fallback[index % 6];
}

void ChartPanel::setXAxisMode(XAxisMode mode) {
  if (mode == m_xMode) return;
  m_xMode = mode;
  m_mappedX.clear();
  forgetDecimation();
  if (ChartView* v = m_view; v->xAxis() && !v->xAxis()->titleText().isEmpty()) v->xAxis()->setTitleText(xAxisTitle());
  xAxisModeChanged();
  m_view->resetView();  // the old x range means nothing on the new axis
  invalidateSeries();
  refresh();
}

QString ChartPanel::xAxisTitle() const {
  switch (m_xMode) {
    case XAxisMode::Epoch: return tr("epoch");
    case XAxisMode::WallTime: return tr("training time (s)");
    case XAxisMode::Step: break;
  }
  return tr("step");
}

const QVector<double>& ChartPanel::xColumn(const RunSeries& s) const {
  const QVector<double>& column = m_xMode == XAxisMode::Epoch      ? s.epoch
                                  : m_xMode == XAxisMode::WallTime ? s.wallS
                                                                   : s.step;
  return column.size() == s.step.size() ? column : s.step;
}

std::pair<double, double> ChartPanel::xExtent(const QVector<const RunData*>& runs) const {
  if (m_xMode == XAxisMode::Step) return stepExtent(runs);
  double lo = qInf(), hi = -qInf();
  for (const RunData* r : runs) {
    const QVector<double>& x = xColumn(r->series);
    if (x.isEmpty()) continue;
    lo = std::min(lo, x.first());  // both columns only grow with the step
    hi = std::max(hi, x.last());
  }
  if (lo > hi) return {qQNaN(), qQNaN()};
  return {lo, hi};
}

std::span<const double> ChartPanel::xAtSteps(const RunSeries& s, const QVector<double>& steps) {
  if (m_xMode == XAxisMode::Step) return spanOf(steps);
  const QVector<double>& x = xColumn(s);
  QVector<double>& out = m_mappedX[&steps];
  out.resize(steps.size());
  for (qsizetype i = 0; i < steps.size(); ++i) {
    const auto it = std::lower_bound(s.step.begin(), s.step.end(), steps[i]);
    const qsizetype j = std::min<qsizetype>(it - s.step.begin(), x.size() - 1);
    out[i] = j >= 0 ? x[j] : steps[i];
  }
  return spanOf(out);
}

Qt::PenStyle ChartPanel::runPenStyle(const RunData* run) {
  static const Qt::PenStyle styles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};
  const int index = run ? std::max(0, run->id - 1) : 0;  // colours go by id - 1 too
  return styles[(index / kRunColorCount) % 4];
}

void ChartPanel::setPresentationScale(double factor) {
  for (ChartView* v : views()) v->setPresentationScale(factor);  // each rebuilds the series
}

void ChartPanel::highlightRun(int runId) {
  if (runId == m_highlighted) return;
  m_highlighted = runId;
  for (ChartView* v : views()) {
    for (QAbstractSeries* s : v->chart()->series()) {
      auto* xy = qobject_cast<QXYSeries*>(s);
      if (!xy || !s->property("ampRunId").isValid()) continue;
      QVariant original = s->property("ampPen");
      if (!original.isValid()) {
        original = QVariant::fromValue(xy->pen());
        s->setProperty("ampPen", original);
      }
      QPen p = original.value<QPen>();
      if (runId >= 0) {
        if (s->property("ampRunId").toInt() == runId) {
          p.setWidthF(p.widthF() * 2.0);
        } else {
          QColor c = p.color();
          c.setAlphaF(c.alphaF() * 0.2f);
          p.setColor(c);
        }
      }
      xy->setPen(p);
    }
  }
}

QHash<int, QString> ChartPanel::markCoincidingRuns(const QVector<const RunData*>& runs, const QList<QLineSeries*>& lines,
                                                   const std::vector<std::span<const double>>& values, double relTol,
                                                   int minCommon, qreal width, qreal haloWidth) {
  const std::vector<Coincidence> same = coincidingRuns(values, relTol, minCommon);
  QStringList names;
  QList<int> ids;
  for (const RunData* r : runs) {
    names << r->name;
    ids << r->id;
  }
  const QStringList shortNames = splitLegendNames(names, ids).distinct;  // as the legend shows them
  QHash<int, QString> suffixes;
  QSet<int> covered;
  for (const Coincidence& c : same) {
    covered.insert(c.sameAs);
    suffixes[runs[c.index]->id] = coincidenceSuffix(shortNames.value(c.sameAs), c.maxRelDiff);
  }
  for (int i = 0; i < runs.size() && i < lines.size(); ++i) {
    const bool halo = covered.contains(i);
    QLineSeries* line = lines[i];
    if (line->property("ampHalo").toBool() == halo && line->property("ampHalo").isValid()) continue;
    line->setProperty("ampHalo", halo);
    QPen p = line->property("ampPen").isValid() ? line->property("ampPen").value<QPen>() : line->pen();
    p.setWidthF((halo ? haloWidth : width) * m_view->presentationScale());
    line->setProperty("ampPen", QVariant::fromValue(p));  // what a highlight restores
    if (m_highlighted < 0) line->setPen(p);
  }
  return suffixes;
}

void ChartPanel::updateRunLegend(ChartView* view, const QVector<const RunData*>& runs,
                                 const QList<LegendEntry>& keys,
                                 const std::function<QString(const RunData*)>& suffix) {
  QStringList names;
  QList<int> ids;
  for (const RunData* r : runs) {
    names << r->name;
    ids << r->id;
  }
  const LegendNames split = splitLegendNames(names, ids);
  QList<LegendEntry> entries;
  for (int i = 0; i < runs.size(); ++i) {
    LegendEntry e;
    e.label = split.distinct.value(i) + (suffix ? suffix(runs[i]) : QString());
    e.color = runColor(runs[i], i);
    e.style = runPenStyle(runs[i]);
    e.runId = runs[i]->id;
    e.hidden = !runs[i]->visible;
    entries << e;
  }
  entries << keys;
  view->setRunLegend(split.common, entries);
}

QPen ChartPanel::pen(const QColor& color, qreal width, Qt::PenStyle style) const {
  QPen p(color, width * m_view->presentationScale(), style);
  // Bevel joins and flat caps: round ones make Qt's stroker compute an arc at each of the
  // ~2 points per pixel, which doubled the paint time of a noisy line.
  p.setCapStyle(Qt::FlatCap);
  p.setJoinStyle(Qt::BevelJoin);
  return p;
}

std::pair<double, double> ChartPanel::stepExtent(const QVector<const RunData*>& runs) {
  double lo = qInf(), hi = -qInf();
  for (const RunData* r : runs) {
    if (r->series.step.isEmpty()) continue;
    lo = std::min(lo, r->series.step.first());
    hi = std::max(hi, r->series.step.last());
  }
  if (lo > hi) return {qQNaN(), qQNaN()};
  return {lo, hi};
}

bool ChartPanel::setDecimated(QXYSeries* series, std::span<const double> x, std::span<const double> y,
                              const DecimationRange& range, YDomain domain) {
  const std::size_t n = std::min(x.size(), y.size());
  // NaN never equals itself: a stand-in keeps a NaN at the end from defeating the cache.
  const auto finite = [](double v) { return std::isnan(v) ? 1e308 : v; };
  const DecimationKey key{
      x.data(),   y.data(),      n,     n ? x[n - 1] : 0.0, n ? finite(y[n - 1]) : 0.0, range.xMin,
      range.xMax, range.columns, domain};
  auto it = m_decimated.find(series);
  if (it != m_decimated.end() && *it == key) return false;
  ChartView* view = m_view;
  for (ChartView* v : views())
    if (v->chart() == series->chart()) view = v;
  view->replacePoints(series, decimateMinMax(x, y, range, domain));
  m_decimated.insert(series, key);
  return true;
}

QImage ChartPanel::markerImage(const QColor& fill, const QColor& border, int size, Marker shape) {
  QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);
  QPainter p(&image);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QPen(border, 1.2));
  p.setBrush(fill);
  const QRectF r(0.8, 0.8, size - 1.6, size - 1.6);
  if (shape == Marker::Circle) {
    p.drawEllipse(r);
  } else {
    p.drawPolygon(QPolygonF({QPointF(r.center().x(), r.top()), r.bottomRight(), r.bottomLeft()}));
  }
  return image;
}

QLineSeries* ChartPanel::addRawLine(const RunData* run, int index, const QString& value, float alpha,
                                    Qt::PenStyle style) {
  QColor faint = runColor(run, index);
  faint.setAlphaF(alpha);
  auto* raw = new QLineSeries;
  raw->setName(run->name + tr(" (raw)"));
  tagSeries(raw, run, value);
  raw->setProperty("ampAside", tr("raw"));  // beside the smoothed value in the readout
  m_view->addSeries(raw);
  raw->setPen(pen(faint, 1.0, style));  // noisy lines: 1 px strokes on Qt's fast path
  m_view->setLegendEntryVisible(raw, false);
  return raw;
}

void ChartPanel::tagSeries(QAbstractSeries* series, const RunData* run, const QString& value, bool hover) {
  tagSeries(series, run->name, value, hover);
  series->setProperty("ampRunId", run->id);
}

void ChartPanel::tagSeries(QAbstractSeries* series, const QString& run, const QString& value, bool hover) {
  series->setProperty("ampRun", run);
  series->setProperty("ampValue", value);
  series->setProperty("ampNoHover", !hover);
}

const RunData* ChartPanel::visibleRunOrNewestWithHistograms(int id) const {
  const QVector<const RunData*> runs = visibleRuns();
  for (const RunData* r : runs)
    if (r->id == id) return r;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it)
    if (!(*it)->histograms.empty()) return *it;
  return runs.isEmpty() ? nullptr : runs.last();
}

}  // namespace amp::ui
