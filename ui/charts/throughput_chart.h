// Speed per run over steps: samples/s (solid, left axis) and step time in ms (dashed, right
// axis). A combo box shows one of them or both.
#pragma once

#include <vector>

#include "ui/charts/chart_panel.h"

class QComboBox;
class QLineSeries;

namespace amp::ui {

class ThroughputChart : public ChartPanel {
  Q_OBJECT

 public:
  enum class Show { Both, SamplesPerSecond, StepTime };
  explicit ThroughputChart(QWidget* parent = nullptr);

  void setShown(Show show);
  Show shown() const { return m_show; }

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  struct RunSeriesSet {
    const RunData* run = nullptr;
    QLineSeries* samples = nullptr;
    QLineSeries* stepMs = nullptr;
    std::vector<double> samplesShown;  // samples/s divided by m_samplesUnit
    double peak = 0;                   // highest samples/s of the first `peakDone` steps
    qsizetype peakDone = 0;
  };

  QComboBox* m_showBox;
  std::vector<RunSeriesSet> m_sets;
  double m_samplesUnit = 1;  // 1000 when samples/s run into the ten thousands: "50k" not "50000"
  Show m_show = Show::Both;
};

}  // namespace amp::ui
