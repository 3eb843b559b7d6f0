// DDP's average of a gradient over the data-parallel ranks, one element: the ranks' values summed
// in fp32, divided by the number of ranks in fp32, then rounded once to the gradient's dtype.
// Both paths of engine/dist use it, so that they agree bit for bit (up to the order in which the
// transport adds the ranks' values, which is its own):
// - the host path (data_parallel.cpp): 16-bit gradients widened exactly to fp32 on the host,
//   summed by the Communicator in fp32, divided here, rounded by the upload;
// - NCCL (engine/backend/cuda_backend_nccl.cpp): 16-bit gradients widened exactly into fp32 copies
//   on the device, summed by ncclAllReduce in fp32, divided and rounded here
//   (kernels/cuda/rank_average.cu).
// Why not NCCL's sum in the gradient's own dtype (issue 41): 16-bit sums round at every add and,
// in fp16, overflow at 65504: two ranks' 40000 averaged to inf, and the scaler skipped a step
// that averaging in fp32 (or DDP's divide-first) would take. Summing in fp32 overflows for no
// fp16 gradient and keeps the host path's one rounding; a division (not a product with 1/N)
// keeps three ranks' results the host's too.
#pragma once

#include "kernels/common/float16.h"
#include "kernels/common/host_device.h"

namespace amp {

AMP_HD inline float rankAverage(float sum, float ranks) { return sum / ranks; }

// The average rounded to the gradient's dtype: code 0 fp32, 1 fp16, 2 bf16 (as amp::DType).
AMP_HD inline float rankAverageRounded(float sum, float ranks, int code) {
  const float a = rankAverage(sum, ranks);
  return code == 1 ? roundToHalf(a) : code == 2 ? roundToBf16(a) : a;
}

}  // namespace amp
