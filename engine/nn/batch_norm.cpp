#include "engine/nn/batch_norm.h"

#include <stdexcept>

namespace amp {

BatchNorm::BatchNorm(std::int64_t features, double eps, double momentum)
    : m_features(features), m_eps(eps), m_momentum(momentum) {
  if (features <= 0) throw std::invalid_argument("BatchNorm: features must be positive");
  if (!(eps > 0)) throw std::invalid_argument("BatchNorm: eps must be positive");
  if (!(momentum >= 0 && momentum <= 1))
    throw std::invalid_argument("BatchNorm: momentum must be in [0, 1]");
}

std::string BatchNorm::describe() const { return "BatchNorm(" + std::to_string(m_features) + ")"; }

Shape BatchNorm::outputShape(const Shape& in) const {
  // Per sample: (C) as BatchNorm1d, or (C, H, W) as BatchNorm2d.
  if ((in.size() != 1 && in.size() != 3) || in[0] != m_features)
    throw std::invalid_argument("BatchNorm expects (" + std::to_string(m_features) + ") or (" +
                                std::to_string(m_features) + ", H, W) per sample, got " +
                                shapeString(in));
  return in;
}

std::vector<std::pair<std::string, Tensor*>> BatchNorm::buffers() {
  return {{m_name + ".running_mean", &m_runningMean},
          {m_name + ".running_var", &m_runningVar},
          {m_name + ".num_batches_tracked", &m_numBatchesTracked}};
}

void BatchNorm::initialize(Backend& be, Rng&, DType dtype, MemCategory category) {
  // nn.BatchNorm's reset_parameters: gamma = 1, beta = 0, running mean 0 and variance 1. No
  // random draws, so the layers after it get the same weights with or without batch norm.
  const Shape c{m_features};
  m_weight.name = m_name + ".weight";
  m_weight.value = be.empty(c, dtype, category);
  be.fill(m_weight.value, 1.f);
  m_bias.name = m_name + ".bias";
  m_bias.value = be.zeros(c, dtype, category);
  m_runningMean = be.zeros(c, dtype, category);
  m_runningVar = be.empty(c, dtype, category);
  be.fill(m_runningVar, 1.f);
  m_numBatchesTracked = be.zeros({}, DType::I32, category);  // a 0-d tensor, as in PyTorch
}

Tensor BatchNorm::forward(LayerContext& ctx, const Tensor& x) {
  Backend& be = ctx.backend;
  if ((x.rank() != 2 && x.rank() != 4) || x.dim(1) != m_features)
    throw std::invalid_argument(describe() + ": input " + shapeString(x.shape()) +
                                " is not (N, " + std::to_string(m_features) + "[, H, W])");
  m_inputDtype = x.dtype();
  // Runs in the input's dtype (pass-through); the parameters are not cast.
  const DType d = ctx.autocast.computeDtype("batch_norm", {x.dtype()});
  int casts = 0;
  const Tensor xc = castActivation(be, x, d, casts);
  Tensor y = be.empty(x.shape(), d, MemCategory::Activations, x.format());  // the input's format
  const auto eps = static_cast<float>(m_eps);
  if (ctx.training) {
    m_saveMean = be.empty({m_features}, DType::F32, MemCategory::Activations);
    m_saveInvStd = be.empty({m_features}, DType::F32, MemCategory::Activations);
    be.batchNormForwardTrain(xc, m_weight.value, m_bias.value, m_runningMean, m_runningVar,
                             static_cast<float>(m_momentum), eps, y, m_saveMean, m_saveInvStd);
    m_savedX = xc;
    be.incrementInt(m_numBatchesTracked);  // on the device: no host round trip per layer
  } else {
    be.batchNormForwardEval(xc, m_weight.value, m_bias.value, m_runningMean, m_runningVar, eps, y);
    releaseSaved();
  }
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, "batch_norm",
        ctx.autocast.effectivePolicy("batch_norm"), ctx.autocast.enabled(),
        {x.dtype(), m_weight.value.dtype(), m_bias.value.dtype()}, d, d, casts, 0,
        ctx.training ? "batch statistics in fp32" : "running statistics (eval)"};
  });
  return y;
}

Tensor BatchNorm::forwardRelu(LayerContext& ctx, const Tensor& x, const Tensor* residual) {
  Backend& be = ctx.backend;
  if ((x.rank() != 2 && x.rank() != 4) || x.dim(1) != m_features)
    throw std::invalid_argument(describe() + ": input " + shapeString(x.shape()) +
                                " is not (N, " + std::to_string(m_features) + "[, H, W])");
  if (!ctx.training) throw std::logic_error(describe() + ": the fused forward is for training");
  m_inputDtype = x.dtype();
  const DType d = ctx.autocast.computeDtype("batch_norm", {x.dtype()});
  int casts = 0;
  const Tensor xc = castActivation(be, x, d, casts);
  Tensor y = be.empty(x.shape(), d, MemCategory::Activations, x.format());
  m_saveMean = be.empty({m_features}, DType::F32, MemCategory::Activations);
  m_saveInvStd = be.empty({m_features}, DType::F32, MemCategory::Activations);
  be.batchNormReluForwardTrain(xc, m_weight.value, m_bias.value, m_runningMean, m_runningVar,
                               static_cast<float>(m_momentum), static_cast<float>(m_eps), residual,
                               y, m_saveMean, m_saveInvStd);
  m_savedX = xc;
  be.incrementInt(m_numBatchesTracked);  // on the device: no host round trip per layer
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, "batch_norm",
        ctx.autocast.effectivePolicy("batch_norm"), ctx.autocast.enabled(),
        {x.dtype(), m_weight.value.dtype(), m_bias.value.dtype()}, d, d, casts, 0,
        "batch statistics in fp32; fused with the ReLU after it"};
  });
  return y;
}

Tensor BatchNorm::backward(LayerContext& ctx, const Tensor& dyIn, bool needInputGrad) {
  return backwardImpl(ctx, dyIn, nullptr, needInputGrad);
}

Tensor BatchNorm::backwardThroughRelu(LayerContext& ctx, const Tensor& dy, const Tensor& reluOut,
                                      bool needInputGrad) {
  return backwardImpl(ctx, dy, &reluOut, needInputGrad);
}

Tensor BatchNorm::backwardImpl(LayerContext& ctx, const Tensor& dyIn, const Tensor* reluOut,
                               bool needInputGrad) {
  if (!m_savedX.defined())
    throw std::logic_error(describe() + ": backward needs a training-mode forward first");
  Backend& be = ctx.backend;
  const DType d = m_savedX.dtype();
  int casts = 0;
  // dy and dx in the forward's format (dy may come back in another: Flatten's is contiguous).
  const Tensor dy = formatActivation(be, castActivation(be, dyIn, d, casts), m_savedX.format());
  Tensor dx = be.empty(m_savedX.shape(), d, MemCategory::Activations, m_savedX.format());
  Tensor dgamma = be.empty({m_features}, m_weight.value.dtype(), MemCategory::Gradients);
  Tensor dbeta = be.empty({m_features}, m_bias.value.dtype(), MemCategory::Gradients);
  if (reluOut)
    be.batchNormReluBackward(dy, *reluOut, m_savedX, m_weight.value, m_saveMean, m_saveInvStd, dx,
                             dgamma, dbeta);
  else
    be.batchNormBackward(dy, m_savedX, m_weight.value, m_saveMean, m_saveInvStd, dx, dgamma, dbeta);
  accumulateGrad(be, m_weight, std::move(dgamma));
  accumulateGrad(be, m_bias, std::move(dbeta));
  dx = needInputGrad ? castActivation(be, dx, m_inputDtype, casts) : Tensor();
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, m_name, "batch_norm_backward",
        ctx.autocast.policy().policyFor("batch_norm"), false, {dyIn.dtype()}, d,
        needInputGrad ? m_inputDtype : d, casts, 0,
        reluOut ? "gamma/beta grads in their own dtype; the ReLU's backward fused in"
                : "gamma/beta grads in their own dtype"};
  });
  releaseSaved();
  return dx;
}

void BatchNorm::releaseSaved() {
  m_savedX = Tensor();
  m_saveMean = Tensor();
  m_saveInvStd = Tensor();
}

}  // namespace amp
