// Training loss per run, TensorBoard style: the raw loss as a faint thin line under a smoothed
// line (debiased EMA, slider 0..0.999), test loss as dots, optional log10 y axis.
#pragma once

#include <QList>
#include <vector>

#include "ui/charts/chart_panel.h"
#include "ui/charts/smoothing.h"

class QCheckBox;
class QLabel;
class QLineSeries;
class QScatterSeries;
class QSlider;

namespace amp::ui {

class LossChart : public ChartPanel {
  Q_OBJECT

 public:
  explicit LossChart(QWidget* parent = nullptr);

  double smoothing() const { return m_smoothingWeight; }
  void setSmoothing(double weight);  // 0..0.999
  void setLogY(bool on) { m_view->setLogY(on); }

 signals:
  void smoothingChanged(double weight);

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  struct RunSeriesSet {
    const RunData* run = nullptr;
    QLineSeries* raw = nullptr;
    QLineSeries* smoothed = nullptr;
    QScatterSeries* test = nullptr;
    DebiasedEma ema;
    // Non-finite losses cannot be drawn: counted incrementally (steps scanned so far) for the
    // chart's caption, so a diverged run's missing curve is explained, not just absent.
    int scanned = 0;
    qint64 nonFinite = 0;
    double firstNonFiniteX = 0;
  };
  QString nonFiniteCaption();

  QSlider* m_slider;
  QLabel* m_sliderValue;
  QCheckBox* m_logBox;
  QScatterSeries* m_testKey = nullptr;  // legend entry "test loss" (no points)
  std::vector<RunSeriesSet> m_sets;
  double m_smoothingWeight = 0.6;  // TensorBoard's default
};

}  // namespace amp::ui
