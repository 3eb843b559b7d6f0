// Per-element math of the transformer ops (engine/backend/backend.h, "transformers"), shared by
// the CPU loops and the CUDA kernels so that both evaluate the same fp32 expressions in the same
// order (no contraction on either side: -ffp-contract=off, nvcc --fmad=false). What may still
// differ between the two is the order of the row sums the callers take (mean, variance, the
// softmax's sum and dot product) and expf (glibc vs libdevice, a few ulp); every function here
// is otherwise bit-identical on both.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/float16.h"
#include "kernels/common/host_device.h"

namespace amp {

// The value a store of v into dtype `code` keeps (0 fp32, 1 fp16, 2 bf16: amp::DType's order),
// widened back: how "rounded to the tensor's dtype" is written inside an fp32 computation.
AMP_HD inline float roundTo(int code, float v) {
  return code == 1 ? roundToHalf(v) : code == 2 ? roundToBf16(v) : v;
}

// ---- layer norm (per row of C values, statistics in fp32) ---------------------------------
// mean = sum / C and var = (sum of squared deviations from that mean) / C, the sums the caller's.
AMP_HD inline float rowMean(float sum, std::int64_t count) { return sum / static_cast<float>(count); }
AMP_HD inline float layerNormRstd(float var, float eps) { return 1.f / sqrtf(var + eps); }
AMP_HD inline float layerNormXhat(float x, float mean, float rstd) { return (x - mean) * rstd; }
// y before its rounding to y's dtype.
AMP_HD inline float layerNormOutput(float xhat, float gamma, float beta) {
  return xhat * gamma + beta;
}
// dx before its rounding: g = dy * gamma, meanG = mean(g), meanGXhat = mean(g * xhat) over the row.
AMP_HD inline float layerNormInputGrad(float g, float xhat, float meanG, float meanGXhat,
                                       float rstd) {
  return rstd * (g - meanG - xhat * meanGXhat);
}

// ---- causal softmax (per row i of an (N, T, T) matrix, columns j <= i) -------------------
// The score as the softmax sees it: scores * scale computed in the scores' dtype (PyTorch
// multiplies before the softmax, which then widens it).
AMP_HD inline float causalScore(int scoresCode, float score, float scale) {
  return roundTo(scoresCode, score * scale);
}
// exp(s - max) and its share of the row's sum of them, before the rounding to probs' dtype.
AMP_HD inline float softmaxExp(float s, float rowMax) { return expf(s - rowMax); }
AMP_HD inline float softmaxProb(float e, float rowSum) { return e / rowSum; }
// The softmax's input gradient p * (dp - dot), dot = sum over the row of p * dp.
AMP_HD inline float softmaxInputGrad(float p, float dp, float dot) { return p * (dp - dot); }
// dscores = that gradient rounded to dscores' dtype, times scale, rounded again (the cast back
// to the scores' dtype, then the multiply's backward in it).
AMP_HD inline float causalScoreGrad(int dscoresCode, float p, float dp, float dot, float scale) {
  return roundTo(dscoresCode, roundTo(dscoresCode, softmaxInputGrad(p, dp, dot)) * scale);
}

}  // namespace amp
