// TensorBoard's scalar smoothing: one incremental smoother, used by exports (a whole series at
// once) and by the loss chart (which appends only new points at 30 refreshes a second), so both
// give the same curve for the same weight.
#pragma once

#include <vector>

namespace amp {

// Exponential moving average debiased like Adam's moments (divided by 1 - weight^n, n = the
// finite values averaged so far), so the first points are not dragged toward zero. Non-finite
// values are returned as they are and not averaged in (as TensorBoard shows them). The weight is
// clamped to [0, 0.999] like the UI's slider; a non-finite weight counts as 0 (no smoothing).
class TensorBoardEma {
 public:
  explicit TensorBoardEma(double weight = 0.6) { setWeight(weight); }
  // Returns whether the (clamped) weight changed; only then the average restarts.
  bool setWeight(double weight);
  double weight() const { return m_weight; }
  void reset() {
    m_last = 0;
    m_weightPow = 1;
  }
  double next(double v);  // the smoothed value of the next point

 private:
  double m_weight = 0.6;
  double m_last = 0;
  double m_weightPow = 1;  // weight^(finite values averaged so far), without a pow() per point
};

std::vector<double> smoothTensorBoard(const std::vector<double>& y, double weight);

}  // namespace amp
