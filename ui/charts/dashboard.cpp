#include "ui/charts/dashboard.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QResizeEvent>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStackedLayout>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/charts/accuracy_chart.h"
#include "ui/charts/decision_chart.h"
#include "ui/charts/fp8_block_scales.h"
#include "ui/charts/fp8_heat_map.h"
#include "ui/charts/fp8_scale_timeline.h"
#include "ui/charts/histogram_view.h"
#include "ui/charts/layer_grid_panel.h"
#include "ui/charts/loss_chart.h"
#include "ui/charts/lost_updates_chart.h"
#include "ui/charts/memory_chart.h"
#include "ui/charts/scale_chart.h"
#include "ui/charts/throughput_chart.h"
#include "ui/run_data.h"

namespace amp::ui {

Dashboard::Dashboard(QWidget* parent)
    : QWidget(parent),
      m_loss(new LossChart),
      m_scale(new ScaleChart),
      m_histogram(new HistogramView),
      m_accuracy(new AccuracyChart),
      m_throughput(new ThroughputChart),
      m_memory(new MemoryChart),
      m_layers(new LayerGridPanel),
      m_updates(new LostUpdatesChart),
      m_data(new DecisionChart),
      m_fp8Scale(new Fp8ScaleTimeline),
      m_fp8Heat(new Fp8HeatMapPanel),
      m_fp8Blocks(new Fp8BlockScalesPanel) {
  m_grid = new QWidget;
  auto* columns = new QSplitter(Qt::Vertical, m_grid);
  for (QSplitter*& row : m_rows) {
    row = new QSplitter(Qt::Horizontal, columns);
    row->setChildrenCollapsible(false);
  }
  columns->setChildrenCollapsible(false);
  auto* gridLayout = new QVBoxLayout(m_grid);
  gridLayout->setContentsMargins(0, 0, 0, 0);
  gridLayout->addWidget(columns);
  m_tabs = new QTabWidget;
  m_tabs->setDocumentMode(true);

  // A slim header: what the time-series charts put along x.
  m_xModeBox = new QComboBox;
  m_xModeBox->addItem(tr("step"), int(XAxisMode::Step));
  m_xModeBox->addItem(tr("epoch"), int(XAxisMode::Epoch));
  m_xModeBox->addItem(tr("training time"), int(XAxisMode::WallTime));
  m_xModeBox->setToolTip(tr("What the loss, scale, accuracy, throughput and memory charts put along x"));
  // In the tab bar's corner, not a row of its own: at 1024x640 and scale 1.5 that row cost the
  // charts 35 px of the little height they had.
  m_header = new QWidget;
  auto* header = new QHBoxLayout(m_header);
  header->setContentsMargins(6, 0, 6, 0);
  header->addWidget(new QLabel(tr("x axis")));
  header->addWidget(m_xModeBox);
  connect(m_xModeBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setXAxisMode(XAxisMode(m_xModeBox->itemData(i).toInt())); });
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->setSpacing(0);
  m_stack = new QStackedLayout;
  outer->addLayout(m_stack, 1);
  m_stack->setContentsMargins(0, 0, 0, 0);
  m_gridTabs = new QTabWidget;
  m_gridTabs->setDocumentMode(true);
  m_gridTabs->addTab(m_grid, tr("Charts"));
  m_stack->addWidget(m_gridTabs);
  m_stack->addWidget(m_tabs);
  m_layout = Layout::Tabs;  // so that the call below lays the panels out
  applyLayout(Layout::Grid);
  for (ChartPanel* p : panels())
    connect(p, &ChartPanel::runVisibilityToggleRequested, this, &Dashboard::runVisibilityToggleRequested);
}

void Dashboard::setPresentationScale(double factor) {
  m_presentationScale = factor;
  for (ChartPanel* p : allPanels()) p->setPresentationScale(factor);
  applyAutomaticLayout();  // larger text needs larger cells
}

void Dashboard::setXAxisMode(XAxisMode mode) {
  m_xMode = mode;
  {
    const QSignalBlocker block(m_xModeBox);
    m_xModeBox->setCurrentIndex(m_xModeBox->findData(int(mode)));
  }
  for (ChartPanel* p : panels())
    if (p != m_histogram) p->setXAxisMode(mode);  // (the layers' heat maps too: by step)  // the histogram's heat map stays by step
}

void Dashboard::setFocusRun(int runId) {
  m_focusRun = runId;
  m_histogram->setSelectedRun(runId);
  m_memory->setSelectedRun(runId);
  m_layers->setSelectedRun(runId);
  m_data->setSelectedRun(runId);
  m_fp8Heat->setSelectedRun(runId);
  m_fp8Blocks->setSelectedRun(runId);
}

QList<ChartPanel*> Dashboard::panels() const {
  // Grid order: the AMP story on top (loss, scale, exponents), the rest below.
  return {m_loss, m_scale, m_histogram, m_accuracy, m_throughput, m_memory};
}

QList<ChartPanel*> Dashboard::tabPanels() const { return {m_updates, m_data, m_layers, m_fp8Scale, m_fp8Heat, m_fp8Blocks}; }

QList<ChartPanel*> Dashboard::allPanels() const { return panels() << tabPanels(); }

QString Dashboard::tabTitle(const ChartPanel* p) const {
  if (p == m_fp8Scale) return tr("fp8 scales");
  if (p == m_fp8Heat) return tr("fp8 heat map");
  if (p == m_fp8Blocks) return tr("fp8 block scales");
  return p == m_updates ? tr("Lost updates") : p == m_data ? tr("Data") : tr("Layers");
}

QStringList Dashboard::chartNames() const {
  QStringList names;
  for (ChartPanel* p : allPanels()) names << p->name();
  return names;
}

void Dashboard::resetViews() {
  for (ChartPanel* p : allPanels()) p->resetViews();
}

ChartPanel* Dashboard::panel(const QString& name) const {
  for (ChartPanel* p : allPanels())
    if (p->name() == name) return p;
  return nullptr;
}

void Dashboard::setLayoutMode(Layout layout) {
  m_autoLayout = false;
  applyLayout(layout);
}

void Dashboard::setAutomaticLayout() {
  m_autoLayout = true;
  applyAutomaticLayout();
}

void Dashboard::applyAutomaticLayout() {
  if (!m_autoLayout) return;
  const bool fits = width() / 3 >= kMinGridCell.width() * m_presentationScale &&
                    height() / 2 >= kMinGridCell.height() * m_presentationScale;
  applyLayout(fits ? Layout::Grid : Layout::Tabs);
}

void Dashboard::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  applyAutomaticLayout();
}

void Dashboard::showChart(const QString& name) {
  ChartPanel* p = panel(name);
  if (!p) return;
  if (m_layout == Layout::Tabs)
    m_tabs->setCurrentWidget(p);
  else
    m_gridTabs->setCurrentWidget(tabPanels().contains(p) ? static_cast<QWidget*>(p) : m_grid);
}

void Dashboard::stepChart(int delta) {
  QTabWidget* tabs = m_layout == Layout::Tabs ? m_tabs : m_gridTabs;
  const int n = tabs->count();
  if (n > 0) tabs->setCurrentIndex(((tabs->currentIndex() + delta) % n + n) % n);
}

ChartPanel* Dashboard::currentTab() const {
  return m_layout == Layout::Tabs ? qobject_cast<ChartPanel*>(m_tabs->currentWidget()) : nullptr;
}

void Dashboard::applyLayout(Layout layout) {
  if (layout == m_layout) return;
  // The chart on screen stays on screen: a lesson's conclusion shows its chart, then the result
  // panel's height can switch the grid to tabs, which reopened on the loss.
  QWidget* shown = m_layout == Layout::Tabs ? m_tabs->currentWidget() : m_gridTabs->currentWidget();
  auto* shownPanel = qobject_cast<ChartPanel*>(shown);
  m_layout = layout;
  const QList<ChartPanel*> all = panels();
  if (layout == Layout::Grid) {
    m_tabs->clear();  // removes pages, keeps the widgets
    for (int i = 0; i < all.size(); ++i) m_rows[i / 3]->addWidget(all[i]);
    for (QSplitter* row : m_rows) row->setSizes({1, 1, 1});
    for (ChartPanel* p : tabPanels()) m_gridTabs->addTab(p, tabTitle(p));
    m_stack->setCurrentWidget(m_gridTabs);
    m_tabs->setCornerWidget(nullptr);
    m_gridTabs->setCornerWidget(m_header);
    for (ChartPanel* p : all) p->show();
  } else {
    static const char* const titles[] = {"Loss",     "Loss scale", "Exponents",
                                         "Accuracy", "Throughput", "Memory"};
    for (ChartPanel* p : tabPanels()) m_gridTabs->removeTab(m_gridTabs->indexOf(p));
    for (int i = 0; i < all.size(); ++i) m_tabs->addTab(all[i], tr(titles[i]));
    for (ChartPanel* p : tabPanels()) m_tabs->addTab(p, tabTitle(p));
    m_stack->setCurrentWidget(m_tabs);
    m_gridTabs->setCornerWidget(nullptr);
    m_tabs->setCornerWidget(m_header);
  }
  m_header->show();
  if (shownPanel) showChart(shownPanel->name());
}

void Dashboard::setRuns(const QVector<const RunData*>& runs) {
  m_runs = runs;
  for (ChartPanel* p : allPanels()) p->setRuns(runs);
}

void Dashboard::refresh() {
  for (ChartPanel* p : allPanels()) p->refresh();  // hidden ones (other tabs) wait until shown
}

void Dashboard::setTheme(ChartView::Theme theme) {
  for (ChartPanel* p : allPanels()) p->setTheme(theme);
}

void Dashboard::renderDashboard(QPainter* painter, const QRectF& target) {
  const ChartView* any = m_loss->chartView();
  painter->fillRect(target, any->backgroundColor());
  // Header: the runs shown, in their colours, so a printed page says what it compares.
  const double header = 28;
  QFont font = painter->font();
  font.setPointSize(10);
  font.setBold(true);
  painter->setFont(font);
  double x = target.left() + 10;
  painter->setPen(any->textColor());
  const QRectF titleRect(x, target.top(), target.width() - 20, header);
  painter->drawText(titleRect, Qt::AlignVCenter | Qt::AlignLeft, tr("AMP Studio — runs:"));
  x += painter->fontMetrics().horizontalAdvance(tr("AMP Studio — runs:")) + 10;
  for (const RunData* r : m_runs) {
    if (!r || !r->visible) continue;
    painter->setPen(r->color.isValid() ? r->color : any->textColor());
    painter->drawText(QRectF(x, target.top(), target.right() - x, header), Qt::AlignVCenter | Qt::AlignLeft,
                      r->name);
    x += painter->fontMetrics().horizontalAdvance(r->name) + 16;
  }
  const QList<ChartPanel*> all = panels();
  const double w = target.width() / 3, h = (target.height() - header) / 2;
  for (int i = 0; i < all.size(); ++i) {
    const QRectF cell(target.left() + (i % 3) * w, target.top() + header + (i / 3) * h, w, h);
    all[i]->render(painter, cell.adjusted(2, 2, -2, -2));
  }
}

bool Dashboard::exportDashboard(const QString& path, const QString& format, QSize size, int dpi,
                                QString* error) {
  const auto f = exportFormatFor(path, format);
  if (!f) {
    if (error) *error = path + tr(": not a PNG, SVG or PDF file name");
    return false;
  }
  ExportOptions options;
  options.size = size.isEmpty() ? QSize(1800, 1050) : size;
  options.dpi = dpi;
  options.background = m_loss->chartView()->backgroundColor();
  options.title = tr("AMP Studio dashboard");
  return exportPainting(
      path, *f, options, [this](QPainter* p, const QRectF& r) { renderDashboard(p, r); }, error);
}

bool Dashboard::exportChart(const QString& name, const QString& path, const QString& format, QSize size,
                            int dpi, QString* error) {
  ChartPanel* p = panel(name);
  if (!p) {
    if (error) *error = tr("no chart named %1").arg(name);
    return false;
  }
  return p->exportTo(path, format, size, dpi, error);
}

}  // namespace amp::ui
