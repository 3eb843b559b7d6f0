// Inverted dropout like torch.nn.Dropout(p): in training each element is zeroed with
// probability p and the survivors scaled by 1/(1-p); identity in eval mode or when p == 0.
// "dropout" passes through autocast. The mask depends only on (step seed, layer name), so a
// step is reproducible and every layer and step draws its own mask.
#pragma once

#include "engine/nn/layer.h"

namespace amp {

class Dropout final : public Layer {
 public:
  explicit Dropout(double p = 0.5);
  std::string kind() const override { return "Dropout"; }
  std::string describe() const override;  // "Dropout(p=0.5)"
  Shape outputShape(const Shape& in) const override { return in; }
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  void releaseSaved() override { m_mask = Tensor(); }

  double p() const { return m_p; }
  // The seed of this layer's mask in a step (exposed for tests).
  std::uint64_t maskSeed(std::uint64_t stepSeed) const;

 private:
  double m_p;
  Tensor m_mask;  // uint8, 1 = kept; undefined when the forward was the identity
  DType m_inputDtype = DType::F32;
};

}  // namespace amp
