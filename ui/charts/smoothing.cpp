#include "ui/charts/smoothing.h"

#include <algorithm>
#include <cmath>

namespace amp::ui {

void DebiasedEma::setWeight(double weight) {
  if (m_ema.setWeight(weight)) m_smoothed.clear();
}

void DebiasedEma::reset() {
  m_smoothed.clear();
  m_ema.reset();
}

const QVector<double>& DebiasedEma::update(const QVector<double>& values) {
  if (values.size() < m_smoothed.size() || (!m_smoothed.isEmpty() && !(values.first() == m_firstValue) &&
                                            !(std::isnan(values.first()) && std::isnan(m_firstValue))))
    reset();
  if (!values.isEmpty()) m_firstValue = values.first();
  m_smoothed.reserve(values.size());
  for (qsizetype i = m_smoothed.size(); i < values.size(); ++i) {
    m_smoothed.append(m_ema.next(values[i]));
  }
  return m_smoothed;
}

}  // namespace amp::ui
