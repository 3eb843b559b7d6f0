// TensorBoard's scalar smoothing as one function, for exports and anything else that smooths a
// whole series at once (the loss chart keeps an incremental copy, ui/charts/smoothing.h, with
// the same numerics: both must give the same curve for the same weight).
#pragma once

#include <vector>

namespace amp {

// Exponential moving average debiased like Adam's moments (divided by 1 - weight^n, n = the
// finite values averaged so far), so the first points are not dragged toward zero. Non-finite
// values are returned as they are and not averaged in (as TensorBoard shows them). weight is
// clamped to [0, 0.999] like the UI's slider; 0 (or a non-finite weight) returns `y` unchanged.
std::vector<double> smoothTensorBoard(const std::vector<double>& y, double weight);

}  // namespace amp
