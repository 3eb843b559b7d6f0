// The basic residual block of He et al. (2016), as torchvision's BasicBlock and the CIFAR
// ResNets: y = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), both convolutions 3x3
// without bias, the first one strided. The shortcut is the identity when the shape is kept, else
// a 1x1 strided convolution with BatchNorm ("option B"). Parts are named like the PyTorch peer's
// module (c1, b1, c2, b2, short.0, short.1), so parameters match its state_dict keys:
// "layers.3.c1.weight", "layers.3.short.1.running_mean".
//
// Autocast: the convolutions are on the lower-precision list, batch norm and ReLU pass through,
// and the residual add runs as PyTorch's add: in its inputs' dtype, promoting mixed inputs (a
// 16-bit branch plus an fp32 shortcut gives fp32). Backward sends the add's gradient to both
// branches, each cast to its branch's dtype, and sums the two input gradients in the input's
// dtype, as autograd accumulates a tensor used twice.
//
// Speed: in training steps that record no histograms, batch norm and the ReLU after it run as one
// pass, and so do the second batch norm, the add and the last ReLU; the values are the separate
// ops', bit for bit (tests/unit/test_resnet_layers.cpp).
#pragma once

#include <memory>

#include "engine/nn/activation_layer.h"
#include "engine/nn/batch_norm.h"
#include "engine/nn/conv2d.h"

namespace amp {

class ResidualBlock final : public Layer {
 public:
  ResidualBlock(std::int64_t inChannels, std::int64_t outChannels, std::int64_t stride);
  std::string kind() const override { return "ResidualBlock"; }
  // "ResidualBlock(16 -> 32, s2, 1x1 projection)", "ResidualBlock(16 -> 16, identity)"
  std::string describe() const override;
  Shape outputShape(const Shape& in) const override;
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  std::vector<Parameter*> parameters() override;
  std::vector<std::pair<std::string, Tensor*>> buffers() override;
  void initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) override;
  void releaseSaved() override;
  void setName(std::string n) override;

  std::int64_t inChannels() const { return m_in; }
  std::int64_t outChannels() const { return m_out; }
  std::int64_t stride() const { return m_stride; }
  bool hasProjection() const { return m_shortConv != nullptr; }
  // The convolutions, in forward order (conv1, conv2[, the projection]), for estimates.
  std::vector<const Conv2d*> convolutions() const;

 private:
  // A part's forward or backward, reporting its output (gradient) to the observer under the
  // part's name, as Sequential does for its layers: the histograms then show inside the block.
  Tensor forwardPart(LayerContext& ctx, Layer& part, const Tensor& x);
  Tensor backwardPart(LayerContext& ctx, Layer& part, const Tensor& dy, bool needInputGrad);
  // The training forward with batch norm + ReLU and batch norm + add + ReLU in one backend call
  // each (Backend::batchNormReluForwardTrain): the same values, fewer passes over memory. Used
  // when no observer wants the intermediate tensors; backward is the same either way.
  Tensor forwardFused(LayerContext& ctx, const Tensor& x);

  std::int64_t m_in, m_out, m_stride;
  Conv2d m_c1, m_c2;
  BatchNorm m_b1, m_b2;
  ActivationLayer m_relu1{Activation::ReLU}, m_relu2{Activation::ReLU};
  std::unique_ptr<Conv2d> m_shortConv;  // null for the identity shortcut
  std::unique_ptr<BatchNorm> m_shortBn;
  // The residual add's inputs' dtypes (its backward casts the gradient to each) and output's.
  DType m_branchDtype = DType::F32, m_shortcutDtype = DType::F32, m_sumDtype = DType::F32;
  DType m_inputDtype = DType::F32;
  bool m_forwarded = false;
};

}  // namespace amp
