// What one training step reports: the scalars every chart plots, the scaler's decision, memory,
// and (every K steps) exponent histograms per layer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/amp/fp8_record.h"
#include "engine/core/dtype.h"
#include "engine/core/memory_tracker.h"
#include "engine/telemetry/exponent_histogram.h"

namespace amp {

// Weight: a parameter's values (the PyTorch probe records them; AMP Studio's own runs do not).
enum class HistogramKind : std::uint8_t { WeightGrad, ActivationGrad, Activation, Weight };
std::string_view histogramKindName(HistogramKind k);  // "weight_grad", ...

struct HistogramRecord {
  std::string tensor;  // "2.weight" for weight grads, layer "2" for activations
  HistogramKind kind = HistogramKind::WeightGrad;
  DType dtype = DType::F32;     // dtype the values were stored in
  ExponentHistogram scaled;     // values as stored (gradients still multiplied by the scale)
  ExponentHistogram unscaled;   // values / scale: what they are without loss scaling
  // What rounding to `dtype` did to the values: how many were non-zero before it and exactly
  // zero after (flushed), or finite before and inf after. Counted against the same product
  // computed with fp32 output, for tensors a layer computes in 16 bits; -1: not measured.
  std::int64_t flushedToZero = -1;
  std::int64_t roundedToInf = -1;
};

struct StepMetrics {
  std::int64_t step = 0;  // 1-based optimizer step
  int epoch = 0;          // 0-based epoch the step's last batch came from
  bool epochEnd = false;  // this step used the epoch's last batch
  double loss = 0;        // mean criterion loss of the step (before loss_weight and scaling)
  float scale = 1;        // loss scale used for this step's backward
  float scaleAfter = 1;   // scale after update(): what the next step uses
  int growthTracker = 0;  // after update()
  bool skipped = false;   // optimizer step skipped (non-finite gradients)
  std::string scaleEvent; // "", "backoff", "growth", "growth_rejected", "clamped", "hysteresis"
  double gradNorm = 0;    // global L2 norm after unscale, before clipping (inf/nan if so)
  bool clipped = false;
  double lr = 0;          // learning rate the optimizer used (or would have used)
  bool schedulerStepOnSkip = false;  // the schedule advanced although the step was skipped
  double stepMs = 0;
  double samplesPerS = 0;
  int threads = 0;        // OpenMP threads the CPU step ran on (engine/train/step_thread_tuner.h); 0 on a GPU
  double gemmGflops = 0;  // GEMM throughput inside the step
  MemorySnapshot memory;
  std::string firstNonFinite;       // parameter whose gradient was non-finite first (backward order)
  bool injected = false;            // a fault was injected this step
  bool postUnscaleOverflow = false; // finite before unscale, non-finite after (scale < 1)
  double lostUpdateFrac = 0;        // updates smaller than half an ulp of their weight
  std::optional<double> testLoss, testAcc, trainAcc;
  bool diverged = false;
  std::string divergence;           // "step 812: non-finite loss; first non-finite tensor: ..."
  // Data-parallel runs (engine/dist): the ranks, the gradient all-reduce's share of this rank's
  // step, and each rank's own throughput (its samples over its step time), rank by rank.
  int ranks = 1;
  double allreduceMs = 0;
  std::vector<double> rankSamplesPerS;
  std::vector<HistogramRecord> histograms;
  // amp.mode=fp8: every quantised tensor of this step (engine/amp/fp8_record.h).
  std::vector<Fp8TensorRecord> fp8;
};

struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;
  std::int64_t samples = 0;
};

}  // namespace amp
