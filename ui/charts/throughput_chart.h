// Speed per run over steps: samples/s (left axis) and step time in ms (right axis), each run's
// raw per-step figure as a faint line under a smoothed one (the per-step rate swung from 0 to
// 300k and runs drew over each other). The legend gives each run's current smoothed rate and
// its speed against its group's fp32 run, the runs table's Speed-up figure in its words
// (ui/speed_ratio.h: "bf16 · 41k/s · 1.82× fp32", "~1.3× fp32 (noisy)" where the step times are
// too noisy to conclude), so fp16 against bf16 reads at a glance. A combo box shows samples/s
// (the default), step time, or both.
#pragma once

#include <QHash>
#include <QVector>
#include <vector>

#include "engine/train/speed_turns.h"
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
  // " · 41k/s · 1.82× fp32": the legend suffix of each run (by id).
  QHash<int, QString> rateSuffixes() const;
  // `run`'s speed against `base` (speedRatioOf), kept until either has new steps.
  struct CachedSpeed {
    int baseId = 0;
    qsizetype runSteps = -1, baseSteps = -1;
    SpeedRatio speed;
  };
  mutable QHash<int, CachedSpeed> m_speeds;  // by run id
  const SpeedRatio& speedOf(const RunData& run, const RunData& base) const;
};

}  // namespace amp::ui
