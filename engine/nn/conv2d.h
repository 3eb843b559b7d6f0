// 2-D convolution like torch.nn.Conv2d (groups 1, dilation 1, square kernel, equal padding on
// every side): W (out, in, k, k), b (out); x (N, in, H, W) -> y (N, out, OH, OW). On autocast's
// lower-precision list ("conv2d"), as linear is.
#pragma once

#include "engine/nn/layer.h"

namespace amp {

class Conv2d final : public Layer {
 public:
  Conv2d(std::int64_t inChannels, std::int64_t outChannels, std::int64_t kernel = 3,
         std::int64_t padding = 1, std::int64_t stride = 1, bool bias = true);
  std::string kind() const override { return "Conv2d"; }
  std::string describe() const override;  // "Conv2d(1 -> 32, k3, p1)"
  Shape outputShape(const Shape& in) const override;
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  std::vector<Parameter*> parameters() override;
  void initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) override;
  void releaseSaved() override;

  std::int64_t inChannels() const { return m_in; }
  std::int64_t outChannels() const { return m_out; }
  std::int64_t kernelSize() const { return m_kernel; }
  bool hasBias() const { return m_hasBias; }

 private:
  Conv2dGeometry geometry(const Tensor& x) const;

  std::int64_t m_in, m_out, m_kernel, m_padding, m_stride;
  bool m_hasBias;
  Parameter m_weight, m_bias;
  // Saved by forward for backward: the input and weight as the convolution saw them.
  Tensor m_savedX, m_savedW;
  Conv2dGeometry m_geometry;
  DType m_inputDtype = DType::F32;
};

}  // namespace amp
