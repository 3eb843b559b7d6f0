// The lost-update meter over time: per run, the share of weight updates that rounding threw away
// at each step (an update smaller than half an ulp of its weight leaves the weight unchanged).
// The pure-fp16 lesson promised a meter; the runs table gave one mean per run. Here pure fp16's
// fp16 weights lose far more than AMP's fp32 masters, step by step, as the learning rate decays
// or the weights grow. Smoothed over a faint raw line, like the loss; log y by default, since
// fp32's fraction sits orders of magnitude below pure fp16's.
#pragma once

#include <QVector>
#include <vector>

#include "ui/charts/chart_panel.h"
#include "ui/charts/smoothing.h"

class QLineSeries;

namespace amp::ui {

class LostUpdatesChart : public ChartPanel {
  Q_OBJECT

 public:
  explicit LostUpdatesChart(QWidget* parent = nullptr);

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  struct RunSeriesSet {
    const RunData* run = nullptr;
    QLineSeries* smoothed = nullptr;
    QLineSeries* raw = nullptr;  // faint, beneath
    QVector<double> percent;     // lostUpdateFrac x 100
    DebiasedEma ema;
  };
  std::vector<RunSeriesSet> m_sets;
  static constexpr double kSmoothing = 0.9;
};

}  // namespace amp::ui
