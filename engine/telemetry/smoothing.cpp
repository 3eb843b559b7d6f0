#include "engine/telemetry/smoothing.h"

#include <algorithm>
#include <cmath>

namespace amp {

bool TensorBoardEma::setWeight(double weight) {
  // std::clamp would let a NaN weight through and turn every point into NaN.
  weight = std::isfinite(weight) ? std::clamp(weight, 0.0, 0.999) : 0.0;
  if (weight == m_weight) return false;
  m_weight = weight;
  reset();
  return true;
}

double TensorBoardEma::next(double v) {
  if (!std::isfinite(v)) return v;
  m_last = m_last * m_weight + (1 - m_weight) * v;
  m_weightPow *= m_weight;
  const double debias = 1 - m_weightPow;
  return debias > 0 ? m_last / debias : v;
}

std::vector<double> smoothTensorBoard(const std::vector<double>& y, double weight) {
  TensorBoardEma ema(weight);
  std::vector<double> out;
  out.reserve(y.size());
  for (const double v : y) out.push_back(ema.next(v));
  return out;
}

}  // namespace amp
