// All chart panels together: a 3 x 2 grid of splitters (or one tab per panel), fed the same
// runs, refreshed together, exported one by one or as a whole (PNG/SVG/PDF).
#pragma once

#include <QVector>
#include <QWidget>

#include "ui/charts/chart_panel.h"
#include "ui/charts/chart_view.h"

class QComboBox;
class QSplitter;
class QStackedLayout;
class QTabWidget;

namespace amp::ui {

struct RunData;
class AccuracyChart;
class ChartPanel;
class HistogramView;
class LayerGridPanel;
class LostUpdatesChart;
class DecisionChart;
class Fp8BlockScalesPanel;
class Fp8HeatMapPanel;
class Fp8ScaleTimeline;
class LossChart;
class MemoryChart;
class ScaleChart;
class ThroughputChart;

class Dashboard : public QWidget {
  Q_OBJECT

 public:
  enum class Layout { Grid, Tabs };

  explicit Dashboard(QWidget* parent = nullptr);

  // Runs to plot (those with visible == true are drawn); pointers stay valid until the next
  // call. Then call refresh() whenever new metrics were appended (at most ~30 times a second);
  // toggling a run's `visible`, colour or name also needs only refresh().
  void setRuns(const QVector<const RunData*>& runs);
  void refresh();

  // The user's choice; until one is made (and again after setAutomaticLayout()) the layout
  // follows the size: a grid while a cell keeps kMinGridCell x the presentation scale, else tabs.
  void setLayoutMode(Layout layout);
  void setAutomaticLayout();
  bool isAutomaticLayout() const { return m_autoLayout; }
  // Every panel back to automatic ranges (ChartPanel::resetViews).
  void resetViews();
  // Brings a panel into view (its tab in the tabbed layout).
  void showChart(const QString& name);
  Layout layoutMode() const { return m_layout; }
  // A grid cell smaller than this (at scale 1) elides tick labels and overprints titles: measured
  // on the screenshots at 1280x800, where a cell of 313 x 245 lost its throughput and memory ticks,
  // and at 1920x1080 under a lesson's result panel, where cells of 498 x 280 lost the accuracy and
  // throughput ticks (a legend of two or three rows and a row of controls under the plot).
  static constexpr QSize kMinGridCell{400, 300};
  void setTheme(ChartView::Theme theme);
  // Presentation mode for a projector: 1.0 normal, larger for bigger fonts and thicker lines in
  // every panel (kept across theme changes). Ctrl+= / Ctrl+- step it.
  void setPresentationScale(double factor);
  double presentationScale() const { return m_presentationScale; }

  // Step, epoch or training time along the time-series charts' x axes (the header's combo).
  void setXAxisMode(XAxisMode mode);
  XAxisMode xAxisMode() const { return m_xMode; }

  // The run the single-run panels (exponent histogram, memory) follow. -1, or a run no longer
  // shown: the newest visible run.
  void setFocusRun(int runId);
  int focusRun() const { return m_focusRun; }

  // "loss", "scale", "histogram", "accuracy", "throughput", "memory".
  QStringList chartNames() const;
  ChartPanel* panel(const QString& name) const;
  LossChart* lossChart() const { return m_loss; }
  ScaleChart* scaleChart() const { return m_scale; }
  HistogramView* histogramView() const { return m_histogram; }
  AccuracyChart* accuracyChart() const { return m_accuracy; }
  ThroughputChart* throughputChart() const { return m_throughput; }
  MemoryChart* memoryChart() const { return m_memory; }
  LayerGridPanel* layerGrid() const { return m_layers; }  // "layers": per-tensor heat maps
  // The next (delta 1) or previous (-1) chart, round the tabs: the focus view's Page Down / Up.
  void stepChart(int delta);
  // The panel on screen in the tabs layout (nullptr in the grid).
  ChartPanel* currentTab() const;
  LostUpdatesChart* lostUpdatesChart() const { return m_updates; }  // "updates": the lost-update meter
  DecisionChart* decisionChart() const { return m_data; }  // "data": points and decision regions
  Fp8ScaleTimeline* fp8ScaleTimeline() const { return m_fp8Scale; }  // "fp8-scale" (issue 39)
  Fp8HeatMapPanel* fp8HeatMap() const { return m_fp8Heat; }          // "fp8-heat"
  Fp8BlockScalesPanel* fp8BlockScales() const { return m_fp8Blocks; }  // "fp8-blocks"

  // Whole dashboard as a 3 x 2 grid under a header naming the runs. `format`: "png", "svg",
  // "pdf" or empty for the path's suffix. PNG: `size` in pixels at `dpi`; SVG/PDF: logical size.
  // Both write through exportPainting; false on failure, with the one-line reason in `error`.
  bool exportDashboard(const QString& path, const QString& format = {}, QSize size = QSize(1800, 1050),
                       int dpi = 96, QString* error = nullptr);
  // One panel by name (see chartNames()); empty size = its on-screen size.
  bool exportChart(const QString& name, const QString& path, const QString& format = {}, QSize size = {},
                   int dpi = 96, QString* error = nullptr);
  void renderDashboard(QPainter* painter, const QRectF& target);

 signals:
  // A run's legend entry was clicked in some chart: hide it from the charts (or show it again).
  void runVisibilityToggleRequested(int runId);

 private:
  QList<ChartPanel*> panels() const;     // the six of the grid and the dashboard export
  QList<ChartPanel*> allPanels() const;  // and those of tabPanels()
  // The panels beyond the grid (lost updates, data, layers), each a tab of its own in either
  // layout, and their tab titles.
  QList<ChartPanel*> tabPanels() const;
  QString tabTitle(const ChartPanel* panel) const;
  void applyLayout(Layout layout);
  void applyAutomaticLayout();
  void resizeEvent(QResizeEvent* event) override;
  bool m_autoLayout = true;

  LossChart* m_loss;
  ScaleChart* m_scale;
  HistogramView* m_histogram;
  AccuracyChart* m_accuracy;
  ThroughputChart* m_throughput;
  MemoryChart* m_memory;
  LayerGridPanel* m_layers;
  LostUpdatesChart* m_updates;
  DecisionChart* m_data;
  Fp8ScaleTimeline* m_fp8Scale;
  Fp8HeatMapPanel* m_fp8Heat;
  Fp8BlockScalesPanel* m_fp8Blocks;
  QTabWidget* m_gridTabs;  // grid layout: the six charts on one tab, the layers on another
  QVector<const RunData*> m_runs;
  int m_focusRun = -1;
  XAxisMode m_xMode = XAxisMode::Step;
  QComboBox* m_xModeBox;
  QWidget* m_header;  // "x axis [step]": the corner widget of whichever tab widget shows
  double m_presentationScale = 1.0;

  QStackedLayout* m_stack;
  QWidget* m_grid;
  QSplitter* m_rows[2];
  QTabWidget* m_tabs;
  Layout m_layout = Layout::Grid;
};

}  // namespace amp::ui
