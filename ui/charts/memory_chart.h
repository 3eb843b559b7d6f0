// Memory by category (weights, master weights, gradients, activations, optimizer state,
// workspace): the selected run's peak bytes within each step as stacked areas, the bytes still
// held after the step as a dashed line, the device's total and free memory for GPU runs (the
// categories count this run's tensors on the device, as torch.cuda.memory_allocated does), and, when
// several runs are shown, each run's peak per category as a bar group beside it (horizontal
// bars: the category names stay readable in a narrow chart).
#pragma once

#include <array>
#include <vector>

#include "engine/core/memory_tracker.h"
#include "ui/charts/chart_panel.h"

class QAreaSeries;
class QHorizontalBarSeries;
class QBarCategoryAxis;
class QComboBox;
class QLabel;
class QLineSeries;

namespace amp::ui {

class MemoryChart : public ChartPanel {
  Q_OBJECT

 public:
  explicit MemoryChart(QWidget* parent = nullptr);

  // The run drawn as stacked areas (by RunData::id); the first visible run when not shown.
  void setSelectedRun(int runId);
  int selectedRun() const { return m_selectedId; }
  ChartView* peakView() const { return m_peakView; }
  static constexpr int kPeakMinWidth = 620;  // narrower: the bars are not shown

  void render(QPainter* painter, const QRectF& target) override;

  // A category's name for a run (nullptr: any run): an fp8 run's weights are its 1-byte (nvfp4:
  // 4-bit) codes with their scales and its masters fp32, and the chart says so (issue 39).
  // `brief`: the legend's short form.
  static QString categoryName(int category, const RunData* run, bool brief);
  // The stacked areas' names as the legend shows them (tests).
  QStringList areaNames() const;

 signals:
  void selectedRunChanged(int runId);

 protected:
  void rebuildSeries() override;
  void updateSeries() override;
  QList<ChartView*> views() const override { return {m_view, m_peakView}; }
  void resizeEvent(QResizeEvent* event) override;

 private:
  const RunData* selected() const;
  void updatePeakVisibility();
  void setCategoryLegend();  // the legend's keys: the areas' names
  void updatePeaks(const QVector<const RunData*>& runs, double unit);
  QString peakHoverText(const QPointF& value) const;

  QComboBox* m_runBox;
  QLabel* m_deviceLabel;                   // "cuda:0: 77.1 GiB free of 79.2 GiB"
  QLineSeries* m_heldLine = nullptr;       // all categories' bytes held after each step
  ChartView* m_peakView;
  QHorizontalBarSeries* m_peakSeries = nullptr;
  QBarCategoryAxis* m_peakAxis = nullptr;  // categories, on the left
  QValueAxis* m_peakValues = nullptr;      // bytes, at the bottom
  std::array<QAreaSeries*, kMemCategoryCount> m_areas{};
  struct PeakCache {
    const RunData* run = nullptr;
    qsizetype done = 0;  // steps already folded into `max`
    std::array<double, kMemCategoryCount> max{};
  };
  std::vector<PeakCache> m_peaks;  // per visible run, grown incrementally
  std::vector<double> m_total;     // bytes of all categories, per step of the selected run
  const RunData* m_totalRun = nullptr;
  int m_selectedId = -1;
  double m_unit = 1;
  QString m_namesKind;  // "", "fp8" or "fp4": the kind of run the areas are named for
  QString m_unitName;
};

}  // namespace amp::ui
