#include "ui/charts/smoothing.h"

#include <algorithm>
#include <cmath>

namespace amp::ui {

void DebiasedEma::setWeight(double weight) {
  weight = std::isfinite(weight) ? std::clamp(weight, 0.0, 0.999) : 0.0;  // clamp keeps NaN
  if (weight == m_weight) return;
  m_weight = weight;
  reset();
}

void DebiasedEma::reset() {
  m_smoothed.clear();
  m_last = 0;
  m_weightPow = 1;
}

const QVector<double>& DebiasedEma::update(const QVector<double>& values) {
  if (values.size() < m_smoothed.size() || (!m_smoothed.isEmpty() && !(values.first() == m_firstValue) &&
                                            !(std::isnan(values.first()) && std::isnan(m_firstValue))))
    reset();
  if (!values.isEmpty()) m_firstValue = values.first();
  m_smoothed.reserve(values.size());
  for (qsizetype i = m_smoothed.size(); i < values.size(); ++i) {
    const double v = values[i];
    if (!std::isfinite(v)) {
      m_smoothed.append(v);  // as TensorBoard: shown as is, not averaged in
      continue;
    }
    m_last = m_last * m_weight + (1 - m_weight) * v;
    m_weightPow *= m_weight;  // weight^count, without a pow() per point
    const double debias = 1 - m_weightPow;
    m_smoothed.append(debias > 0 ? m_last / debias : v);
  }
  return m_smoothed;
}

}  // namespace amp::ui
