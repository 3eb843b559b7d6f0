// Loss-scaler configuration: which scaling policy to use and its parameters, with the one-line
// validation messages the config loader and the GradScaler constructor both report.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

namespace amp {

// Dynamic is PyTorch's torch.amp.GradScaler and the default; the others exist to compare against.
enum class ScalerKind {
  Dynamic,      // PyTorch: back off on overflow, grow after growthInterval clean steps, no clamps
  Static,       // Apex loss_scale=N: the scale never changes, but a non-finite step is still skipped
  None,         // no scaling at all: scale 1, nothing is ever skipped (shows fp16 underflow)
  ApexDynamic,  // PyTorch's rules, with the result clamped to [minScale, maxScale]
  Hysteresis,   // DeepSpeed/Megatron: back off only once `hysteresis` overflows have been absorbed
};

struct ScalerConfig {
  ScalerKind kind = ScalerKind::Dynamic;
  double initScale = 65536.0;  // 2^16
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
  int growthInterval = 2000;
  bool enabled = true;
  // Variants only (Dynamic ignores them, as PyTorch has no such knobs).
  double minScale = 1.0;         // floor for ApexDynamic and Hysteresis
  double maxScale = 16777216.0;  // 2^24, Apex's max_loss_scale; ceiling for ApexDynamic
  int hysteresis = 2;            // DeepSpeed's delayed_shift / Megatron's hysteresis
  // fp16 gradients are refused like PyTorch does ("Attempting to unscale FP16 gradients."),
  // except for the pure-fp16 lesson (Apex O3-like), which has no fp32 master gradients.
  bool allowFp16Grads = false;
  // DeepSpeed's consecutive_hysteresis. false (DeepSpeed's and Megatron's default): the hysteresis
  // budget is refilled only when the scale grows; true: refilled by every overflow-free step.
  bool consecutiveHysteresis = false;
};

constexpr std::string_view scalerKindName(ScalerKind kind) {
  switch (kind) {
    case ScalerKind::Dynamic: return "dynamic";
    case ScalerKind::Static: return "static";
    case ScalerKind::None: return "none";
    case ScalerKind::ApexDynamic: return "apex_dynamic";
    case ScalerKind::Hysteresis: return "hysteresis";
  }
  return "?";
}

inline std::optional<ScalerKind> parseScalerKind(std::string_view name) {
  for (ScalerKind k : {ScalerKind::Dynamic, ScalerKind::Static, ScalerKind::None,
                       ScalerKind::ApexDynamic, ScalerKind::Hysteresis}) {
    if (name == scalerKindName(k)) return k;
  }
  return std::nullopt;
}

// Returns a one-line message naming the offending key, or nothing when the config is usable.
// Comparisons are written as !(x > y) so that NaN fails every check. The scale is held in fp32,
// so init_scale is checked after rounding to fp32 (1e39 would become inf, 1e-50 zero).
inline std::optional<std::string> validate(const ScalerConfig& c) {
  const float init32 = static_cast<float>(c.initScale);
  if (!(std::isfinite(init32) && init32 > 0.0f))
    return "scaler.init_scale must be finite and > 0";
  if (!(c.growthFactor > 1.0)) return "scaler.growth_factor must be > 1";
  if (!(c.backoffFactor > 0.0 && c.backoffFactor < 1.0))
    return "scaler.backoff_factor must be in (0, 1)";
  if (c.growthInterval < 1) return "scaler.growth_interval must be >= 1";
  if (!(std::isfinite(c.minScale) && c.minScale > 0.0))
    return "scaler.min_scale must be finite and > 0";
  if (!(c.maxScale >= c.minScale)) return "scaler.max_scale must be >= scaler.min_scale";
  if (c.hysteresis < 1) return "scaler.hysteresis must be >= 1";
  // The bounds only constrain the starting scale for the kinds that enforce them.
  if (c.kind == ScalerKind::ApexDynamic && !(c.initScale >= c.minScale && c.initScale <= c.maxScale))
    return "scaler.init_scale must be in [scaler.min_scale, scaler.max_scale]";
  if (c.kind == ScalerKind::Hysteresis && !(c.initScale >= c.minScale))
    return "scaler.init_scale must be >= scaler.min_scale";
  return std::nullopt;
}

}  // namespace amp
