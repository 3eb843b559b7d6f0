// GradScaler's state machine, following torch/amp/grad_scaler.py: the same checks in the same
// order, so the same misuse produces the same message at the same point.
#include "engine/amp/grad_scaler.h"

#include <climits>
#include <cmath>
#include <stdexcept>

namespace amp {

namespace {

// A state-dict number that must hold an integer (PyTorch stores Python ints there).
int integerEntry(const std::map<std::string, double>& state, const std::string& key, int lowest) {
  const double v = state.at(key);
  if (!(std::isfinite(v) && v == std::floor(v) && v >= lowest && v <= INT_MAX)) {
    throw std::invalid_argument("scaler state dict: \"" + key + "\" must be an integer >= " +
                                std::to_string(lowest));
  }
  return static_cast<int>(v);
}

}  // namespace

GradScaler::GradScaler(const ScalerConfig& config) : m_config(config) {
  // PyTorch asserts its factors only when enabled; a disabled scaler never reads them.
  if (m_config.enabled) {
    if (auto error = validate(m_config)) throw std::invalid_argument(*error);
  }
  m_state = initialScaleState(m_config);
  m_lastEvent.oldScale = m_lastEvent.newScale = scale();
}

float GradScaler::scale() const { return m_config.enabled ? m_state.scale : 1.0f; }

int GradScaler::growthTracker() const { return m_config.enabled ? m_state.growthTracker : 0; }

double GradScaler::scaleLoss(double loss) const {
  if (!m_config.enabled) return loss;
  // outputs * self._scale: an fp32 loss times an fp32 scale is an fp32 product.
  return static_cast<double>(static_cast<float>(loss) * m_state.scale);
}

void GradScaler::unscale(ScalableOptimizer& optimizer) {
  if (!m_config.enabled) return;
  OptimizerState& st = m_perOptimizer[&optimizer];  // created on first use, like the defaultdict
  if (st.stage == Stage::Unscaled) {
    throw std::logic_error(
        "unscale_() has already been called on this optimizer since the last update().");
  }
  if (st.stage == Stage::Stepped) throw std::logic_error("unscale_() is being called after step().");
  // Checked before any gradient is touched: PyTorch raises while collecting the gradients, before
  // the fused unscale runs, and leaves the stage as it was.
  if (!m_config.allowFp16Grads && optimizer.hasFp16Grads()) {
    throw std::logic_error("Attempting to unscale FP16 gradients.");
  }
  // The reciprocal is taken in double and rounded once to fp32 ("FP32 division can be imprecise
  // for certain compile options" in PyTorch). For kind None the scale is 1, so this is a pure
  // inf/NaN check that still feeds the telemetry.
  const float invScale = static_cast<float>(1.0 / static_cast<double>(m_state.scale));
  if (optimizer.hasGrads()) {
    optimizer.unscaleGrads(invScale);
    st.checked = true;
    st.optimizer = &optimizer;
  }
  st.stage = Stage::Unscaled;
}

void GradScaler::step(ScalableOptimizer& optimizer) {
  if (!m_config.enabled) {
    optimizer.step(false);
    return;
  }
  OptimizerState& st = m_perOptimizer[&optimizer];  // std::map references survive inserts
  if (st.stage == Stage::Stepped) {
    throw std::logic_error("step() has already been called since the last update().");
  }
  if (st.stage == Stage::Ready) unscale(optimizer);
  if (!st.checked) throw std::logic_error("No inf checks were recorded for this optimizer.");

  // Kind None is the "no loss scaling" baseline: it applies whatever the gradients hold.
  optimizer.step(m_config.kind != ScalerKind::None);
  st.stage = Stage::Stepped;
}

void GradScaler::update() {
  if (!m_config.enabled) return;
  // found_inf is combined over every optimizer checked this iteration, stepped or only unscaled.
  bool anyChecked = false;
  bool foundInf = false;
  for (const auto& [opt, st] : m_perOptimizer) {
    anyChecked = anyChecked || st.checked;
    foundInf = foundInf || (st.checked && st.optimizer->unscaleOutcome().foundInf);
  }
  if (!anyChecked) throw std::logic_error("No inf checks were recorded prior to update.");
  m_lastEvent = updateScale(m_config, m_state, foundInf);
  m_perOptimizer.clear();
}

void GradScaler::update(float newScale) {
  if (!m_config.enabled) return;
  ScaleEvent e;
  e.kind = ScaleEvent::Manual;
  e.oldScale = m_state.scale;
  // self._scale.fill_(new_scale): no check, and the growth tracker is left alone. Kind None has
  // no scale to set: it stays at 1.
  if (m_config.kind != ScalerKind::None) m_state.scale = newScale;
  e.newScale = m_state.scale;
  for (const auto& [opt, st] : m_perOptimizer)
    e.foundInf = e.foundInf || (st.checked && st.optimizer->unscaleOutcome().foundInf);
  m_lastEvent = e;
  m_perOptimizer.clear();
}

std::optional<UnscaleOutcome> GradScaler::lastUnscale(const ScalableOptimizer& optimizer) const {
  const auto it = m_perOptimizer.find(&optimizer);
  if (it == m_perOptimizer.end() || !it->second.checked) return std::nullopt;
  return it->second.optimizer->unscaleOutcome();
}

std::map<std::string, double> GradScaler::stateDict() const {
  if (!m_config.enabled) return {};
  std::map<std::string, double> state{
      {"scale", static_cast<double>(m_state.scale)},
      {"growth_factor", m_config.growthFactor},
      {"backoff_factor", m_config.backoffFactor},
      {"growth_interval", static_cast<double>(m_config.growthInterval)},
      {"_growth_tracker", static_cast<double>(m_state.growthTracker)},
  };
  if (m_config.kind == ScalerKind::Hysteresis) {
    state["hysteresis_left"] = static_cast<double>(m_state.hysteresisLeft);
  }
  return state;
}

void GradScaler::loadStateDict(const std::map<std::string, double>& state) {
  if (!m_config.enabled) return;
  if (state.empty()) {
    throw std::invalid_argument(
        "The source state dict is empty, possibly because it was saved from a disabled instance "
        "of GradScaler.");
  }
  for (const char* key :
       {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}) {
    if (!state.count(key)) {
      throw std::invalid_argument(std::string("scaler state dict is missing key \"") + key + "\"");
    }
  }
  // Everything is checked before anything is assigned, so a bad dict leaves the scaler intact.
  ScalerConfig config = m_config;
  config.growthFactor = state.at("growth_factor");
  config.backoffFactor = state.at("backoff_factor");
  config.growthInterval = integerEntry(state, "growth_interval", 1);
  if (auto error = validate(config)) throw std::invalid_argument(*error);
  ScaleState next = m_state;
  // Like PyTorch, any tracker value is taken; one at or past growth_interval never grows again
  // (the kernel compares with ==) until an overflow resets it.
  next.growthTracker = integerEntry(state, "_growth_tracker", 0);
  if (m_config.kind != ScalerKind::None) next.scale = static_cast<float>(state.at("scale"));
  next.hysteresisLeft = config.hysteresis;
  if (m_config.kind == ScalerKind::Hysteresis && state.count("hysteresis_left")) {
    next.hysteresisLeft = integerEntry(state, "hysteresis_left", 1);
    if (next.hysteresisLeft > config.hysteresis) {
      throw std::invalid_argument("scaler state dict: \"hysteresis_left\" must be <= " +
                                  std::to_string(config.hysteresis));
    }
  }
  m_config = config;
  m_state = next;
}

}  // namespace amp
