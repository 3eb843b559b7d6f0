// Scale-update rules. Dynamic follows ATen's _amp_update_scale_ kernel (AmpKernels.cu,
// amp_update_scale_cuda_kernel) operation for operation; the variants are written as deltas to it.
#include "engine/amp/scale_policies.h"

#include <algorithm>
#include <cmath>

namespace amp {

namespace {

// ATen multiplies the fp32 scale by a double factor and narrows the product once. Narrowing the
// factor first (float * float) gives different bits for factors such as 0.3 or 1.1.
float timesFactor(float scale, double factor) {
  return static_cast<float>(static_cast<double>(scale) * factor);
}

// Bounds are compared in the scale's own precision.
float lowerBound(const ScalerConfig& c) { return static_cast<float>(c.minScale); }
float upperBound(const ScalerConfig& c) { return static_cast<float>(c.maxScale); }

// PyTorch: the tracker counts successful steps; growth happens when the incremented count is
// *equal* to the interval (a tracker already past it, e.g. after set_growth_interval, never grows).
// Returns true when this step is a growth step, having reset or advanced the tracker.
bool advanceTracker(const ScalerConfig& c, ScaleState& s) {
  const int successful = s.growthTracker + 1;
  if (successful == c.growthInterval) {
    s.growthTracker = 0;
    return true;
  }
  s.growthTracker = successful;
  return false;
}

// PyTorch's growth: adopt the grown scale only if it is finite in fp32 (2^127 * 2 stays 2^127).
void grow(const ScalerConfig& c, ScaleState& s, ScaleEvent& e) {
  const float candidate = timesFactor(s.scale, c.growthFactor);
  if (std::isfinite(candidate)) {
    s.scale = candidate;
    e.kind = ScaleEvent::Growth;
  } else {
    e.kind = ScaleEvent::GrowthRejected;
  }
}

// Backoff floored at minScale (Apex's min_loss_scale, DeepSpeed's min_scale). Reported as
// Clamped when the floor changed the result, including a scale already sitting on the floor.
void backoffWithFloor(const ScalerConfig& c, ScaleState& s, ScaleEvent& e) {
  const float candidate = timesFactor(s.scale, c.backoffFactor);
  const float floored = std::max(candidate, lowerBound(c));
  e.kind = floored != candidate ? ScaleEvent::Clamped : ScaleEvent::Backoff;
  s.scale = floored;
}

void updateDynamic(const ScalerConfig& c, ScaleState& s, bool foundInf, ScaleEvent& e) {
  if (foundInf) {
    s.scale = timesFactor(s.scale, c.backoffFactor);  // no floor: the scale may fall below 1
    s.growthTracker = 0;
    e.kind = ScaleEvent::Backoff;
  } else if (advanceTracker(c, s)) {
    grow(c, s, e);
  }
}

// Apex's dynamic LossScaler: same counting as PyTorch, then max(min_loss_scale, ·) on backoff and
// min(max_loss_scale, ·) on growth. Clamping comes before the finiteness check, so with a finite
// maxScale an fp32 overflow of the candidate lands on maxScale instead of being rejected.
void updateApexDynamic(const ScalerConfig& c, ScaleState& s, bool foundInf, ScaleEvent& e) {
  if (foundInf) {
    backoffWithFloor(c, s, e);
    s.growthTracker = 0;
  } else if (advanceTracker(c, s)) {
    const float candidate = timesFactor(s.scale, c.growthFactor);
    const float capped = std::min(candidate, upperBound(c));
    if (!std::isfinite(capped)) {
      e.kind = ScaleEvent::GrowthRejected;
    } else {
      e.kind = capped != candidate ? ScaleEvent::Clamped : ScaleEvent::Growth;
      s.scale = capped;
    }
  }
}

// DeepSpeed's DynamicLossScaler.update_scale (Megatron's DynamicGradScaler behaves the same):
// - overflow with more than one unit of hysteresis left: spend one, keep the scale (the step is
//   still skipped); the growth count restarts, since DeepSpeed measures growth from the last
//   overflow iteration, absorbed or not.
// - overflow with one left: back off, floored at minScale. The budget stays at 1, so every further
//   overflow backs off immediately until it is refilled.
// - refill: on growth (consecutive_hysteresis=False, the default), or on every overflow-free step
//   (consecutiveHysteresis=true).
// DeepSpeed counts growth as (iter - last_overflow_iter) % scale_window == 0, which is the same
// as PyTorch's tracker; its backoff divides by scale_factor, here it multiplies by backoffFactor.
// Two deliberate differences: DeepSpeed raises at min_scale (raise_error_at_min_scale=True), here
// the scale stays on the floor (event Clamped); and growth keeps PyTorch's fp32-finite check.
void updateHysteresis(const ScalerConfig& c, ScaleState& s, bool foundInf, ScaleEvent& e) {
  if (foundInf) {
    s.growthTracker = 0;
    if (s.hysteresisLeft > 1) {
      --s.hysteresisLeft;
      e.kind = ScaleEvent::HysteresisAbsorbed;
    } else {
      backoffWithFloor(c, s, e);
    }
    return;
  }
  if (c.consecutiveHysteresis) s.hysteresisLeft = c.hysteresis;
  if (advanceTracker(c, s)) {
    s.hysteresisLeft = c.hysteresis;
    grow(c, s, e);
  }
}

}  // namespace

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
  switch (config.kind) {
    case ScalerKind::Dynamic: updateDynamic(config, state, foundInf, e); break;
    case ScalerKind::ApexDynamic: updateApexDynamic(config, state, foundInf, e); break;
    case ScalerKind::Hysteresis: updateHysteresis(config, state, foundInf, e); break;
    case ScalerKind::Static:  // fixed scale; skipping is GradScaler::step's business
    case ScalerKind::None: break;
  }
  e.newScale = state.scale;
  return e;
}

}  // namespace amp
