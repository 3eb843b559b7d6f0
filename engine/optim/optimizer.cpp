#include "engine/optim/optimizer.h"

#include <cmath>
#include <optional>
#include <stdexcept>

namespace amp {

std::optional<std::string> validateOptimizer(const OptimizerConfig& c) {
  if (c.name != "sgd" && c.name != "adam" && c.name != "adamw")
    return "optimizer.name must be sgd, adam or adamw (got '" + c.name + "')";
  if (!std::isfinite(c.lr) || c.lr < 0) return "optimizer.lr must be a finite number >= 0";
  if (!std::isfinite(c.momentum) || c.momentum < 0) return "optimizer.momentum must be >= 0";
  if (!std::isfinite(c.weightDecay) || c.weightDecay < 0)
    return "optimizer.weight_decay must be >= 0";
  if (c.nesterov && (c.momentum <= 0 || c.dampening != 0))
    return "optimizer.nesterov needs momentum > 0 and zero dampening";
  if (!(c.beta1 >= 0 && c.beta1 < 1)) return "optimizer.beta1 must be in [0, 1)";
  if (!(c.beta2 >= 0 && c.beta2 < 1)) return "optimizer.beta2 must be in [0, 1)";
  if (!(c.eps >= 0) || !std::isfinite(c.eps)) return "optimizer.eps must be >= 0";
  return std::nullopt;
}

Optimizer::Optimizer(Backend& be, std::vector<Parameter*> params, OptimizerConfig config)
    : m_be(be), m_params(std::move(params)), m_config(std::move(config)),
      m_state(m_params.size()) {
  if (auto err = validateOptimizer(m_config)) throw std::invalid_argument(*err);
}

void Optimizer::ensureState(std::size_t i) {
  ParamState& s = m_state[i];
  const Shape& shape = m_params[i]->value.shape();
  if (m_config.name == "sgd") {
    if (m_config.momentum != 0 && !s.a.defined())
      s.a = m_be.zeros(shape, DType::F32, MemCategory::OptimizerState);
  } else if (!s.a.defined()) {
    s.a = m_be.zeros(shape, DType::F32, MemCategory::OptimizerState);
    s.b = m_be.zeros(shape, DType::F32, MemCategory::OptimizerState);
  }
}

OptimizerStepStats Optimizer::step(double lr) {
  OptimizerStepStats stats;
  ++m_steps;
  for (std::size_t i = 0; i < m_params.size(); ++i) {
    Parameter& p = *m_params[i];
    if (!p.grad.defined()) continue;
    ensureState(i);
    ParamState& s = m_state[i];
    if (m_config.name == "sgd") {
      SgdParams sp;
      sp.lr = float(lr);
      sp.momentum = float(m_config.momentum);
      sp.dampening = float(m_config.dampening);
      sp.weightDecay = float(m_config.weightDecay);
      sp.nesterov = m_config.nesterov;
      sp.firstStep = !s.started;
      const UpdateResult r = m_be.sgdStep(p.value, p.grad, s.a.defined() ? &s.a : nullptr, sp);
      stats.lost += r.lost;
      stats.gradSumOfSquares += r.gradSumOfSquares;
    } else {
      AdamParams ap;
      ap.lr = float(lr);
      ap.beta1 = float(m_config.beta1);
      ap.beta2 = float(m_config.beta2);
      ap.eps = float(m_config.eps);
      ap.weightDecay = float(m_config.weightDecay);
      ap.decoupled = m_config.name == "adamw";
      ap.step = m_steps;
      const UpdateResult r = m_be.adamStep(p.value, p.grad, s.a, s.b, ap);
      stats.lost += r.lost;
      stats.gradSumOfSquares += r.gradSumOfSquares;
    }
    s.started = true;
    stats.updated += p.value.numel();
  }
  return stats;
}

std::vector<std::pair<std::string, Tensor*>> Optimizer::stateTensors() {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (std::size_t i = 0; i < m_params.size(); ++i) {
    ParamState& s = m_state[i];
    const std::string& n = m_params[i]->name;
    if (m_config.name == "sgd") {
      if (s.a.defined()) out.emplace_back(n + ".momentum_buffer", &s.a);
    } else if (s.a.defined()) {
      out.emplace_back(n + ".exp_avg", &s.a);
      out.emplace_back(n + ".exp_avg_sq", &s.b);
    }
  }
  return out;
}

std::map<std::string, double> Optimizer::stateScalars() const {
  std::map<std::string, double> m{{"step", double(m_steps)}};
  for (std::size_t i = 0; i < m_state.size(); ++i)
    if (m_state[i].started) m[m_params[i]->name + ".started"] = 1;
  return m;
}

void Optimizer::prepareStateForLoad() {
  for (std::size_t i = 0; i < m_params.size(); ++i) ensureState(i);
}

void Optimizer::setStateScalars(const std::map<std::string, double>& s) {
  auto it = s.find("step");
  if (it == s.end()) throw std::invalid_argument("optimizer state: missing 'step'");
  m_steps = static_cast<std::int64_t>(it->second);
  for (std::size_t i = 0; i < m_params.size(); ++i)
    m_state[i].started = s.count(m_params[i]->name + ".started") > 0;
}

}  // namespace amp
