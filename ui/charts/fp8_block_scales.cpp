#include "ui/charts/fp8_block_scales.h"
#include "ui/charts/painted_canvas.h"

#include <QComboBox>
#include <QContextMenuEvent>
#include <QFileDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QMessageBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSignalBlocker>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "engine/io/fp8_json.h"
#include "engine/io/run_record.h"
#include "ui/charts/chart_export.h"
#include "ui/charts/fp8_series.h"
#include "ui/charts/heat_map_item.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {

const QColor kZeroColour(0x9a, 0x9a, 0x9a);  // an all-zero block: no magnitude to colour

const Fp8TensorRecord* recordOf(const StepMetrics& m, const std::string& tensor) {
  for (const Fp8TensorRecord& r : m.fp8)
    if (r.tensor == tensor && !r.blockGrid.empty()) return &r;
  return nullptr;
}

bool hasGrids(const RunData& run) {
  for (const StepMetrics& m : run.steps)
    for (const Fp8TensorRecord& r : m.fp8)
      if (!r.blockGrid.empty()) return true;
  return false;
}

QString power(double e) {
  if (std::isnan(e)) return QStringLiteral("NaN");
  if (std::isinf(e)) return e < 0 ? QStringLiteral("0") : QStringLiteral("∞");
  const bool whole = std::abs(e - std::round(e)) < 1e-9;
  return QStringLiteral("2^%1").arg(whole ? QString::number(qint64(std::lround(e))) : QString::number(e, 'f', 2));
}

// A range "64–95", or "64" for one.
QString span(std::int64_t first, std::int64_t last) {
  return first == last ? QString::number(first) : QStringLiteral("%1–%2").arg(first).arg(last);
}

}  // namespace

Fp8BlockScalesPanel::Fp8BlockScalesPanel(QWidget* parent) : ChartPanel(QStringLiteral("fp8-blocks"), parent) {
  m_view->hide();  // the maps paint themselves; the view only carries the theme's colours
  m_runBox = new QComboBox(this);
  m_runBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_tensorBox = new QComboBox(this);
  m_tensorBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_tensorBox->setToolTip(tr("A quantised tensor of a block recipe (MXFP8, blockwise, NVFP4)"));
  m_stepBox = new QComboBox(this);
  m_stepBox->setToolTip(tr("A histogram step (train.histogram_every): the steps that record the block grid"));
  // Besides the chart views' export entries, the grid itself as data.
  const auto saveGridActions = [this](QMenu& menu) {
    for (const char* suffix : {"csv", "json"}) {
      QAction* a = menu.addAction(tr("Save the grid as %1…").arg(QString::fromLatin1(suffix).toUpper()), this, [this, suffix] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Save the block grid"), QStringLiteral("fp8-blocks-%1.%2").arg(m_tensor, QLatin1String(suffix)));
        QString error;
        if (!path.isEmpty() && !saveGrid(path, &error))
          QMessageBox::warning(this, tr("Save the block grid"), tr("The grid was not saved: %1").arg(error));
      });
      a->setEnabled(grid() != nullptr);
    }
  };
  m_canvas = new PaintedCanvas(this, {[this](QPainter* p, const QRectF& r) { paintPanel(p, r, false); },
                                      [this](const QPointF& pos, const QPoint& global) { hoverAt(pos, global); },
                                      [this] { m_hoverText.clear(); }, saveGridActions});
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 0, 6, 0);
  controls->addWidget(new QLabel(tr("Run"), this));
  controls->addWidget(m_runBox);
  controls->addWidget(m_tensorBox);
  controls->addWidget(new QLabel(tr("step"), this));
  controls->addWidget(m_stepBox);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 2, 0, 2);
  layout->setSpacing(2);
  layout->addLayout(controls);
  layout->addWidget(m_canvas, 1);
  connect(m_runBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSelectedRun(m_runBox->itemData(i).toInt()); });
  connect(m_tensorBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSelectedTensor(m_tensorBox->itemText(i)); });
  connect(m_stepBox, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0) setSelectedStep(m_stepBox->itemData(i).toLongLong());
  });
}

QWidget* Fp8BlockScalesPanel::mapWidget() const { return m_canvas; }

QString Fp8BlockScalesPanel::runName() const { return m_builtRun ? m_builtRun->name : QString(); }

void Fp8BlockScalesPanel::setSelectedRun(int runId) {
  if (runId == m_selectedId) return;
  m_selectedId = runId;
  m_builtRun = nullptr;
  refreshNow();
}

void Fp8BlockScalesPanel::setSelectedTensor(const QString& tensor) {
  if (tensor == m_tensor) return;
  m_tensor = tensor;
  m_builtRun = nullptr;  // the steps with a grid differ per tensor
  refreshNow();
}

void Fp8BlockScalesPanel::setSelectedStep(long long step) {
  m_stepChosen = true;
  if (step == m_step) return;
  m_step = step;
  pickGrid();
  rebuildImages();
  m_canvas->update();
}

const RunData* Fp8BlockScalesPanel::selected() const {
  const QVector<const RunData*> shown = visibleRuns();
  for (const RunData* r : shown)
    if (r->id == m_selectedId && hasGrids(*r)) return r;
  for (auto it = shown.rbegin(); it != shown.rend(); ++it)
    if (hasGrids(**it)) return *it;
  return nullptr;
}

void Fp8BlockScalesPanel::rebuildSeries() {
  m_builtRun = nullptr;  // the runs changed: lists again
}

void Fp8BlockScalesPanel::updateSeries() {
  const RunData* run = selected();
  if (run == m_builtRun && (!run || run->steps.size() == m_builtSteps)) return;
  m_builtRun = run;
  refill();
}

void Fp8BlockScalesPanel::refill() {
  const RunData* run = m_builtRun;
  m_builtSteps = run ? run->steps.size() : 0;
  {
    const QSignalBlocker block(m_runBox);
    m_runBox->clear();
    for (const RunData* r : visibleRuns())
      if (hasGrids(*r)) m_runBox->addItem(r->name, r->id);
    m_runBox->setCurrentIndex(run ? m_runBox->findData(run->id) : -1);
  }
  m_tensorList.clear();
  m_stepList.clear();
  if (run) {
    for (const QString& t : fp8TensorsInModelOrder(*run)) {
      const std::string key = t.toStdString();
      for (const StepMetrics& m : run->steps)
        if (recordOf(m, key)) {
          m_tensorList << t;
          break;
        }
    }
    const Fp8Spike spike = fp8Spike(run->config.fp8);
    if (!m_tensorList.contains(m_tensor))
      m_tensor = m_tensorList.contains(spike.tensor) ? spike.tensor : m_tensorList.value(0);
    const std::string key = m_tensor.toStdString();
    for (const StepMetrics& m : run->steps)
      if (recordOf(m, key)) m_stepList << m.step;
    if (!m_stepChosen || !m_stepList.contains(m_step))
      m_step = m_stepList.contains(spike.step) && spike.tensor == m_tensor ? spike.step
                                                                           : (m_stepList.isEmpty() ? -1 : m_stepList.last());
  }
  {
    const QSignalBlocker block(m_tensorBox);
    m_tensorBox->clear();
    m_tensorBox->addItems(m_tensorList);
    m_tensorBox->setCurrentIndex(m_tensorBox->findText(m_tensor));
  }
  {
    const QSignalBlocker block(m_stepBox);
    m_stepBox->clear();
    for (long long s : m_stepList) m_stepBox->addItem(QString::number(s), s);
    m_stepBox->setCurrentIndex(m_stepBox->findData(m_step));
  }
  pickGrid();
  rebuildImages();
  m_canvas->update();
}

void Fp8BlockScalesPanel::pickGrid() {
  m_grid = {};
  m_format.clear();
  if (!m_builtRun) return;
  const std::string key = m_tensor.toStdString();
  for (const StepMetrics& m : m_builtRun->steps)
    if (m.step == m_step)
      if (const Fp8TensorRecord* r = recordOf(m, key)) {
        m_grid = r->blockGrid;
        m_format = QString::fromStdString(r->format);
      }
}

double Fp8BlockScalesPanel::cellValue(Map map, int row, int column) const {
  if (m_grid.empty() || row < 0 || row >= m_grid.rows || column < 0 || column >= m_grid.cols) return qQNaN();
  const std::size_t k = std::size_t(row) * std::size_t(m_grid.cols) + std::size_t(column);
  return map == Map::Scale ? m_grid.scaleLog2[k] : m_grid.amaxLog2[k];
}

std::pair<double, double> Fp8BlockScalesPanel::colourRange(Map map) const {
  return map == Map::Scale ? std::pair{m_scaleMin, m_scaleMax} : std::pair{m_amaxMin, m_amaxMax};
}

void Fp8BlockScalesPanel::rebuildImages() {
  m_anyZero = false;
  if (m_grid.empty()) {
    m_scaleImage = m_amaxImage = QImage();
    return;
  }
  // Each map's colours over its own finite values, to whole binades (a map of one binade still
  // gets a bar one binade tall).
  const auto range = [](const std::vector<float>& v, double& lo, double& hi) {
    lo = qInf(), hi = -qInf();
    for (float x : v)
      if (std::isfinite(x)) lo = std::min(lo, double(x)), hi = std::max(hi, double(x));
    if (!std::isfinite(lo)) lo = 0, hi = 1;
    lo = std::floor(lo);
    hi = std::max(std::ceil(hi), lo + 1);
  };
  range(m_grid.scaleLog2, m_scaleMin, m_scaleMax);
  range(m_grid.amaxLog2, m_amaxMin, m_amaxMax);
  const auto paint = [&](const std::vector<float>& v, double lo, double hi) {
    QImage image(m_grid.cols, m_grid.rows, QImage::Format_ARGB32);
    image.fill(Qt::transparent);
    for (int i = 0; i < m_grid.rows; ++i)
      for (int j = 0; j < m_grid.cols; ++j) {
        const float x = v[std::size_t(i) * std::size_t(m_grid.cols) + std::size_t(j)];
        if (std::isinf(x) && x < 0) {  // an all-zero block (NVFP4's zero scale too)
          image.setPixelColor(j, i, kZeroColour);
          m_anyZero = true;
        } else if (std::isfinite(x)) {
          image.setPixelColor(j, i, heatColor((x - lo) / (hi - lo)));
        }
      }
    return image;
  };
  m_scaleImage = paint(m_grid.scaleLog2, m_scaleMin, m_scaleMax);
  m_amaxImage = paint(m_grid.amaxLog2, m_amaxMin, m_amaxMax);
}

QString Fp8BlockScalesPanel::scaleTitle() const {
  if (m_grid.scaleFormat == "e8m0") return tr("block scale: E8M0 exponent e (values ÷ 2^e)");
  if (m_grid.scaleFormat == "e4m3") return tr("block scale: log2 of the E4M3 scale");
  return tr("block scale: log2 of the fp32 scale s (values × s)");
}

QString Fp8BlockScalesPanel::cellText(int row, int column) const {
  if (m_grid.empty() || row < 0 || row >= m_grid.rows || column < 0 || column >= m_grid.cols) return {};
  const std::int64_t r0 = std::int64_t(row) * m_grid.cellRows * m_grid.blockRows;
  const std::int64_t c0 = std::int64_t(column) * m_grid.cellCols * m_grid.blockCols;
  const std::int64_t r1 = std::min(m_grid.tensorRows, r0 + std::int64_t(m_grid.cellRows) * m_grid.blockRows) - 1;
  const std::int64_t c1 = std::min(m_grid.tensorCols, c0 + std::int64_t(m_grid.cellCols) * m_grid.blockCols) - 1;
  const double e = cellValue(Map::Scale, row, column), a = cellValue(Map::Amax, row, column);
  QString text = tr("<b>%1</b> (%2) · step %3<br>block row %4, column %5: tensor rows %6, columns %7")
                     .arg(m_tensor, fp8FormatLabel(m_format))
                     .arg(m_step)
                     .arg(row)
                     .arg(column)
                     .arg(span(r0, r1), span(c0, c1));
  if (m_grid.cellRows * m_grid.cellCols > 1)
    text += tr("<br>(a cell of %1 x %2 blocks, shown by its block of largest amax)").arg(m_grid.cellRows).arg(m_grid.cellCols);
  QString scale;
  if (m_grid.scaleFormat == "e8m0")
    scale = std::isnan(e) ? tr("NaN (a NaN in the block)") : tr("%1 (E8M0 exponent %2: values ÷ %1)").arg(power(e)).arg(e, 0, 'f', 0);
  else
    scale = tr("%1 = %2 (%3)").arg(power(e)).arg(std::exp2(e), 0, 'g', 4).arg(m_grid.scaleFormat == "e4m3" ? tr("E4M3") : tr("fp32, values × s"));
  text += tr("<br>scale %1<br>amax %2").arg(scale, std::isinf(a) ? tr("0 (all values zero)")
                                                                   : tr("%1 (%2)").arg(std::exp2(a), 0, 'g', 4).arg(power(a)));
  return text;
}

// Two maps side by side, each with its title above, tensor-row ticks on its left, its colour
// bar on its right and tensor-column ticks below.
Fp8BlockScalesPanel::Layout Fp8BlockScalesPanel::layoutIn(const QRectF& target, bool header) const {
  QFont font;
  font.setPointSizeF(8 * m_view->presentationScale());
  const QFontMetricsF fm(font);
  const double top = target.top() + (header ? 2 : 1) * (fm.height() + 4);
  const double bottom = target.bottom() - 2 * fm.height() - 6;
  const double tickW = fm.horizontalAdvance(QString::number(std::max<std::int64_t>(m_grid.tensorRows, 10))) + 8;
  const double barW = 10 + 4 + fm.horizontalAdvance(QStringLiteral("2^-127"));
  const double gap = 10;
  const double half = (target.width() - gap) / 2;
  Layout l;
  for (int k = 0; k < 2; ++k) {
    const double left = target.left() + k * (half + gap);
    const QRectF cells(left + tickW, top, std::max(10.0, half - tickW - barW - 6), std::max(10.0, bottom - top));
    const QRectF bar(cells.right() + 6, cells.top(), 10, cells.height());
    (k == 0 ? l.scale : l.amax) = cells;
    (k == 0 ? l.scaleBar : l.amaxBar) = bar;
  }
  return l;
}

QPoint Fp8BlockScalesPanel::cellAt(Map map, const QPointF& pos) const {
  if (m_grid.empty()) return {-1, -1};
  const Layout l = layoutIn(QRectF(m_canvas->rect()), false);
  const QRectF cells = map == Map::Scale ? l.scale : l.amax;
  if (!cells.contains(pos)) return {-1, -1};
  const int column = std::min(m_grid.cols - 1, int((pos.x() - cells.left()) / cells.width() * m_grid.cols));
  const int row = std::min(m_grid.rows - 1, int((pos.y() - cells.top()) / cells.height() * m_grid.rows));
  return {column, row};
}

void Fp8BlockScalesPanel::hoverAt(const QPointF& pos, const QPoint& globalPos) {
  QPoint cell = cellAt(Map::Scale, pos);
  if (cell.x() < 0) cell = cellAt(Map::Amax, pos);
  m_hoverText = cell.x() < 0 ? QString() : cellText(cell.y(), cell.x());
  if (m_hoverText.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(globalPos, m_hoverText, m_canvas);
}

void Fp8BlockScalesPanel::paintMap(QPainter* p, Map map, const QRectF& cells, const QRectF& bar, const QRectF& area) const {
  const ChartView* v = m_view;
  const QFontMetricsF fm(p->font());
  const QString title = map == Map::Scale ? scaleTitle() : tr("block amax: log2 of the largest |value|");
  p->setPen(v->textColor());
  p->drawText(QRectF(cells.left() - 30, cells.top() - fm.height() - 3, area.right() - cells.left() + 30, fm.height() + 2),
              Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(title, Qt::ElideRight, area.right() - cells.left() + 30));
  p->fillRect(cells, v->theme() == ChartView::Theme::Dark ? QColor(0x2a, 0x2c, 0x30) : QColor(0xf4, 0xf4, 0xf4));
  p->save();
  p->setRenderHint(QPainter::SmoothPixmapTransform, false);
  p->drawImage(cells, image(map));
  p->restore();
  // Ticks: tensor rows on the left, tensor columns below, at cell starts (up to five each).
  const auto ticks = [](int n) {
    QVector<int> out;
    const int k = std::min(n, 5);
    for (int i = 0; i < k; ++i) out << (k == 1 ? 0 : int(std::lround(double(i) * (n - 1) / (k - 1))));
    return out;
  };
  const double rowH = cells.height() / m_grid.rows, colW = cells.width() / m_grid.cols;
  const std::int64_t rowStep = std::int64_t(m_grid.cellRows) * m_grid.blockRows;
  const std::int64_t colStep = std::int64_t(m_grid.cellCols) * m_grid.blockCols;
  double lastBottom = -1e9;
  for (int i : ticks(m_grid.rows)) {
    const double y = cells.top() + (i + 0.5) * rowH;
    if (y - fm.height() / 2 < lastBottom) continue;  // no overprinted ticks on a short map
    lastBottom = y + fm.height() / 2;
    p->drawText(QRectF(area.left(), y - fm.height() / 2, cells.left() - area.left() - 4, fm.height()),
                Qt::AlignRight | Qt::AlignVCenter, QString::number(i * rowStep));
  }
  double lastRight = -1e9;
  for (int j : ticks(m_grid.cols)) {
    const double x = cells.left() + (j + 0.5) * colW;
    const QString label = QString::number(j * colStep);
    const double w = fm.horizontalAdvance(label);
    if (x - w / 2 < lastRight + 4) continue;  // no overprinted ticks on a narrow map
    lastRight = x + w / 2;
    p->drawLine(QPointF(x, cells.bottom()), QPointF(x, cells.bottom() + 3));
    p->drawText(QRectF(x - w / 2 - 2, cells.bottom() + 3, w + 4, fm.height()), Qt::AlignHCenter | Qt::AlignTop, label);
  }
  const QString axis = tr("tensor column · cell %1 x %2 values")
                           .arg(rowStep)
                           .arg(colStep);
  p->drawText(QRectF(cells.left(), cells.bottom() + 3 + fm.height(), cells.width(), fm.height()), Qt::AlignHCenter,
              fm.elidedText(axis, Qt::ElideRight, cells.width()));
  // The colour bar: bottom = the smallest binade, top = the largest.
  p->fillRect(bar, heatGradient(bar.bottomLeft(), bar.topLeft()));
  const auto [lo, hi] = colourRange(map);
  const double labelW = area.right() - bar.right() - 3;
  p->drawText(QRectF(bar.right() + 3, bar.top(), labelW, fm.height()), Qt::AlignLeft | Qt::AlignTop, power(hi));
  p->drawText(QRectF(bar.right() + 3, bar.bottom() - fm.height(), labelW, fm.height()), Qt::AlignLeft | Qt::AlignBottom,
              power(lo));
  if (map == Map::Amax && m_anyZero) {
    const QRectF swatch(bar.left(), cells.bottom() + fm.height() + 6, 10, fm.height() - 2);
    p->fillRect(swatch, kZeroColour);
    p->drawText(QRectF(swatch.right() + 3, swatch.top() - 1, labelW, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                tr("all 0"));
  }
}

void Fp8BlockScalesPanel::paintPanel(QPainter* p, const QRectF& target, bool header) const {
  const ChartView* v = m_view;
  p->fillRect(target, v->backgroundColor());
  QFont font = p->font();
  font.setPointSizeF(8 * v->presentationScale());
  p->setFont(font);
  const QFontMetricsF fm(font);
  p->setPen(v->textColor());
  if (m_grid.empty()) {
    p->drawText(target, Qt::AlignCenter,
                tr("no block scales recorded\n(amp.mode=fp8 with a block recipe, fp8.recipe=mxfp8 | blockwise | nvfp4,\n"
                   "records them on histogram steps, train.histogram_every)"));
    return;
  }
  const Layout l = layoutIn(target, header);
  if (header) {
    QFont bold = font;
    bold.setPointSizeF(10 * v->presentationScale());
    bold.setBold(true);
    p->setFont(bold);
    p->drawText(QRectF(target.left() + 6, target.top(), target.width() - 12, fm.height() + 6), Qt::AlignLeft | Qt::AlignVCenter,
                tr("fp8 block scales · %1 · %2 (%3) · step %4")
                    .arg(runName(), m_tensor, fp8FormatLabel(m_format))
                    .arg(m_step));
    p->setFont(font);
  }
  const double half = (target.width() - 10) / 2;
  paintMap(p, Map::Scale, l.scale, l.scaleBar, QRectF(target.left(), target.top(), half, target.height()));
  paintMap(p, Map::Amax, l.amax, l.amaxBar, QRectF(target.left() + half + 10, target.top(), half, target.height()));
}

QByteArray Fp8BlockScalesPanel::gridData(bool json) const {
  if (m_grid.empty()) return {};
  if (json) {
    const QJsonObject o{{"run", runName()}, {"tensor", m_tensor}, {"format", m_format}, {"step", double(m_step)},
                        {"block_grid", fp8BlockGridToJson(m_grid)}};
    return QJsonDocument(o).toJson(QJsonDocument::Indented);
  }
  QByteArray out = "block_row,block_col,tensor_row_first,tensor_row_last,tensor_col_first,tensor_col_last,scale_log2,amax_log2\n";
  const std::int64_t rowStep = std::int64_t(m_grid.cellRows) * m_grid.blockRows;
  const std::int64_t colStep = std::int64_t(m_grid.cellCols) * m_grid.blockCols;
  for (int i = 0; i < m_grid.rows; ++i)
    for (int j = 0; j < m_grid.cols; ++j) {
      const std::size_t k = std::size_t(i) * std::size_t(m_grid.cols) + std::size_t(j);
      out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8\n")
                 .arg(i)
                 .arg(j)
                 .arg(i * rowStep)
                 .arg(std::min(m_grid.tensorRows, (i + 1) * rowStep) - 1)
                 .arg(j * colStep)
                 .arg(std::min(m_grid.tensorCols, (j + 1) * colStep) - 1)
                 .arg(double(m_grid.scaleLog2[k]), 0, 'g', 7)
                 .arg(double(m_grid.amaxLog2[k]), 0, 'g', 7)
                 .toUtf8();
    }
  return out;
}

bool Fp8BlockScalesPanel::saveGrid(const QString& path, QString* error) const {
  const bool json = path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive);
  if (!json && !path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) {
    if (error) *error = tr("%1: not a .csv or .json file name").arg(path);
    return false;
  }
  if (m_grid.empty()) {
    if (error) *error = tr("no block grid shown");
    return false;
  }
  try {
    writeFileAtomically(path, gridData(json));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

void Fp8BlockScalesPanel::render(QPainter* painter, const QRectF& target) {
  refreshNow();
  painter->save();
  painter->setClipRect(target);
  paintPanel(painter, target, true);
  painter->restore();
}

}  // namespace amp::ui
