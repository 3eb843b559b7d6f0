// A weight gradient's deferred rounding (Parameter::gradRoundThrough in the engine): a 16-bit
// GEMM's dW is the fp32 product rounded once to fp16/bf16 and widened back into the fp32 .grad.
// Where the step's first pass over the gradients reads them anyway (the unscale, or the
// optimizer when nothing unscales), that pass applies the rounding as it reads, instead of a
// pass of its own that reads and writes every gradient once more (0.18 ms of a 1.8 ms fp16
// step of the recipe on an H200). Shared by the CUDA kernels and the CPU tests of them.
#pragma once

#include "kernels/common/float16.h"
#include "kernels/common/host_device.h"

namespace amp {

// roundCode: 0 none (fp32 .grad as it is), 1 fp16, 2 bf16 (the dtype codes of the kernels).
// The value roundThrough(grad, dtype) leaves: an fp16 overflow becomes inf here too, so the
// unscale's check then finds it exactly as it would after a separate rounding pass.
AMP_HD inline float settledGrad(float g, int roundCode) {
  return roundCode == 1 ? roundToHalf(g) : roundCode == 2 ? roundToBf16(g) : g;
}

// What the fused unscale stores back into an fp32 gradient, and whether it stores at all: the
// unfused passes (roundThrough, then x * invScale, skipped when invScale is 1 to keep NaN
// payloads) leave exactly this.
AMP_HD inline bool unscaleStores(float invScale, int roundCode) {
  return invScale != 1.f || roundCode != 0;
}

}  // namespace amp
