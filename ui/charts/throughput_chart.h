// Speed per run over steps: samples/s (left axis) and step time in ms (right axis), each run's
// raw per-step figure as a faint line under a smoothed one (the per-step rate swung from 0 to
// 300k and runs drew over each other). The legend gives each run's current smoothed rate and
// its ratio to its group's fp32 run ("bf16 · 41k/s · 0.45× fp32"), so fp16 against bf16 reads
// at a glance. A combo box shows samples/s (the default), step time, or both.
#pragma once

#include <QHash>
#include <QVector>
#include <vector>

#include "ui/charts/chart_panel.h"
#include "ui/charts/smoothing.h"

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
    QLineSeries* samples = nullptr;     // smoothed
    QLineSeries* samplesRaw = nullptr;  // faint, beneath
    QLineSeries* stepMs = nullptr;      // smoothed
    QVector<double> samplesShown;      // samples/s divided by m_samplesUnit
    DebiasedEma samplesEma, stepMsEma;  // samplesEma smooths samplesShown
    double peak = 0;                   // highest samples/s of the first `peakDone` steps
    qsizetype peakDone = 0;
  };

  QComboBox* m_showBox;
  std::vector<RunSeriesSet> m_sets;
  double m_samplesUnit = 1;  // 1000 when samples/s run into the ten thousands: "50k" not "50000"
  Show m_show = Show::SamplesPerSecond;
  // Heavier than the loss's default: a step's rate varies by 2x with what else the machine does.
  static constexpr double kSmoothing = 0.95;
  // " · 41k/s · 0.45× fp32": the legend suffix of each run (by id).
  QHash<int, QString> rateSuffixes() const;
};

}  // namespace amp::ui
