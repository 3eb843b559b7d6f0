// Global average pooling like torch.flatten(F.adaptive_avg_pool2d(x, 1), 1): x (N, C, H, W) ->
// y (N, C), the mean of each plane, summed in fp32. "adaptive_avg_pool2d" is on no autocast
// list (it passes through), so it runs in its input's dtype: under autocast a 16-bit feature map
// gives 16-bit means, which the final Linear then takes as they are.
#pragma once

#include "engine/nn/layer.h"

namespace amp {

class GlobalAvgPool final : public Layer {
 public:
  std::string kind() const override { return "GlobalAvgPool"; }
  std::string describe() const override { return "GlobalAvgPool()"; }
  Shape outputShape(const Shape& in) const override;  // (C, H, W) -> (C)
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;

 private:
  Shape m_inputShape;
  DType m_inputDtype = DType::F32;
  MemoryFormat m_inputFormat = MemoryFormat::Contiguous;  // dx takes it
};

}  // namespace amp
