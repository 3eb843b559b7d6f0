// Test accuracy (%, solid, left axis) and test loss (dashed, right axis) per run at each
// evaluation; "no test set" when no run has evaluated yet.
#pragma once

#include <vector>

#include "ui/charts/chart_panel.h"

class QLineSeries;

namespace amp::ui {

class AccuracyChart : public ChartPanel {
  Q_OBJECT

 public:
  explicit AccuracyChart(QWidget* parent = nullptr);

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  struct RunSeriesSet {
    const RunData* run = nullptr;
    QLineSeries* accuracy = nullptr;
    QLineSeries* loss = nullptr;
    std::vector<double> percent;  // testAcc * 100, grown incrementally
  };
  std::vector<RunSeriesSet> m_sets;
};

}  // namespace amp::ui
