// TensorBoard's scalar smoothing: an exponential moving average debiased like Adam's moments,
// so the first points are not dragged toward zero. Kept incremental because the loss chart
// smooths every run on every refresh (30 per second) while training appends steps.
#pragma once

#include <QVector>

namespace amp::ui {

class DebiasedEma {
 public:
  // weight in [0, 1): 0 = no smoothing; TensorBoard's slider goes up to 0.999.
  void setWeight(double weight);
  double weight() const { return m_weight; }
  // Brings smoothed() up to date with `values`: only the new tail is computed, unless the
  // values were replaced (fewer of them, or a different first value) or the weight changed.
  const QVector<double>& update(const QVector<double>& values);
  const QVector<double>& smoothed() const { return m_smoothed; }
  void reset();

 private:
  double m_weight = 0.6;
  QVector<double> m_smoothed;
  double m_last = 0;
  double m_firstValue = 0;
  double m_weightPow = 1;  // weight^(finite values averaged so far)
};

}  // namespace amp::ui
