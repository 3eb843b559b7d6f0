// The loss chart's smoothed series: engine's TensorBoardEma (the exports' numerics) plus a cache,
// because the chart smooths every run on every refresh (30 per second) while steps are appended:
// only the new tail is computed.
#pragma once

#include <QVector>

#include "engine/telemetry/smoothing.h"

namespace amp::ui {

class DebiasedEma {
 public:
  // weight in [0, 1): 0 = no smoothing; TensorBoard's slider goes up to 0.999.
  void setWeight(double weight);
  double weight() const { return m_ema.weight(); }
  // Brings smoothed() up to date with `values`: only the new tail is computed, unless the
  // values were replaced (fewer of them, or a different first value) or the weight changed.
  const QVector<double>& update(const QVector<double>& values);
  const QVector<double>& smoothed() const { return m_smoothed; }
  void reset();

 private:
  TensorBoardEma m_ema{0.6};
  QVector<double> m_smoothed;
  double m_firstValue = 0;
};

}  // namespace amp::ui
