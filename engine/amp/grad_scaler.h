// GradScaler: PyTorch's torch.amp.GradScaler (dynamic loss scaling) without tensors. It drives an
// optimizer through ScalableOptimizer and keeps PyTorch's per-optimizer READY -> UNSCALED -> STEPPED
// stages, error messages and fp32/int32 arithmetic, plus the variants of ScalerKind.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "engine/amp/scale_policies.h"
#include "engine/amp/scaler_config.h"

namespace amp {

struct UnscaleOutcome { bool foundInf = false; int firstNonFinite = -1; };  // index of first param with a non-finite grad

// Implemented by the trainer's optimizer adaptor. As PyTorch's fused AMP path, found_inf stays
// where the gradients live: unscaling records it there, the step skips itself there, and the
// outcome is read (once per iteration, a synchronisation on a GPU) only when the scaler needs it.
class ScalableOptimizer {
 public:
  virtual ~ScalableOptimizer() = default;
  virtual bool hasFp16Grads() const = 0;  // any gradient stored as fp16
  virtual bool hasGrads() const = 0;      // any parameter has a gradient
  // Multiplies every grad by invScale and records whether any was non-finite (checked before
  // multiplying), without reporting it.
  virtual void unscaleGrads(float invScale) = 0;
  // The real optimizer step; with skipIfFoundInf it does nothing when the recorded found_inf is
  // set (PyTorch's _step_supports_amp_scaling optimizers read found_inf themselves).
  virtual void step(bool skipIfFoundInf) = 0;
  // What the last unscaleGrads recorded.
  virtual UnscaleOutcome unscaleOutcome() const = 0;
};

// Typical iteration (order matters, as in PyTorch):
//   backward(scaler.scaleLoss(loss)); [scaler.unscale(opt); clip;] scaler.step(opt); scaler.update();
// State-machine misuse throws std::logic_error with PyTorch's message; a config or state dict that
// cannot be used throws std::invalid_argument naming the key.
class GradScaler {
 public:
  explicit GradScaler(const ScalerConfig& config = {});

  bool isEnabled() const { return m_config.enabled; }
  ScalerKind kind() const { return m_config.kind; }
  const ScalerConfig& config() const { return m_config; }

  // Like get_scale(): 1.0 when disabled (and always for kind None).
  float scale() const;
  int growthTracker() const;
  int hysteresisLeft() const { return m_state.hysteresisLeft; }

  // scale(loss): the loss rounded to fp32 times the fp32 scale, in fp32. Disabled: loss unchanged.
  double scaleLoss(double loss) const;

  // unscale_(opt): multiplies the optimizer's gradients by fp32(1 / double(scale)) and records
  // whether any was non-finite. At most once per optimizer between update()s, and not after step().
  void unscale(ScalableOptimizer& optimizer);

  // step(opt): unscales first unless unscale() was already called, then runs optimizer.step(),
  // which skips itself if a non-finite gradient was recorded (kind None never skips). Whether it
  // ran is the optimizer's to report: it may be known only on a device until the outcome is read.
  void step(ScalableOptimizer& optimizer);

  // update(): applies the iteration's combined found-inf to the scale (see scale_policies.h) and
  // makes every optimizer READY again. update(newScale) sets the scale instead, keeping the tracker.
  void update();
  void update(float newScale);

  // What the last update() did; kind None with oldScale == newScale before the first one.
  const ScaleEvent& lastEvent() const { return m_lastEvent; }

  // The unscale result recorded for this optimizer since the last update() (for skipped-step
  // attribution), or nothing if its gradients have not been checked in this iteration.
  std::optional<UnscaleOutcome> lastUnscale(const ScalableOptimizer& optimizer) const;

  // PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker; empty
  // when disabled. Kind Hysteresis adds "hysteresis_left".
  std::map<std::string, double> stateDict() const;
  // Loads a dict from stateDict() (or PyTorch's state_dict()). No-op when disabled. Variant keys
  // are optional: a dict without "hysteresis_left" starts with the full hysteresis budget.
  void loadStateDict(const std::map<std::string, double>& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerState {
    Stage stage = Stage::Ready;
    // PyTorch's found_inf_per_device is empty when the optimizer had no gradients at all; this
    // flag plays that role ("No inf checks were recorded ...").
    bool checked = false;
    const ScalableOptimizer* optimizer = nullptr;  // to ask for the outcome when it is needed
  };

  ScalerConfig m_config;
  ScaleState m_state;
  ScaleEvent m_lastEvent;
  // Keyed by the optimizer's address, as PyTorch keys by id(optimizer): an optimizer destroyed and
  // replaced at the same address before update() would share the entry, exactly as in PyTorch.
  std::map<const ScalableOptimizer*, OptimizerState> m_perOptimizer;
};

}  // namespace amp
