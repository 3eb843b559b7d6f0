// Max pooling like torch.nn.MaxPool2d(kernel, stride, padding) (-inf padding, floor mode): runs in its
// input's dtype ("max_pool2d" passes through autocast). Ties go to the first maximum in the
// window, as PyTorch's CPU kernel; the winners' indices are kept for backward.
#pragma once

#include "engine/nn/layer.h"

namespace amp {

class MaxPool2d final : public Layer {
 public:
  explicit MaxPool2d(std::int64_t kernel = 2, std::int64_t stride = 2, std::int64_t padding = 0);
  std::string kind() const override { return "MaxPool2d"; }
  std::string describe() const override;  // "MaxPool2d(2, stride 2)"
  Shape outputShape(const Shape& in) const override;
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  void releaseSaved() override;

 private:
  std::int64_t m_kernel, m_stride, m_padding;
  Pool2dGeometry m_geometry;
  Tensor m_argmax;  // int32, per output: the winner's index in its (n, c) plane
  Shape m_inputShape;
  DType m_inputDtype = DType::F32;
  MemoryFormat m_format = MemoryFormat::Contiguous;  // of the input, the output and argmax
};

}  // namespace amp
