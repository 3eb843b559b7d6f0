// The scale-update rules of every ScalerKind as pure functions over a small state, so the arithmetic
// can be tested (and explained) apart from GradScaler's per-optimizer state machine.
#pragma once

#include <string_view>

#include "engine/amp/scaler_config.h"
#include "kernels/common/scale_update.h"

namespace amp {

// What one update() did to the scale; the trainer records it so the UI can mark backoffs/growths.
struct ScaleEvent {
  enum Kind {
    None,                // scale unchanged (also: Static/None kinds, even when an overflow was seen)
    Backoff,             // overflow: scale *= backoffFactor
    Growth,              // growthInterval clean steps: scale *= growthFactor
    GrowthRejected,      // the grown scale would not be finite in fp32, so the old one is kept
    Clamped,             // a backoff or growth whose result was moved onto minScale / maxScale
    HysteresisAbsorbed,  // overflow absorbed by the hysteresis budget: step skipped, scale kept
    Manual,              // update(newScale): the scale was set by the caller
  };
  Kind kind = None;
  float oldScale = 1.0f;
  float newScale = 1.0f;
  bool foundInf = false;  // whether any optimizer reported a non-finite gradient this iteration
};

std::string_view scaleEventName(ScaleEvent::Kind kind);

// Everything an update rule reads and writes. The scale is fp32 and the tracker int32, like the
// one-element tensors PyTorch keeps on the device.
struct ScaleState {
  float scale = 65536.0f;
  int growthTracker = 0;   // consecutive overflow-free steps since the last backoff/growth
  int hysteresisLeft = 1;  // Hysteresis only: overflows still to be absorbed before a backoff
};

// The state a scaler of this config starts from (None always runs at scale 1).
ScaleState initialScaleState(const ScalerConfig& config);

// The config's update rule as the plain values the shared code (and the CUDA kernel) reads.
ScaleRule scaleRuleOf(const ScalerConfig& config);

// Applies one iteration's outcome (foundInf over all optimizers) to `state`, following
// config.kind, and reports what happened. `config` is assumed to pass validate().
ScaleEvent updateScale(const ScalerConfig& config, ScaleState& state, bool foundInf);

}  // namespace amp
