#include "ui/charts/layer_grid_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "ui/charts/heat_map_item.h"
#include "ui/charts/histogram_bins.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {

constexpr double kCellMinWidth = 230;
constexpr double kCellHeight = 150;

}  // namespace

// The painted grid inside the scroll area: its height follows the number of rows.
class LayerGridPanel::Grid : public QWidget {
 public:
  explicit Grid(LayerGridPanel* panel) : QWidget(panel), m_panel(panel) {}
  void updateHeight() {
    const int columns = m_panel->columnCount();
    const int rows = int((m_panel->m_images.size() + columns - 1) / columns);
    setMinimumHeight(int(std::max(1, rows) * kCellHeight));
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    m_panel->paintGrid(&p, QRectF(rect()), m_panel->columnCount());
  }
  void resizeEvent(QResizeEvent*) override { updateHeight(); }

 private:
  LayerGridPanel* m_panel;
};

LayerGridPanel::LayerGridPanel(QWidget* parent) : ChartPanel(QStringLiteral("layers"), parent) {
  m_view->hide();  // the grid paints itself; the view only carries the theme's colours
  m_runBox = new QComboBox(this);
  m_runBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_grid = new Grid(this);
  m_scroll = new QScrollArea(this);
  m_scroll->setWidget(m_grid);
  m_scroll->setWidgetResizable(true);
  m_scroll->setFrameShape(QFrame::NoFrame);
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 0, 6, 0);
  controls->addWidget(new QLabel(tr("Run"), this));
  controls->addWidget(m_runBox);
  controls->addWidget(new QLabel(tr("exponent over recorded steps, per tensor"), this));
  // The colour bar: each cell on its own scale, from one value to its largest count.
  QPixmap bar(QSize(64, 12) * devicePixelRatioF());
  bar.setDevicePixelRatio(devicePixelRatioF());
  QPainter(&bar).fillRect(QRectF(0, 0, 64, 12), heatGradient(QPointF(0, 0), QPointF(64, 0)));
  auto* barLabel = new QLabel(this);
  barLabel->setObjectName(QStringLiteral("layerColourBar"));
  barLabel->setPixmap(bar);
  controls->addSpacing(8);
  controls->addWidget(new QLabel(tr("1"), this));
  controls->addWidget(barLabel);
  auto* barText = new QLabel(tr("most values per cell (log; each tensor to its own largest)"), this);
  barText->setWordWrap(true);
  controls->addWidget(barText, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 2, 0, 2);
  layout->setSpacing(2);
  layout->addLayout(controls);
  layout->addWidget(m_scroll, 1);
  connect(m_runBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSelectedRun(m_runBox->itemData(i).toInt()); });
}

int LayerGridPanel::columnCount() const {
  const double width = m_scroll->viewport()->width();
  return std::max(1, int(width / kCellMinWidth));
}

void LayerGridPanel::setSelectedRun(int runId) {
  if (runId == m_selectedId) return;
  m_selectedId = runId;
  const QSignalBlocker block(m_runBox);
  m_runBox->setCurrentIndex(m_runBox->findData(runId));
  m_builtRun = nullptr;
  refreshNow();
}

const RunData* LayerGridPanel::selected() const { return visibleRunOrNewestWithHistograms(m_selectedId); }

void LayerGridPanel::rebuildSeries() {
  const QSignalBlocker block(m_runBox);
  m_runBox->clear();
  for (const RunData* r : visibleRuns()) m_runBox->addItem(r->name, r->id);
  const RunData* sel = selected();
  m_runBox->setCurrentIndex(sel ? m_runBox->findData(sel->id) : -1);
  m_builtRun = nullptr;
}

void LayerGridPanel::updateSeries() {
  const RunData* run = selected();
  const std::size_t frames = run ? run->histograms.size() : 0;
  if (run == m_builtRun && frames == m_builtFrames) return;
  m_builtRun = run;
  m_builtFrames = frames;
  m_titles.clear();
  m_images.clear();
  if (run && frames > 0) {
    m_firstStep = double(run->histograms.front().step);
    m_lastStep = double(run->histograms.back().step);
    // The tensors of the latest frame, in the order the engine recorded them (layer order).
    for (const HistogramRecord& latest : run->histograms.back().records) {
      std::vector<const ExponentHistogram*> columns;
      columns.reserve(frames);
      for (const HistogramFrame& f : run->histograms) {
        const ExponentHistogram* h = nullptr;
        for (const HistogramRecord& r : f.records)
          if (r.kind == latest.kind && r.tensor == latest.tensor) h = &r.unscaled;
        columns.push_back(h);
      }
      m_titles << QStringLiteral("%1 · %2").arg(QString::fromStdString(latest.tensor), histogramKindLabel(latest.kind));
      m_images << buildExponentHeatMap(columns);
    }
  }
  m_grid->updateHeight();
  m_grid->update();
}

void LayerGridPanel::paintGrid(QPainter* p, const QRectF& target, int columns) const {
  const ChartView* v = m_view;
  p->fillRect(target, v->backgroundColor());
  QFont font = p->font();
  font.setPointSizeF(8 * v->presentationScale());
  p->setFont(font);
  const QFontMetricsF fm(font);
  if (m_images.isEmpty()) {
    p->setPen(v->textColor());
    p->drawText(target, Qt::AlignCenter,
                m_builtRun ? tr("no histograms recorded for this run yet") : tr("no runs to show"));
    return;
  }
  const double cellW = target.width() / columns;
  for (int i = 0; i < m_images.size(); ++i) {
    const QRectF cell(target.left() + (i % columns) * cellW, target.top() + (i / columns) * kCellHeight, cellW,
                      kCellHeight);
    const double titleH = fm.height() + 2;
    const QRectF plot = cell.adjusted(30, titleH + 2, -6, -fm.height() - 4);
    p->setPen(v->textColor());
    p->drawText(QRectF(cell.left() + 4, cell.top(), cell.width() - 8, titleH), Qt::AlignLeft | Qt::AlignVCenter,
                fm.elidedText(m_titles[i], Qt::ElideMiddle, cell.width() - 8));
    p->fillRect(plot, v->theme() == ChartView::Theme::Dark ? QColor(0x2a, 0x2c, 0x30) : QColor(0xf4, 0xf4, 0xf4));
    p->drawImage(plot, m_images[i]);
    // fp16's limits: the image's rows run from kHistAxisMax (top) down to kHistMinExp.
    const auto yOf = [&](double exponent) {
      return plot.top() + (kHistAxisMax - exponent) / (kHistAxisMax - kHistMinExp) * plot.height();
    };
    p->setPen(QPen(QColor(0xd6, 0x27, 0x28), 1, Qt::SolidLine));
    p->drawLine(QPointF(plot.left(), yOf(kFp16NormalExp)), QPointF(plot.right(), yOf(kFp16NormalExp)));
    p->setPen(QPen(QColor(0xff, 0x7f, 0x0e), 1, Qt::DashLine));
    p->drawLine(QPointF(plot.left(), yOf(kFp16SubnormalExp)), QPointF(plot.right(), yOf(kFp16SubnormalExp)));
    p->setPen(v->textColor());
    for (int e : {kFp16NormalExp, kFp16SubnormalExp})
      p->drawText(QRectF(cell.left(), yOf(e) - fm.height() / 2, 28, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
                  powerOfTwo(e));
    p->drawText(QRectF(plot.left(), plot.bottom() + 1, plot.width(), fm.height()), Qt::AlignLeft,
                tr("step %1").arg(qint64(m_firstStep)));
    p->drawText(QRectF(plot.left(), plot.bottom() + 1, plot.width(), fm.height()), Qt::AlignRight,
                tr("%1").arg(qint64(m_lastStep)));
  }
}

void LayerGridPanel::render(QPainter* painter, const QRectF& target) {
  refreshNow();
  const int columns = std::max(1, int(target.width() / kCellMinWidth));
  painter->save();
  painter->setClipRect(target);
  // A header naming the run: an exported grid says whose tensors these are.
  QFont font = painter->font();
  font.setPointSizeF(10 * m_view->presentationScale());
  font.setBold(true);
  painter->setFont(font);
  const double header = QFontMetricsF(font).height() + 6;
  painter->fillRect(target, m_view->backgroundColor());
  painter->setPen(m_view->textColor());
  painter->drawText(QRectF(target.left() + 6, target.top(), target.width() - 12, header), Qt::AlignLeft | Qt::AlignVCenter,
                    m_builtRun ? tr("Exponents per tensor · %1").arg(m_builtRun->name) : tr("Exponents per tensor"));
  paintGrid(painter, target.adjusted(0, header, 0, 0), columns);
  painter->restore();
}

}  // namespace amp::ui
