// SGD (momentum, Nesterov, weight decay) and Adam/AdamW over a model's parameters, as PyTorch's
// torch.optim. State (momentum, moments) is fp32 and allocated on first use, as PyTorch does.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/nn/parameter.h"

namespace amp {

struct OptimizerConfig {
  std::string name = "sgd";  // sgd | adam | adamw
  double lr = 0.01;
  double momentum = 0.0, dampening = 0.0;
  bool nesterov = false;
  double weightDecay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

struct OptimizerStepStats {
  std::int64_t updated = 0;  // elements stepped
  std::int64_t lost = 0;     // non-zero updates that left the weight unchanged (rounding)
  double gradSumOfSquares = 0;  // over the gradients the step read: the global norm, squared
};

class Optimizer {
 public:
  Optimizer(Backend& be, std::vector<Parameter*> params, OptimizerConfig config);

  // Launches one update with learning rate lr (from the schedule) through the backend's
  // multi-tensor steps, which run or skip as Backend::gateStep decided, where the gradients
  // live. Parameters without a gradient are left alone, as in PyTorch.
  void launchStep(double lr);
  // A whole step on its own (no scaler): begin, launch ungated, read the stats, finish.
  OptimizerStepStats step(double lr);
  // Once the step's stats are read: keeps the step, or takes it back when it was skipped (the
  // step count and first-use flags are as if it had never been launched), and reports it.
  OptimizerStepStats finishStep(const StepStats& stats);
  std::int64_t stepCount() const { return m_steps; }
  const OptimizerConfig& config() const { return m_config; }
  const std::vector<Parameter*>& params() const { return m_params; }

  // Checkpoint state: tensors named "<param>.momentum_buffer" / ".exp_avg" / ".exp_avg_sq",
  // and scalars (step).
  std::vector<std::pair<std::string, Tensor*>> stateTensors();
  // The names and shapes (fp32) of the state every parameter gets once stepped, without
  // allocating it: what a checkpoint must hold.
  std::vector<std::pair<std::string, Shape>> stateSpecs() const;
  std::map<std::string, double> stateScalars() const;
  // What a step changes on the host (the step count, which parameters have started), so that a
  // step recorded but never run can be taken back (the trainer's CUDA graph fallback).
  struct HostState {
    std::int64_t steps = 0;
    std::vector<bool> started;
  };
  HostState hostState() const;
  void restoreHostState(const HostState& s);
  // Every parameter's state exists and has been stepped: a step allocates nothing and takes
  // no first-use path, so it is the same launch every time (what a step graph needs).
  bool steady() const;

  // Restores state; allocates the tensors that stateTensors() would name, for loading.
  void prepareStateForLoad();
  void setStateScalars(const std::map<std::string, double>& s);

 private:
  struct ParamState {
    Tensor a, b;  // SGD: a = momentum buffer; Adam: a = exp_avg, b = exp_avg_sq
    bool started = false;
  };
  void ensureState(std::size_t i);
  // Suffixes of a parameter's state tensor names: "momentum_buffer" (SGD with momentum), or
  // "exp_avg" and "exp_avg_sq" (Adam, AdamW); none for plain SGD.
  std::vector<const char*> stateSuffixes() const;

  Backend& m_be;
  std::vector<Parameter*> m_params;
  OptimizerConfig m_config;
  std::vector<ParamState> m_state;
  std::int64_t m_steps = 0;
  // The launched step, until finishStep: elements it updates, and the parameters it used for
  // the first time (a skipped step must not count as their first use).
  std::int64_t m_launchedElements = 0;
  std::vector<std::size_t> m_launchedFirstUse;
  std::vector<std::size_t> m_launchedAllocated;  // state first allocated by the launch
};

// One-line message naming the key, or nothing when usable.
std::optional<std::string> validateOptimizer(const OptimizerConfig& c);

}  // namespace amp
