#include "ui/charts/fp8_heat_map.h"
#include "ui/charts/painted_canvas.h"

#include <QCheckBox>
#include <QComboBox>
#include <QContextMenuEvent>
#include <QMenu>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSignalBlocker>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "engine/amp/fp8_context.h"

#include "ui/charts/chart_export.h"
#include "ui/charts/fp8_series.h"
#include "ui/charts/heat_map_item.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {

QString share(double f) {
  if (!std::isfinite(f)) return QStringLiteral("–");
  const double p = 100 * f;
  if (p == 0 || p == 100) return QStringLiteral("%1%").arg(p, 0, 'f', 0);
  return QStringLiteral("%1%").arg(p, 0, 'f', p < 1 ? 3 : 1);
}

QString decibels(double db) {
  if (std::isinf(db) && db > 0) return QObject::tr("exact (∞ dB)");
  if (!std::isfinite(db)) return QStringLiteral("–");
  return QStringLiteral("%1 dB").arg(db, 0, 'f', 1);
}

// The top of the colour bar for shares: the smallest of 0.1%, 0.2%, 0.5%, 1% ... 100% that holds
// the largest share, so that a map of small losses still shows them (the bar says the range).
double niceShareCeiling(double largest) {
  for (double decade = 1e-3; decade < 1; decade *= 10)
    for (double m : {1.0, 2.0, 5.0})
      if (largest <= m * decade * (1 + 1e-12)) return m * decade;
  return 1;
}

const QColor kAllZeroColour(0x9a, 0x9a, 0x9a);

int roleOf(const QString& tensor) {
  return tensor.endsWith(QLatin1String(".x")) ? 1 : tensor.endsWith(QLatin1String(".w")) ? 2
         : tensor.endsWith(QLatin1String(".dy")) ? 3 : 0;
}

}  // namespace

Fp8HeatMapPanel::Fp8HeatMapPanel(QWidget* parent) : ChartPanel(QStringLiteral("fp8-heat"), parent) {
  m_view->hide();  // the map paints itself; the view only carries the theme's colours
  m_runBox = new QComboBox(this);
  m_runBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_metricBox = new QComboBox(this);
  m_metricBox->addItem(tr("underflow: share flushed to zero"), int(Metric::Underflow));
  m_metricBox->addItem(tr("overflow: share clipped"), int(Metric::Overflow));
  m_metricBox->addItem(tr("SQNR (dB)"), int(Metric::Sqnr));
  m_rowsBox = new QComboBox(this);
  m_rowsBox->addItem(tr("x, w, dy"), int(Rows::All));
  m_rowsBox->addItem(tr("inputs x"), int(Rows::Inputs));
  m_rowsBox->addItem(tr("weights w"), int(Rows::Weights));
  m_rowsBox->addItem(tr("gradients dy"), int(Rows::Gradients));
  m_whatIfBox = new QCheckBox(tr("what-if recipe"), this);
  m_whatIfBox->setToolTip(tr("The same figures for the run's fp8.what_if recipe, measured on the same "
                             "tensors without training with it"));
  m_map = new PaintedCanvas(this, {[this](QPainter* p, const QRectF& r) { paintMap(p, r, false); },
                                    [this](const QPointF& pos, const QPoint& global) { hoverAt(pos, global); },
                                    [this] { m_hoverText.clear(); },
                                    {}});
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 0, 6, 0);
  controls->addWidget(new QLabel(tr("Run"), this));
  controls->addWidget(m_runBox);
  controls->addWidget(m_metricBox);
  controls->addWidget(m_rowsBox);
  controls->addWidget(m_whatIfBox);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 2, 0, 2);
  layout->setSpacing(2);
  layout->addLayout(controls);
  layout->addWidget(m_map, 1);
  connect(m_runBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSelectedRun(m_runBox->itemData(i).toInt()); });
  connect(m_metricBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setMetric(Metric(m_metricBox->itemData(i).toInt())); });
  connect(m_rowsBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setRows(Rows(m_rowsBox->itemData(i).toInt())); });
  connect(m_whatIfBox, &QCheckBox::toggled, this, &Fp8HeatMapPanel::setWhatIf);
}

QWidget* Fp8HeatMapPanel::mapWidget() const { return m_map; }

void Fp8HeatMapPanel::setSelectedRun(int runId) {
  if (runId == m_selectedId) return;
  m_selectedId = runId;
  const QSignalBlocker block(m_runBox);
  m_runBox->setCurrentIndex(m_runBox->findData(runId));
  m_builtRun = nullptr;
  refreshNow();
}

void Fp8HeatMapPanel::setMetric(Metric metric) {
  m_metric = metric;
  const QSignalBlocker block(m_metricBox);
  m_metricBox->setCurrentIndex(m_metricBox->findData(int(metric)));
  rebuildImage();
  m_map->update();
}

void Fp8HeatMapPanel::setRows(Rows rows) {
  m_rows = rows;
  const QSignalBlocker block(m_rowsBox);
  m_rowsBox->setCurrentIndex(m_rowsBox->findData(int(rows)));
  rebuildImage();
  m_map->update();
}

void Fp8HeatMapPanel::setWhatIf(bool on) {
  m_whatIf = on;
  const QSignalBlocker block(m_whatIfBox);
  m_whatIfBox->setChecked(on);
  rebuildImage();
  m_map->update();
}

bool Fp8HeatMapPanel::hasWhatIf() const {
  for (const auto& row : m_cells)
    for (const Cell& c : row)
      if (c.hasWhatIf) return true;
  return false;
}

const RunData* Fp8HeatMapPanel::selected() const {
  const QVector<const RunData*> shown = visibleRuns();
  for (const RunData* r : shown)
    if (r->id == m_selectedId) return r;
  for (auto it = shown.rbegin(); it != shown.rend(); ++it)
    if (hasFp8Records(**it)) return *it;
  return nullptr;
}

QString Fp8HeatMapPanel::runName() const { return m_builtRun ? m_builtRun->name : QString(); }

void Fp8HeatMapPanel::rebuildSeries() {
  const QSignalBlocker block(m_runBox);
  m_runBox->clear();
  for (const RunData* r : visibleRuns())
    if (hasFp8Records(*r) || r->config.mode == PrecisionMode::Fp8) m_runBox->addItem(r->name, r->id);
  const RunData* sel = selected();
  m_runBox->setCurrentIndex(sel ? m_runBox->findData(sel->id) : -1);
  m_builtRun = nullptr;
}

void Fp8HeatMapPanel::updateSeries() {
  const RunData* run = selected();
  if (run != m_builtRun) {
    m_builtRun = run;
    rebuild();
  } else if (run && run->steps.size() != m_builtSteps) {
    appendNewSteps();
  } else {
    return;
  }
  m_whatIfBox->setVisible(hasWhatIf());
  rebuildImage();
  m_map->update();
}

void Fp8HeatMapPanel::rebuild() {
  m_tensors.clear();
  m_tensorKeys.clear();
  m_formats.clear();
  m_steps.clear();
  m_cells.clear();
  m_builtSteps = 0;
  if (!m_builtRun) return;
  m_tensors = fp8TensorsInModelOrder(*m_builtRun);
  for (const QString& t : m_tensors) m_tensorKeys.push_back(t.toStdString());
  m_cells.resize(m_tensors.size());
  appendNewSteps();
}

void Fp8HeatMapPanel::appendNewSteps() {
  const RunData& run = *m_builtRun;
  if (m_tensors.isEmpty() && hasFp8Records(run)) {  // the first records arrived: name the rows
    m_builtRun = &run;
    m_tensors = fp8TensorsInModelOrder(run);
    m_tensorKeys.clear();
    for (const QString& t : m_tensors) m_tensorKeys.push_back(t.toStdString());
    m_cells = QVector<QVector<Cell>>(m_tensors.size());
  }
  for (std::size_t i = m_builtSteps; i < run.steps.size(); ++i) {
    const StepMetrics& m = run.steps[i];
    if (m.fp8.empty()) continue;
    m_steps << double(m.step);
    for (auto& row : m_cells) row.append(Cell{});
    for (const Fp8TensorRecord& r : m.fp8) {
      const auto it = std::find(m_tensorKeys.begin(), m_tensorKeys.end(), r.tensor);
      if (it == m_tensorKeys.end()) continue;
      const int row = int(it - m_tensorKeys.begin());
      Cell& c = m_cells[row].last();
      c.has = true;
      c.allZero = r.amax == 0;
      c.underflow = float(r.underflow);
      c.overflow = float(r.overflow);
      c.sqnr = float(r.sqnrDb);
      c.hasWhatIf = r.hasWhatIf;
      c.wUnderflow = float(r.whatIfUnderflow);
      c.wOverflow = float(r.whatIfOverflow);
      c.wSqnr = float(r.whatIfSqnrDb);
      if (!m_formats.contains(m_tensors[row])) m_formats.insert(m_tensors[row], QString::fromStdString(r.format));
    }
  }
  m_builtSteps = run.steps.size();
}

double Fp8HeatMapPanel::valueOf(const Cell& c) const {
  if (!c.has) return qQNaN();
  const bool w = m_whatIf && c.hasWhatIf;
  switch (m_metric) {
    case Metric::Underflow: return w ? c.wUnderflow : c.underflow;
    case Metric::Overflow: return w ? c.wOverflow : c.overflow;
    case Metric::Sqnr: return w ? c.wSqnr : c.sqnr;
  }
  return qQNaN();
}

QList<int> Fp8HeatMapPanel::shownRows() const {
  QList<int> out;
  for (int i = 0; i < m_tensors.size(); ++i) {
    const int role = roleOf(m_tensors[i]);
    if (m_rows == Rows::All || (m_rows == Rows::Inputs && role == 1) || (m_rows == Rows::Weights && role == 2) ||
        (m_rows == Rows::Gradients && role == 3))
      out << i;
  }
  return out;
}

QStringList Fp8HeatMapPanel::rowNames() const {
  QStringList out;
  for (int i : shownRows()) out << m_tensors[i];
  return out;
}

double Fp8HeatMapPanel::cellValue(int row, int column) const {
  const QList<int> rows = shownRows();
  if (row < 0 || row >= rows.size() || column < 0 || column >= m_steps.size()) return qQNaN();
  return valueOf(m_cells[rows[row]][column]);
}

void Fp8HeatMapPanel::rebuildImage() {
  const QList<int> rows = shownRows();
  const int columns = int(m_steps.size());
  // The colour bar's range: shares from 0 to a round ceiling of the largest; SQNR over the
  // finite values shown (an exact cell, +inf dB, takes the top colour).
  double lo = qInf(), hi = -qInf();
  for (int r : rows)
    for (const Cell& c : m_cells[r]) {
      const double v = valueOf(c);
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (m_metric == Metric::Sqnr) {
    if (!std::isfinite(lo)) lo = 0, hi = 1;
    if (hi - lo < 1) hi = lo + 1;
    m_colourMin = std::floor(lo);
    m_colourMax = std::ceil(hi);
  } else {
    m_colourMin = 0;
    m_colourMax = niceShareCeiling(std::isfinite(hi) ? hi : 0);
  }
  m_image = QImage(std::max(1, columns), std::max(1, int(rows.size())), QImage::Format_ARGB32);
  m_image.fill(Qt::transparent);
  m_anyAllZero = false;
  for (int y = 0; y < rows.size(); ++y)
    for (int x = 0; x < columns; ++x) {
      const Cell& cell = m_cells[rows[y]][x];
      if (cell.has && cell.allZero) {  // nothing to flush or clip: grey, not "0% lost"
        m_image.setPixelColor(x, y, kAllZeroColour);
        m_anyAllZero = true;
        continue;
      }
      const double v = valueOf(cell);
      if (std::isnan(v)) continue;
      const double t = std::isinf(v) ? (v > 0 ? 1.0 : 0.0) : (v - m_colourMin) / (m_colourMax - m_colourMin);
      m_image.setPixelColor(x, y, heatColor(t));
    }
}

QString Fp8HeatMapPanel::cellText(int row, int column) const {
  const QList<int> rows = shownRows();
  if (row < 0 || row >= rows.size() || column < 0 || column >= m_steps.size()) return {};
  const Cell& c = m_cells[rows[row]][column];
  const QString tensor = m_tensors[rows[row]];
  if (!c.has) return tr("<b>%1</b> · step %2<br>not quantised this step").arg(tensor).arg(qint64(m_steps[column]));
  if (c.allZero)
    return tr("<b>%1</b> (%2) · step %3<br>all values zero before quantising: nothing reached it")
        .arg(tensor, fp8FormatLabel(m_formats.value(tensor)))
        .arg(qint64(m_steps[column]));
  QString text = tr("<b>%1</b> (%2) · step %3<br>flushed to zero %4 · clipped %5<br>SQNR %6")
                     .arg(tensor, fp8FormatLabel(m_formats.value(tensor)))
                     .arg(qint64(m_steps[column]))
                     .arg(share(c.underflow), share(c.overflow), decibels(c.sqnr));
  if (c.hasWhatIf)
    text += tr("<br>what-if %1: flushed %2 · clipped %3 · SQNR %4")
                .arg(m_builtRun ? QString::fromStdString(m_builtRun->config.fp8.whatIf) : QString(),
                     share(c.wUnderflow), share(c.wOverflow), decibels(c.wSqnr));
  return text;
}

// The map's layout inside `target`: a header line (exports), row labels on the left, the colour
// bar on the right, step ticks below.
QRectF Fp8HeatMapPanel::cellsRect(const QRectF& target, bool header) const {
  QFont font;
  font.setPointSizeF(8 * m_view->presentationScale());
  const QFontMetricsF fm(font);
  double labelW = 0;
  for (const QString& r : rowNames()) labelW = std::max(labelW, fm.horizontalAdvance(r));
  labelW = std::min(labelW + 8, target.width() * 0.35);
  const double top = (header ? 2 : 1) * (fm.height() + 4);
  const double barW = fm.horizontalAdvance(QStringLiteral("100.0%")) + 24;
  return QRectF(target.left() + labelW, target.top() + top, std::max(10.0, target.width() - labelW - barW - 8),
                std::max(10.0, target.height() - top - 2 * fm.height() - 8));
}

QPoint Fp8HeatMapPanel::cellAt(const QPointF& pos) const {
  const QRectF cells = cellsRect(QRectF(m_map->rect()), false);
  const int rows = int(shownRows().size()), columns = int(m_steps.size());
  if (!cells.contains(pos) || rows == 0 || columns == 0) return {-1, -1};
  const int column = std::min(columns - 1, int((pos.x() - cells.left()) / cells.width() * columns));
  const int row = std::min(rows - 1, int((pos.y() - cells.top()) / cells.height() * rows));
  return {column, row};
}

void Fp8HeatMapPanel::hoverAt(const QPointF& pos, const QPoint& globalPos) {
  const QPoint cell = cellAt(pos);
  m_hoverText = cell.x() < 0 ? QString() : cellText(cell.y(), cell.x());
  if (m_hoverText.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(globalPos, m_hoverText, m_map);
}

void Fp8HeatMapPanel::paintMap(QPainter* p, const QRectF& target, bool header) const {
  const ChartView* v = m_view;
  p->fillRect(target, v->backgroundColor());
  QFont font = p->font();
  font.setPointSizeF(8 * v->presentationScale());
  p->setFont(font);
  const QFontMetricsF fm(font);
  p->setPen(v->textColor());
  const QList<int> rows = shownRows();
  if (rows.isEmpty() || m_steps.isEmpty()) {
    p->drawText(target, Qt::AlignCenter,
                m_builtRun ? tr("no quantised tensors recorded for this run\n(amp.mode=fp8 records them every step)")
                           : tr("no fp8 runs to show"));
    return;
  }
  const QRectF cells = cellsRect(target, header);
  const QString metric = m_metric == Metric::Underflow ? tr("share of non-zero values flushed to zero")
                         : m_metric == Metric::Overflow ? tr("share of values clipped")
                                                        : tr("SQNR (dB)");
  const QString whose = m_whatIf && hasWhatIf()
                            ? tr("what if %1").arg(QString::fromStdString(m_builtRun->config.fp8.whatIf))
                            : QString::fromStdString(describeFp8Recipe(m_builtRun->config.fp8));
  QString title = m_rows == Rows::All ? tr("%1 per tensor (each layer's x, w, dy) and step · %2").arg(metric, whose)
                                      : tr("%1 per tensor and step · %2").arg(metric, whose);
  if (header) {
    QFont bold = font;
    bold.setPointSizeF(10 * v->presentationScale());
    bold.setBold(true);
    p->setFont(bold);
    p->drawText(QRectF(target.left() + 6, target.top(), target.width() - 12, fm.height() + 6),
                Qt::AlignLeft | Qt::AlignVCenter,
                tr("fp8 heat map · %1").arg(m_builtRun ? m_builtRun->name : QString()));
    p->setFont(font);
  }
  p->drawText(QRectF(target.left() + 6, cells.top() - fm.height() - 4, target.width() - 12, fm.height() + 2),
              Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(title, Qt::ElideRight, target.width() - 12));
  p->fillRect(cells, v->theme() == ChartView::Theme::Dark ? QColor(0x2a, 0x2c, 0x30) : QColor(0xf4, 0xf4, 0xf4));
  p->save();
  p->setRenderHint(QPainter::SmoothPixmapTransform, false);
  p->drawImage(cells, m_image);
  p->restore();
  // Row labels. Rows as tall as the text: each tensor's name. Thinner (a GPT's ~30 tensors at
  // 1024x640 x1.5 left every third row named, "…c_attn.x" then "…c_proj.w", which told no layer
  // from the next): one label per layer, centred on its rows (x, w, dy, as the title says), and
  // every k-th layer when even those are thinner than the text.
  const double rowH = cells.height() / rows.size();
  const double labelRight = cells.left() - target.left() - 6;
  m_drawnLabels.clear();
  const auto drawLabel = [&](double top, double height, const QString& text) {
    m_drawnLabels << text;
    p->drawText(QRectF(target.left() + 2, top + height / 2 - fm.height() / 2, labelRight, fm.height()),
                Qt::AlignRight | Qt::AlignVCenter, fm.elidedText(text, Qt::ElideLeft, labelRight));
  };
  if (rowH >= 0.9 * fm.height()) {
    for (int i = 0; i < rows.size(); ++i) drawLabel(cells.top() + i * rowH, rowH, m_tensors[rows[i]]);
  } else {
    const auto layerOf = [&](int i) {
      const QString& t = m_tensors[rows[i]];
      return t.left(t.lastIndexOf(QLatin1Char('.')));
    };
    QList<std::pair<int, int>> groups;  // [first, last] rows of each layer
    for (int i = 0; i < rows.size(); ++i)
      if (groups.isEmpty() || layerOf(i) != layerOf(groups.last().first))
        groups.append({i, i});
      else
        groups.last().second = i;
    const double groupH = cells.height() / groups.size();
    const int every = std::max(1, int(std::ceil(0.9 * fm.height() / groupH)));
    for (int g = 0; g < groups.size(); g += every) {
      const auto [first, last] = groups[g];
      const int n = last - first + 1;
      drawLabel(cells.top() + first * rowH, n * rowH, n > 1 ? layerOf(first) : m_tensors[rows[first]]);
    }
  }
  // Thin lines between layers.
  p->setPen(QPen(v->backgroundColor(), 1));
  for (int i = 1; i < rows.size(); ++i) {
    const QString a = m_tensors[rows[i - 1]], b = m_tensors[rows[i]];
    if (a.left(a.lastIndexOf(QLatin1Char('.'))) != b.left(b.lastIndexOf(QLatin1Char('.'))))
      p->drawLine(QPointF(cells.left(), cells.top() + i * rowH), QPointF(cells.right(), cells.top() + i * rowH));
  }
  // Step ticks: the first, the last and about four between.
  p->setPen(v->textColor());
  const int columns = int(m_steps.size());
  const double colW = cells.width() / columns;
  const int ticks = std::min(columns, 6);
  for (int k = 0; k < ticks; ++k) {
    const int c = ticks == 1 ? 0 : int(std::lround(double(k) * (columns - 1) / (ticks - 1)));
    const double x = cells.left() + (c + 0.5) * colW;
    p->drawLine(QPointF(x, cells.bottom()), QPointF(x, cells.bottom() + 3));
    p->drawText(QRectF(x - 40, cells.bottom() + 3, 80, fm.height()), Qt::AlignHCenter | Qt::AlignTop,
                QString::number(qint64(m_steps[c])));
  }
  p->drawText(QRectF(cells.left(), cells.bottom() + 3 + fm.height(), cells.width(), fm.height()), Qt::AlignHCenter,
              tr("step"));
  // The colour bar: bottom = colourMin, top = colourMax.
  const QRectF bar(cells.right() + 6, cells.top(), 10, cells.height());
  p->fillRect(bar, heatGradient(bar.bottomLeft(), bar.topLeft()));
  const auto label = [&](double value) {
    return m_metric == Metric::Sqnr ? QStringLiteral("%1 dB").arg(value, 0, 'f', 0) : share(value);
  };
  p->drawText(QRectF(bar.right() + 3, bar.top(), target.right() - bar.right() - 3, fm.height()),
              Qt::AlignLeft | Qt::AlignTop, label(m_colourMax));
  p->drawText(QRectF(bar.right() + 3, bar.bottom() - fm.height(), target.right() - bar.right() - 3, fm.height()),
              Qt::AlignLeft | Qt::AlignBottom, label(m_colourMin));
  if (m_anyAllZero) {  // grey cells: the tensor was all zero (a gradient nothing reached)
    const QRectF swatch(bar.left(), cells.bottom() + fm.height() + 6, 10, fm.height() - 2);
    p->fillRect(swatch, kAllZeroColour);
    p->drawText(QRectF(swatch.right() + 3, swatch.top() - 1, target.right() - swatch.right() - 3, fm.height()),
                Qt::AlignLeft | Qt::AlignVCenter, tr("all 0"));
  }
}

void Fp8HeatMapPanel::render(QPainter* painter, const QRectF& target) {
  refreshNow();
  painter->save();
  painter->setClipRect(target);
  paintMap(painter, target, true);
  painter->restore();
}

}  // namespace amp::ui
