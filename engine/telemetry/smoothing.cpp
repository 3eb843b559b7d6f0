#include "engine/telemetry/smoothing.h"

#include <algorithm>
#include <cmath>

namespace amp {

std::vector<double> smoothTensorBoard(const std::vector<double>& y, double weight) {
  // std::clamp would let a NaN weight through and turn every point into NaN.
  weight = std::isfinite(weight) ? std::clamp(weight, 0.0, 0.999) : 0.0;
  std::vector<double> out;
  out.reserve(y.size());
  double last = 0;
  double weightPow = 1;  // weight^(finite values averaged so far), without a pow() per point
  for (const double v : y) {
    if (!std::isfinite(v)) {
      out.push_back(v);
      continue;
    }
    // The same expression order as ui::DebiasedEma, so both round identically.
    last = last * weight + (1 - weight) * v;
    weightPow *= weight;
    const double debias = 1 - weightPow;
    out.push_back(debias > 0 ? last / debias : v);
  }
  return out;
}

}  // namespace amp
