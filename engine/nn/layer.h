// Layers of a sequential model. Each runs forward and backward through the backend (never
// touching bytes itself), asks autocast which dtype to compute in, and records trace rows.
// Backward runs in the dtype the forward ran in; a gradient leaves in its tensor's dtype.
#pragma once

#include <functional>

#include <memory>
#include <string>
#include <vector>

#include "engine/amp/autocast.h"
#include "engine/backend/backend.h"
#include "engine/nn/parameter.h"
#include "engine/nn/rounding_check.h"

namespace amp {

// Observes tensors as they flow, for the histograms (set only on steps that record them).
class TensorObserver {
 public:
  virtual ~TensorObserver() = default;
  virtual void activation(const std::string& layer, const Tensor& y) = 0;
  virtual void activationGrad(const std::string& layer, const Tensor& dy) = 0;
  // What rounding to 16 bits did to a gradient a layer computed in 16 bits (Linear, Conv2d):
  // a parameter's gradient, and the input gradient the layer is about to return (which the
  // next activationGrad call receives). Reported only while an observer is set.
  // Whether the layers should measure those counts (they cost an extra op and two histograms
  // per tensor): not when the observer learns them another way (the trainer's fp32 replay).
  virtual bool wantsRoundingCounts() const { return true; }
  virtual void weightGradRounding(const std::string& param, const RoundingCounts& c) {}
  virtual void inputGradRounding(const RoundingCounts& c) {}
  // The gradient the next activationGrad call receives is a sum of several layers' input
  // gradients (a residual block's branches): no one layer's rounding counts describe it, so the
  // pending ones are dropped and it shows as not measured.
  virtual void discardInputGradRounding() {}
};

struct LayerContext {
  Backend& backend;
  Autocast& autocast;
  bool training = true;
  TensorObserver* observer = nullptr;
  std::uint64_t stepSeed = 0;  // dropout masks: reproducible per step
  class Fp8Context* fp8 = nullptr;  // amp.mode=fp8: the Linear layers quantise their GEMMs
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string kind() const = 0;      // "Linear"
  virtual std::string describe() const = 0;  // "Linear(784 -> 256)"
  // Per-sample output shape for a per-sample input shape (validates sizes).
  virtual Shape outputShape(const Shape& in) const = 0;
  virtual Tensor forward(LayerContext& ctx, const Tensor& x) = 0;
  // dy in the dtype of this layer's output; returns dx in the dtype of its input (undefined
  // when !needInputGrad). Parameter gradients are accumulated into Parameter::grad.
  virtual Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) = 0;
  virtual std::vector<Parameter*> parameters() { return {}; }
  // Parameters this layer computes with but another layer owns (a tied weight), under the name
  // a PyTorch state_dict gives them here: exports write them, nothing else counts them twice.
  virtual std::vector<std::pair<std::string, Parameter*>> tiedParameters() { return {}; }
  // Non-trainable state saved in checkpoints (BatchNorm running statistics).
  virtual std::vector<std::pair<std::string, Tensor*>> buffers() { return {}; }
  // Allocates parameters on the backend, in `dtype`, with PyTorch's initialisation.
  virtual void initialize(Backend& be, class Rng& rng, DType dtype, MemCategory category) {}
  virtual void releaseSaved() {}
  // This layer, then (composites) each layer inside it, in model order.
  virtual void forEachLayer(const std::function<void(Layer&)>& visit) { visit(*this); }

  // Composite layers (ResidualBlock) also name their parts, so override to pass the name on.
  virtual void setName(std::string n) { m_name = std::move(n); }
  const std::string& name() const { return m_name; }

 protected:
  std::string m_name;
};

// PyTorch's reset_parameters for Linear and Conv2d: kaiming_uniform_(a=sqrt(5)) gives the
// weight the bound 1/sqrt(fan_in), and the bias is uniform in the same bound; the weight is
// drawn first. Names the parameters "<layer>.weight" and "<layer>.bias" (bias may be null).
void initWeightAndBias(Backend& be, Rng& rng, const std::string& layer, Parameter& weight,
                       const Shape& weightShape, Parameter* bias, std::int64_t fanIn, DType dtype,
                       MemCategory category);

// Adds a computed gradient into p.grad, in p's dtype: the first one becomes p.grad (cast to
// fp32 when the op ran in 16 bits, as the cast's backward does), later ones are summed in.
void accumulateGrad(Backend& be, Parameter& p, Tensor computed);
// Applies p's deferred gradient rounding (Parameter::gradRoundThrough), if any: afterwards
// p.grad holds what an immediate roundThrough would have left. Every reader of .grad other than
// the step's fused passes calls it first.
void settleGrad(Backend& be, Parameter& p);

// Casts an activation to `to` if needed (an autocast-inserted cast), counting it.
Tensor castActivation(Backend& be, const Tensor& x, DType to, int& casts);
// An activation (or its gradient) in `format`: x itself when it is in it, else a converted copy
// counted as an activation. Image layers keep their activations in one format (Conv2d the
// backend's preferred one, the others their input's) and take a gradient in any: Flatten hands
// a channels-last map's gradient back contiguous.
Tensor formatActivation(Backend& be, const Tensor& x, MemoryFormat format);

// The operands of a weighted op (linear, conv2d) as autocast hands them to the kernel: the
// compute dtype, the input and the (cached) weight and bias casts, with the trace counts.
struct AutocastOperands {
  DType dtype = DType::F32;
  std::vector<DType> inputDtypes;  // as received, before any cast
  Tensor x, weight, bias;          // bias undefined when the layer has none
  int casts = 0, cacheHits = 0;
};
AutocastOperands autocastOperands(LayerContext& ctx, const char* op, const Tensor& x,
                                  Parameter& weight, Parameter* bias);
// The forward trace row of such an op.
void recordWeightedForward(LayerContext& ctx, const std::string& layer, const char* op,
                           const AutocastOperands& o);

}  // namespace amp
