// Scale-update rules. Dynamic follows ATen's _amp_update_scale_ kernel (AmpKernels.cu,
// amp_update_scale_cuda_kernel) operation for operation; the variants are written as deltas to it.
#include "engine/amp/scale_policies.h"

namespace amp {

namespace {

// The rules themselves live in kernels/common/scale_update.h (applyScaleRule), shared with the
// CUDA kernel that updates the scale on the device. What they do:
// - Dynamic (ATen's _amp_update_scale_): on overflow scale *= backoff (no floor: the scale may
//   fall below 1) and the tracker resets; otherwise the tracker counts clean steps and when the
//   incremented count *equals* growthInterval (a tracker already past it never grows) the scale
//   grows by growthFactor, adopted only if finite in fp32 (2^127 * 2 stays 2^127). ATen
//   multiplies the fp32 scale by a double factor and narrows once (float * float would give
//   different bits for factors such as 0.3 or 1.1).
// - ApexDynamic (Apex's LossScaler): the same counting, then max(min_loss_scale, .) on backoff and
//   min(max_loss_scale, .) on growth. Clamping comes before the finiteness check, so with a finite
//   maxScale an fp32 overflow of the candidate lands on maxScale instead of being rejected.
//   A result moved by a bound is reported as Clamped (also a scale already on the floor).
// - Hysteresis (DeepSpeed's DynamicLossScaler.update_scale; Megatron's DynamicGradScaler):
//   an overflow with more than one unit of hysteresis left spends one and keeps the scale (the
//   step is still skipped; the growth count restarts, since DeepSpeed measures growth from the
//   last overflow iteration, absorbed or not); with one left it backs off, floored at minScale,
//   and the budget stays at 1 until refilled: on growth (consecutive_hysteresis=False, the
//   default), or on every overflow-free step (consecutiveHysteresis=true). DeepSpeed divides by
//   scale_factor where this multiplies by backoffFactor. Two deliberate differences: DeepSpeed
//   raises at min_scale (raise_error_at_min_scale=True), here the scale stays on the floor (event
//   Clamped); and growth keeps PyTorch's fp32-finite check.
static_assert(int(ScaleRuleKind::Dynamic) == int(ScalerKind::Dynamic) &&
              int(ScaleRuleKind::Static) == int(ScalerKind::Static) &&
              int(ScaleRuleKind::None) == int(ScalerKind::None) &&
              int(ScaleRuleKind::ApexDynamic) == int(ScalerKind::ApexDynamic) &&
              int(ScaleRuleKind::Hysteresis) == int(ScalerKind::Hysteresis));
static_assert(int(kScaleNone) == int(ScaleEvent::None) && int(kScaleBackoff) == int(ScaleEvent::Backoff) &&
              int(kScaleGrowth) == int(ScaleEvent::Growth) &&
              int(kScaleGrowthRejected) == int(ScaleEvent::GrowthRejected) &&
              int(kScaleClamped) == int(ScaleEvent::Clamped) &&
              int(kScaleHysteresisAbsorbed) == int(ScaleEvent::HysteresisAbsorbed));

}  // namespace

ScaleRule scaleRuleOf(const ScalerConfig& c) {
  ScaleRule r;
  r.kind = static_cast<ScaleRuleKind>(c.kind);
  r.growthFactor = c.growthFactor;
  r.backoffFactor = c.backoffFactor;
  r.growthInterval = c.growthInterval;
  r.minScale = static_cast<float>(c.minScale);
  r.maxScale = static_cast<float>(c.maxScale);
  r.hysteresis = c.hysteresis;
  r.consecutiveHysteresis = c.consecutiveHysteresis;
  return r;
}

std::string_view scaleEventName(ScaleEvent::Kind kind) {
  switch (kind) {
    case ScaleEvent::None: return "none";
    case ScaleEvent::Backoff: return "backoff";
    case ScaleEvent::Growth: return "growth";
    case ScaleEvent::GrowthRejected: return "growth_rejected";
    case ScaleEvent::Clamped: return "clamped";
    case ScaleEvent::HysteresisAbsorbed: return "hysteresis_absorbed";
    case ScaleEvent::Manual: return "manual";
  }
  return "?";
}

ScaleState initialScaleState(const ScalerConfig& config) {
  ScaleState s;
  s.scale = config.kind == ScalerKind::None ? 1.0f : static_cast<float>(config.initScale);
  s.growthTracker = 0;
  s.hysteresisLeft = config.hysteresis;
  return s;
}

ScaleEvent updateScale(const ScalerConfig& config, ScaleState& state, bool foundInf) {
  ScaleEvent e;
  e.oldScale = state.scale;
  e.foundInf = foundInf;
  ScaleCounters counters{state.scale, state.growthTracker, state.hysteresisLeft};
  e.kind = static_cast<ScaleEvent::Kind>(applyScaleRule(scaleRuleOf(config), counters, foundInf));
  state.scale = counters.scale;
  state.growthTracker = counters.growthTracker;
  state.hysteresisLeft = counters.hysteresisLeft;
  e.newScale = state.scale;
  return e;
}

}  // namespace amp
