// torch.nn.LayerNorm over the last dimension (weight 1, bias 0 at the start). On autocast's fp32
// list: a 16-bit input is widened as the kernel reads it and the output is fp32; moved to the
// 16-bit list (the "what if" lesson) the output and the weight and bias copies are 16-bit, while
// the statistics stay fp32 inside the kernel, as PyTorch's.
#pragma once

#include "engine/nn/layer.h"

namespace amp {

class LayerNorm final : public Layer {
 public:
  explicit LayerNorm(std::int64_t width, float eps = 1e-5f);
  std::string kind() const override { return "LayerNorm"; }
  std::string describe() const override;
  Shape outputShape(const Shape& in) const override;
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  // forward(a + b) with the residual add before it in the same pass (Backend::addLayerNormForward:
  // the same bits as add, then forward): `sum` receives a + b in sumDtype (the promoted add's
  // dtype), the caller's residual stream. The add's trace row is the caller's.
  Tensor forwardSum(LayerContext& ctx, const Tensor& a, const Tensor& b, DType sumDtype, Tensor& sum);
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  std::vector<Parameter*> parameters() override { return {&m_weight, &m_bias}; }
  void initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) override;
  void releaseSaved() override;

 private:
  // forward's work on x (M, C), or on a + b into *sum when a is given.
  Tensor run(LayerContext& ctx, const Tensor& x, const Tensor* a, const Tensor* b, Tensor* sum,
             const Shape& shape);
  std::int64_t m_width;
  float m_eps;
  Parameter m_weight, m_bias;
  Tensor m_savedX, m_savedGamma, m_mean, m_rstd;
  DType m_inputDtype = DType::F32, m_computeDtype = DType::F32;
  Shape m_inputShape;
};

}  // namespace amp
