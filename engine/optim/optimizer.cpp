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
  Tensor* tensors[] = {&m_state[i].a, &m_state[i].b};
  const std::size_t count = stateSuffixes().size();
  for (std::size_t k = 0; k < count; ++k)
    if (!tensors[k]->defined())
      *tensors[k] = m_be.zeros(m_params[i]->value.shape(), DType::F32, MemCategory::OptimizerState);
}

void Optimizer::launchStep(double lr) {
  ++m_steps;
  m_launchedElements = 0;
  m_launchedFirstUse.clear();
  m_launchedAllocated.clear();
  // SGD's first use of a momentum buffer seeds it with the gradient, so parameters on their
  // first step go in a list of their own.
  std::vector<Tensor*> params[2], grads[2], stateA[2], stateB[2];
  // Deferred gradient roundings (Parameter::gradRoundThrough) travel with the lists: the
  // optimizer's read of the gradient applies them (the gradient in memory keeps awaiting it).
  std::vector<DType> rounds[2];
  // Each fp32 master's 16-bit copy that autocast keeps (Parameter::lowCopy): the step writes
  // the new master's rounding into it, so the next forward casts nothing.
  std::vector<Tensor*> copies[2];
  for (std::size_t i = 0; i < m_params.size(); ++i) {
    Parameter& p = *m_params[i];
    if (!p.grad.defined()) continue;
    if (!m_state[i].a.defined() && !stateSuffixes().empty()) m_launchedAllocated.push_back(i);
    ensureState(i);
    ParamState& s = m_state[i];
    const int first = s.started ? 0 : 1;
    if (!s.started) m_launchedFirstUse.push_back(i);
    s.started = true;
    params[first].push_back(&p.value);
    grads[first].push_back(&p.grad);
    rounds[first].push_back(p.gradRoundThrough);
    const bool copy = p.lowCopy.tensor.defined() && p.lowCopy.master == p.value.id() &&
                      p.value.dtype() == DType::F32;
    copies[first].push_back(copy ? &p.lowCopy.tensor : nullptr);
    stateA[first].push_back(s.a.defined() ? &s.a : nullptr);
    stateB[first].push_back(s.b.defined() ? &s.b : nullptr);
    m_launchedElements += p.value.numel();
  }
  if (m_config.name == "sgd") {
    SgdParams sp;
    sp.lr = float(lr);
    sp.momentum = float(m_config.momentum);
    sp.dampening = float(m_config.dampening);
    sp.weightDecay = float(m_config.weightDecay);
    sp.nesterov = m_config.nesterov;
    for (int first = 0; first < 2; ++first) {
      if (params[first].empty()) continue;
      sp.firstStep = first == 1;
      m_be.foreachSgdStep(params[first], grads[first], stateA[first], sp, rounds[first],
                          copies[first]);
    }
  } else {
    AdamParams ap;
    ap.lr = float(lr);
    ap.beta1 = float(m_config.beta1);
    ap.beta2 = float(m_config.beta2);
    ap.eps = float(m_config.eps);
    ap.weightDecay = float(m_config.weightDecay);
    ap.decoupled = m_config.name == "adamw";
    ap.step = m_steps;
    for (int first = 0; first < 2; ++first)
      if (!params[first].empty())
        m_be.foreachAdamStep(params[first], grads[first], stateA[first], stateB[first], ap,
                             rounds[first], copies[first]);
  }
}

OptimizerStepStats Optimizer::step(double lr) {
  m_be.beginStep();
  m_be.gateStep({});
  launchStep(lr);
  return finishStep(m_be.readStepStats());
}

OptimizerStepStats Optimizer::finishStep(const StepStats& stats) {
  OptimizerStepStats out;
  if (!stats.stepped) {
    --m_steps;
    for (std::size_t i : m_launchedFirstUse) m_state[i].started = false;
    // State made for this launch was never touched (the device skipped the step): let it go, so
    // that, as in PyTorch, optimizer state exists only once a step has really been taken and
    // the memory chart does not show it after skipped steps.
    for (std::size_t i : m_launchedAllocated) m_state[i].a = m_state[i].b = Tensor();
  } else {
    out.updated = m_launchedElements;
    out.lost = stats.lost;
    out.gradSumOfSquares = stats.stepGradSumOfSquares;
  }
  m_launchedElements = 0;
  m_launchedFirstUse.clear();
  m_launchedAllocated.clear();
  return out;
}

Optimizer::HostState Optimizer::hostState() const {
  HostState s;
  s.steps = m_steps;
  for (const ParamState& p : m_state) s.started.push_back(p.started);
  return s;
}

void Optimizer::restoreHostState(const HostState& s) {
  if (s.started.size() != m_state.size())
    throw std::logic_error("restoreHostState: the state is another optimizer's");
  m_steps = s.steps;
  for (std::size_t i = 0; i < m_state.size(); ++i) m_state[i].started = s.started[i];
  m_launchedElements = 0;
  m_launchedFirstUse.clear();
  m_launchedAllocated.clear();
}

bool Optimizer::steady() const {
  const std::size_t tensors = stateSuffixes().size();
  for (const ParamState& p : m_state)
    if (!p.started || (tensors > 0 && !p.a.defined()) || (tensors > 1 && !p.b.defined()))
      return false;
  return !m_state.empty();
}

std::vector<const char*> Optimizer::stateSuffixes() const {
  if (m_config.name == "sgd") return m_config.momentum != 0 ? std::vector<const char*>{"momentum_buffer"}
                                                             : std::vector<const char*>{};
  return {"exp_avg", "exp_avg_sq"};
}

std::vector<std::pair<std::string, Tensor*>> Optimizer::stateTensors() {
  std::vector<std::pair<std::string, Tensor*>> out;
  const auto suffixes = stateSuffixes();
  for (std::size_t i = 0; i < m_params.size(); ++i) {
    Tensor* tensors[] = {&m_state[i].a, &m_state[i].b};
    for (std::size_t k = 0; k < suffixes.size(); ++k)
      if (tensors[k]->defined()) out.emplace_back(m_params[i]->name + "." + suffixes[k], tensors[k]);
  }
  return out;
}

std::vector<std::pair<std::string, Shape>> Optimizer::stateSpecs() const {
  std::vector<std::pair<std::string, Shape>> out;
  const auto suffixes = stateSuffixes();
  for (const Parameter* p : m_params)
    for (const char* s : suffixes) out.emplace_back(p->name + "." + s, p->value.shape());
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
