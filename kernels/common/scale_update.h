// The loss-scale update rules (PyTorch's _amp_update_scale_ and the variants) as one function over
// plain values, so the host GradScaler and the CUDA kernel that updates the scale on the device
// run the same code and agree bit for bit. engine/amp/scale_policies.cpp explains each rule.
#pragma once

#include <cstdint>

#include "kernels/common/float16.h"
#include "kernels/common/host_device.h"

namespace amp {

// Values as amp::ScalerKind and amp::ScaleEvent::Kind (static_asserts in scale_policies.cpp).
enum class ScaleRuleKind : std::int32_t { Dynamic, Static, None, ApexDynamic, Hysteresis };
enum ScaleUpdateEvent : std::int32_t {
  kScaleNone, kScaleBackoff, kScaleGrowth, kScaleGrowthRejected, kScaleClamped,
  kScaleHysteresisAbsorbed
};

struct ScaleRule {
  ScaleRuleKind kind = ScaleRuleKind::Dynamic;
  double growthFactor = 2.0, backoffFactor = 0.5;
  std::int32_t growthInterval = 2000;
  float minScale = 1.f, maxScale = 16777216.f;  // bounds compared in the scale's precision
  std::int32_t hysteresis = 2;
  bool consecutiveHysteresis = false;
};

// The scale (fp32) and counters (int32), as PyTorch keeps them in one-element device tensors.
struct ScaleCounters {
  float scale = 65536.f;
  std::int32_t growthTracker = 0;
  std::int32_t hysteresisLeft = 1;
};

AMP_HD inline bool isFiniteFloat(float v) {
  return (floatBits(v) & 0x7F800000u) != 0x7F800000u;
}

namespace scale_detail {
// ATen multiplies the fp32 scale by a double factor and narrows the product once.
AMP_HD inline float timesFactor(float scale, double factor) {
  return static_cast<float>(static_cast<double>(scale) * factor);
}
// The tracker counts clean steps; growth when the incremented count *equals* the interval.
AMP_HD inline bool advanceTracker(const ScaleRule& r, ScaleCounters& s) {
  const std::int32_t successful = s.growthTracker + 1;
  if (successful == r.growthInterval) {
    s.growthTracker = 0;
    return true;
  }
  s.growthTracker = successful;
  return false;
}
AMP_HD inline std::int32_t grow(const ScaleRule& r, ScaleCounters& s) {
  const float candidate = timesFactor(s.scale, r.growthFactor);
  if (!isFiniteFloat(candidate)) return kScaleGrowthRejected;
  s.scale = candidate;
  return kScaleGrowth;
}
// Backoff floored at minScale; Clamped when the floor changed the result (std::max's order).
AMP_HD inline std::int32_t backoffWithFloor(const ScaleRule& r, ScaleCounters& s) {
  const float candidate = timesFactor(s.scale, r.backoffFactor);
  const float floored = candidate < r.minScale ? r.minScale : candidate;
  s.scale = floored;
  return floored != candidate ? kScaleClamped : kScaleBackoff;
}
}  // namespace scale_detail

// Applies one iteration's found_inf to `s` and returns what happened (a ScaleUpdateEvent).
AMP_HD inline std::int32_t applyScaleRule(const ScaleRule& r, ScaleCounters& s, bool foundInf) {
  using namespace scale_detail;
  switch (r.kind) {
    case ScaleRuleKind::Dynamic:
      if (foundInf) {
        s.scale = timesFactor(s.scale, r.backoffFactor);  // no floor: may fall below 1
        s.growthTracker = 0;
        return kScaleBackoff;
      }
      return advanceTracker(r, s) ? grow(r, s) : kScaleNone;
    case ScaleRuleKind::ApexDynamic:
      if (foundInf) {
        const std::int32_t e = backoffWithFloor(r, s);
        s.growthTracker = 0;
        return e;
      }
      if (advanceTracker(r, s)) {
        const float candidate = timesFactor(s.scale, r.growthFactor);
        const float capped = r.maxScale < candidate ? r.maxScale : candidate;  // std::min's order
        if (!isFiniteFloat(capped)) return kScaleGrowthRejected;
        s.scale = capped;
        return capped != candidate ? kScaleClamped : kScaleGrowth;
      }
      return kScaleNone;
    case ScaleRuleKind::Hysteresis:
      if (foundInf) {
        s.growthTracker = 0;
        if (s.hysteresisLeft > 1) {
          --s.hysteresisLeft;
          return kScaleHysteresisAbsorbed;
        }
        return backoffWithFloor(r, s);
      }
      if (r.consecutiveHysteresis) s.hysteresisLeft = r.hysteresis;
      if (advanceTracker(r, s)) {
        s.hysteresisLeft = r.hysteresis;
        return grow(r, s);
      }
      return kScaleNone;
    case ScaleRuleKind::Static:
    case ScaleRuleKind::None: break;
  }
  return kScaleNone;
}

}  // namespace amp
