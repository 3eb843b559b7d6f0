// The order in which the CUDA backend adds a batch's row losses into the step's loss
// (kernels/cuda/step_loss.cu), written once for the device and for the host reference the GPU
// suite checks it against bit for bit.
//
// Why not row order: one thread adding 32768 row losses one after another (the GPT at ctx 1024 x
// batch 32) is a chain of dependent loads and adds on a single GPU thread (issue 41). Blocked:
// lane t of kRowSumLanes adds rows t, t + kRowSumLanes, ... in order (neighbouring lanes read
// neighbouring rows), then the lanes' partials are added in lane order. A fixed order, so reruns
// and graph replays agree bit for bit; it differs from the CPU's row order by rounding only
// (the step's loss is compared with the CPU's within bounds, never bit for bit).
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace amp {

constexpr int kRowSumLanes = 256;

// Lane `lane`'s partial: rows lane, lane + kRowSumLanes, ... of m, in order.
AMP_HD inline double rowSumLanePartial(const double* rows, std::int64_t m, int lane) {
  double s = 0;
  for (std::int64_t r = lane; r < m; r += kRowSumLanes) s += rows[r];
  return s;
}

// The whole sum in that order (the host reference; the device computes the partials in parallel).
inline double rowSumBlocked(const double* rows, std::int64_t m) {
  double total = 0;
  for (int lane = 0; lane < kRowSumLanes; ++lane) total += rowSumLanePartial(rows, m, lane);
  return total;
}

}  // namespace amp
