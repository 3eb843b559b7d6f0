// Elementwise activations (ReLU, Tanh, Sigmoid, GELU): not on any autocast list, so they run in
// their input's dtype, forward and backward.
#pragma once

#include "engine/nn/layer.h"

namespace amp {

std::string_view activationName(Activation a);  // "relu"
std::optional<Activation> parseActivation(std::string_view s);

class ActivationLayer final : public Layer {
 public:
  explicit ActivationLayer(Activation a) : m_act(a) {}
  std::string kind() const override;
  std::string describe() const override { return kind() + "()"; }
  Shape outputShape(const Shape& in) const override { return in; }
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  void releaseSaved() override;
  Activation activation() const { return m_act; }
  // A ReLU whose output `y` an earlier op computed with it (BatchNorm::forwardRelu): records the
  // trace row forward() would and keeps y for backward, which then runs as after forward().
  void adoptOutput(LayerContext& ctx, DType inputDtype, const Tensor& y);
  // A ReLU whose backward the next op computes with its own (BatchNorm::backwardThroughRelu):
  // hands over the saved output, records the trace row backward() would, releases the rest.
  Tensor takeOutputForFusedBackward(LayerContext& ctx, const Tensor& dy);

 private:
  Activation m_act;
  Tensor m_savedX, m_savedY;
};

// Reshapes (batch, ...) to (batch, features); a view, no copy.
class Flatten final : public Layer {
 public:
  std::string kind() const override { return "Flatten"; }
  std::string describe() const override { return "Flatten()"; }
  Shape outputShape(const Shape& in) const override { return {shapeNumel(in)}; }
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;

 private:
  Shape m_inputShape;
};

}  // namespace amp
