// Batch normalisation like torch.nn.BatchNorm1d/2d (affine, track_running_stats): x (N, C) or
// (N, C, H, W). "batch_norm" is on no autocast list: a 16-bit input is normalised with fp32
// parameters and statistics (cuDNN's mixed batch norm) and the output keeps the input's dtype.
// In pure-fp16 mode (model.half()) the parameters and running statistics are fp16 as well;
// statistics are computed in fp32 (double inside the backend) either way.
#pragma once

#include "engine/nn/layer.h"

namespace amp {

class BatchNorm final : public Layer {
 public:
  explicit BatchNorm(std::int64_t features, double eps = 1e-5, double momentum = 0.1);
  std::string kind() const override { return "BatchNorm"; }
  std::string describe() const override;  // "BatchNorm(64)"
  Shape outputShape(const Shape& in) const override;
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  // Training forward followed by ReLU, after adding `residual` when given (its dtype must be the
  // input's: callers check), in one backend call: the output is the ReLU's, bit for bit what
  // forward, add and ReLU give one after another. Backward is this layer's as after forward();
  // the ReLU's (and the add's) bookkeeping is the caller's.
  Tensor forwardRelu(LayerContext& ctx, const Tensor& x, const Tensor* residual);
  // backward() of this layer and the ReLU after it together: dy is the ReLU's output gradient,
  // reluOut its output (Backend::batchNormReluBackward); the ReLU's bookkeeping is the caller's.
  Tensor backwardThroughRelu(LayerContext& ctx, const Tensor& dy, const Tensor& reluOut,
                             bool needInputGrad);
  std::vector<Parameter*> parameters() override { return {&m_weight, &m_bias}; }
  std::vector<std::pair<std::string, Tensor*>> buffers() override;
  void initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) override;
  void releaseSaved() override;

  std::int64_t features() const { return m_features; }

 private:
  Tensor backwardImpl(LayerContext& ctx, const Tensor& dy, const Tensor* reluOut, bool needInputGrad);

  std::int64_t m_features;
  double m_eps, m_momentum;
  Parameter m_weight, m_bias;  // gamma, beta
  Tensor m_runningMean, m_runningVar, m_numBatchesTracked;  // the last: int32, one element
  // Saved by a training forward for backward.
  Tensor m_savedX, m_saveMean, m_saveInvStd;
  DType m_inputDtype = DType::F32;
};

}  // namespace amp
