// Launchers of AMP Studio's CUDA kernels (one op per .cu file beside this header): raw device
// pointers, element counts and a stream. No CUDA headers are needed to call them: the stream is
// the runtime's opaque handle (cudaStream_t is CUstream_st*). Launchers only enqueue work; the
// caller checks cudaGetLastError() and turns a failure into an exception naming the op.
// Float data is addressed with a dtype code, as amp::DType: 0 fp32, 1 fp16, 2 bf16. Every
// kernel computes in fp32 on widened values and rounds its output once (kernels/common), like
// the CPU backend, so casts, masks, unscaling and optimizer steps agree bit for bit.
#pragma once

#include <cstdint>

#include "kernels/common/activation_math.h"
#include "kernels/common/deferred_rounding.h"
#include "kernels/common/optimizer_math.h"
#include "kernels/common/scale_update.h"
#include "kernels/cuda/device_step_stats.h"

struct CUstream_st;

namespace amp::cuda {

using Stream = CUstream_st*;

// ---- elementwise ---------------------------------------------------------------------------
void launchFill(int code, void* data, std::int64_t n, float value, Stream s);
void launchCast(int srcCode, const void* src, int dstCode, void* dst, std::int64_t n, Stream s);
// Rounds fp32 values to `throughCode` (fp16/bf16) and back, in place.
void launchRoundThrough(float* data, std::int64_t n, int throughCode, Stream s);
void launchAccumulate(int dstCode, void* dst, int srcCode, const void* src, std::int64_t n,
                      Stream s);
void launchScale(int code, void* data, std::int64_t n, float factor, Stream s);
// dst[i] = the data-parallel average of sum[i] over `ranks` (kernels/common/rank_average.h),
// rounded once to dstCode; dst may be sum itself (fp32).
void launchRankAverage(const float* sum, std::int64_t n, float ranks, int dstCode, void* dst, Stream s);
void launchActivationForward(Activation a, int xCode, const void* x, int yCode, void* y,
                             std::int64_t n, Stream s);
// dx = dy * f'(x); x and y share vCode.
void launchActivationBackward(Activation a, int vCode, const void* x, const void* y, int gCode,
                              const void* dy, int dCode, void* dx, std::int64_t n, Stream s);
void launchDropoutForward(int code, const void* x, std::uint8_t* mask, void* y, std::int64_t n,
                          float p, std::uint64_t seed, Stream s);
void launchDropoutBackward(int code, const void* dy, const std::uint8_t* mask, void* dx,
                           std::int64_t n, float p, Stream s);

// ---- residual networks (residual.cu) --------------------------------------------------------
// y = a + b over n elements, each input widened exactly, the fp32 sum rounded once to yCode.
void launchAdd(int aCode, const void* a, int bCode, const void* b, int yCode, void* y,
               std::int64_t n, Stream s);
// y (planes) = each plane of x (planes, planeSize) summed in fp32 in element order, / planeSize.
void launchGlobalAvgPoolForward(int xCode, const void* x, int yCode, void* y,
                                std::int64_t planes, std::int64_t planeSize, Stream s);
// dx (planes, planeSize) = dy (planes) / planeSize, rounded once to dxCode.
void launchGlobalAvgPoolBackward(int dyCode, const void* dy, int dxCode, void* dx,
                                 std::int64_t planes, std::int64_t planeSize, Stream s);

// dst row i = src row rows[i] (rowBytes each): a batch from a data set kept on the device.
void launchGatherRows(const void* src, const std::int32_t* rows, std::int64_t count,
                      std::int64_t rowBytes, void* dst, Stream s);

// ---- GEMM helpers (the GEMM itself is cuBLASLt, cublaslt_gemm.h) ---------------------------
// db (n) = column sums of dy (m, n) in fp32 (kernels/common/bias_grad_order.h), rounded to
// db's dtype. partials: biasGradPartialFloats(m, n) floats of workspace for the two-pass form
// that spreads few columns over many rows across the device (bias_grad.cu), or null.
std::size_t biasGradPartialFloats(std::int64_t m, std::int64_t n);
void launchBiasGrad(int dyCode, const void* dy, std::int64_t m, std::int64_t n, int dbCode,
                    void* db, Stream s, float* partials = nullptr);
// c (m, n) fp32 += bias (n), for outputs the cuBLASLt epilogue does not cover.
void launchBiasAdd(int biasCode, const void* bias, float* c, std::int64_t m, std::int64_t n,
                   Stream s);

// ---- losses and accuracy (fp32 math on widened inputs) -------------------------------------
// probs (m, c) fp32; rowLoss (m) double; badLabel set to 1 + the row of a label out of range.
// warpPerRow: a warp per row (cross_entropy.cu says why); else a thread per row.
void launchCrossEntropyForward(int code, const void* logits, const std::int32_t* labels,
                               std::int64_t m, std::int64_t c, float* probs, double* rowLoss,
                               int* badLabel, Stream s, bool warpPerRow = true);
void launchCrossEntropyBackward(const float* probs, const std::int32_t* labels, std::int64_t m,
                                std::int64_t c, float k, int gCode, void* dlogits, Stream s,
                                const float* kOnDevice = nullptr);
// *sum (zeroed by the caller) += sum of (pred - target)^2 in double.
void launchMseForward(int code, const void* pred, const float* target, std::int64_t n,
                      double* sum, Stream s);
void launchMseBackward(int pCode, const void* pred, const float* target, std::int64_t n, float k,
                       int gCode, void* dpred, Stream s, const float* kOnDevice = nullptr);
// *count (zeroed by the caller) += rows whose first argmax equals the label.
void launchCountCorrect(int code, const void* logits, const std::int32_t* labels, std::int64_t m,
                        std::int64_t c, unsigned long long* count, Stream s);

// ---- reductions and telemetry ---------------------------------------------------------------
void launchCountNonFinite(int code, const void* data, std::int64_t n, unsigned long long* count,
                          Stream s);
void launchSumOfSquares(int code, const void* data, std::int64_t n, double* sum, Stream s);
// counts: kHistogramSlots zeroed by the caller: the kHistBins bin counts, then underflow,
// subnormal, overflow and nonFinite (the total is n). A power-of-two multiplier 2^shift bins from the
// bits (exact); any other multiplies in double, as the CPU does.
constexpr int kHistogramSlots = 58 + 3 + 4;
void launchHistogram(int code, const void* data, std::int64_t n, double multiplier,
                     bool powerOfTwo, int shift, unsigned long long* counts, Stream s);

// ---- the multi-tensor AMP step --------------------------------------------------------------
// One entry per parameter; `table` is a device copy of `count` entries, maxN the largest n.
// The launches cover (blocks along the largest tensor) x (one grid row per tensor).
struct MultiTensorEntry {
  void* param = nullptr;     // the weight (paramCode)
  void* grad = nullptr;      // its gradient (gradCode)
  float* stateA = nullptr;   // momentum buffer / exp_avg (fp32), or null
  float* stateB = nullptr;   // exp_avg_sq (fp32), or null
  std::int64_t n = 0;
  int paramCode = 0, gradCode = 0;
  // A deferred rounding of an fp32 grad through fp16 (1) or bf16 (2), applied as the kernel reads
  // it (kernels/common/deferred_rounding.h); 0: none.
  int roundCode = 0;
  // The optimizer steps only: a 16-bit copy of the weight (fp16 1, bf16 2) that the step writes
  // with the new value's rounding, beside the weight itself (Parameter::lowCopy); null: none.
  void* lowCopy = nullptr;
  int lowCode = 0;
};

// The per-step scalars below (the loss gradient's factor, 1/scale, the optimizer's scalars, the
// scale counters) may also come from device memory: a *OnDevice pointer, when given, is read by
// the kernel instead of the value. A CUDA graph of the training step passes its slots there, so
// a replay uses this step's values, not those of the step it was captured from
// (engine/backend/cuda_step_graph.h).
void launchBeginStep(DeviceStepStats* stats, Stream s);
// _amp_foreach_non_finite_check_and_unscale_ on the entries' grads, in list order.
void launchUnscaleAndCheck(const MultiTensorEntry* table, int count, std::int64_t maxN,
                           float invScale, DeviceStepStats* stats, Stream s,
                           const float* invScaleOnDevice = nullptr);
// clip_grad_norm_: the norm is the unscaled gradients' (useUnscaledSum, no second read) or
// measured here; when finite, gradients are scaled by float(maxNorm / (norm + 1e-6)) if < 1.
void launchClipGradNorm(const MultiTensorEntry* table, int count, std::int64_t maxN,
                        double maxNorm, bool useUnscaledSum, DeviceStepStats* stats, Stream s);
void launchGateStep(bool skipIfFoundInf, bool skipIfNonFiniteAfterUnscale,
                    DeviceStepStats* stats, Stream s);
struct SgdScalars {
  float lr = 0, weightDecay = 0, momentum = 0, keep = 1;  // keep = 1 - dampening
  bool nesterov = false, firstStep = false;
};
void launchSgdStep(const MultiTensorEntry* table, int count, std::int64_t maxN,
                   const SgdScalars& p, DeviceStepStats* stats, Stream s,
                   const SgdScalars* pOnDevice = nullptr);
void launchAdamStep(const MultiTensorEntry* table, int count, std::int64_t maxN,
                    const AdamScalars& p, DeviceStepStats* stats, Stream s,
                    const AdamScalars* pOnDevice = nullptr);
// A training loss into the step's record instead of back to the host: the row losses (m, in
// double) summed in row order and divided by m; or the MSE sum launchMseForward left in
// stats->mseSum, divided by n.
// blocked: kernels/common/row_sum_order.h's order on one block; else one thread in row order.
void launchAddRowLossesToStep(const double* rowLoss, std::int64_t m, DeviceStepStats* stats,
                              Stream s, bool blocked = true);
void launchAddMseToStep(std::int64_t n, DeviceStepStats* stats, Stream s);
// _amp_update_scale_ with the step's found_inf; the result lands in stats->scale.
void launchUpdateScale(const ScaleRule& rule, const ScaleCounters& current,
                       DeviceStepStats* stats, Stream s,
                       const ScaleCounters* currentOnDevice = nullptr);
// A 0-d int32 counter += 1 on the device (BatchNorm's num_batches_tracked), so a training step
// needs no round trip through the host for it.
void launchIncrementInt(std::int32_t* counter, Stream s);

}  // namespace amp::cuda
