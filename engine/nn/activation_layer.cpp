#include "engine/nn/activation_layer.h"

#include <stdexcept>

namespace amp {

std::string_view activationName(Activation a) {
  switch (a) {
    case Activation::ReLU: return "relu";
    case Activation::Tanh: return "tanh";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::GELU: return "gelu";
  }
  return "?";
}

std::optional<Activation> parseActivation(std::string_view s) {
  for (Activation a : {Activation::ReLU, Activation::Tanh, Activation::Sigmoid, Activation::GELU})
    if (activationName(a) == s) return a;
  return std::nullopt;
}

std::string ActivationLayer::kind() const {
  switch (m_act) {
    case Activation::ReLU: return "ReLU";
    case Activation::Tanh: return "Tanh";
    case Activation::Sigmoid: return "Sigmoid";
    case Activation::GELU: return "GELU";
  }
  return "?";
}

Tensor ActivationLayer::forward(LayerContext& ctx, const Tensor& x) {
  const std::string op(activationName(m_act));
  const DType d = ctx.autocast.computeDtype(op, {x.dtype()});
  int casts = 0;
  const Tensor xc = castActivation(ctx.backend, x, d, casts);
  Tensor y = ctx.backend.empty(x.shape(), d, MemCategory::Activations, x.format());
  ctx.backend.activationForward(m_act, xc, y);
  // ReLU's backward needs only its output; the others keep the input too.
  m_savedY = y;
  m_savedX = m_act == Activation::ReLU ? y : xc;
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, op, ctx.autocast.effectivePolicy(op),
        ctx.autocast.enabled(), {x.dtype()}, d, d, casts, 0, ""};
  });
  return y;
}

void ActivationLayer::adoptOutput(LayerContext& ctx, DType inputDtype, const Tensor& y) {
  if (m_act != Activation::ReLU)
    throw std::logic_error(kind() + ": only a ReLU backpropagates from its output alone");
  m_savedY = y;
  m_savedX = y;
  const std::string op(activationName(m_act));
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, op, ctx.autocast.effectivePolicy(op),
        ctx.autocast.enabled(), {inputDtype}, y.dtype(), y.dtype(), 0, 0,
        "fused into the batch norm before it"};
  });
}

Tensor ActivationLayer::takeOutputForFusedBackward(LayerContext& ctx, const Tensor& dy) {
  if (m_act != Activation::ReLU || !m_savedY.defined())
    throw std::logic_error(kind() + ": a fused backward needs a ReLU's saved output");
  Tensor y = m_savedY;
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, m_name, "relu_backward", CastPolicy::PassThrough,
        false, {dy.dtype()}, dy.dtype(), dy.dtype(), 0, 0, "fused into the batch norm's backward"};
  });
  releaseSaved();
  return y;
}

Tensor ActivationLayer::backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) {
  Tensor dx;
  if (needInputGrad) {
    // dy in the forward's format (Flatten hands a channels-last map's gradient back contiguous).
    const Tensor g = formatActivation(ctx.backend, dy, m_savedY.format());
    dx = ctx.backend.empty(g.shape(), g.dtype(), MemCategory::Activations, g.format());
    ctx.backend.activationBackward(m_act, m_savedX, m_savedY, g, dx);
    ctx.autocast.record([&] {
      return OpTraceEntry{TracePhase::Backward, m_name, std::string(activationName(m_act)) + "_backward",
          CastPolicy::PassThrough, false, {dy.dtype()}, dy.dtype(), dy.dtype(), 0, 0, ""};
    });
  }
  releaseSaved();
  return dx;
}

void ActivationLayer::releaseSaved() {
  m_savedX = Tensor();
  m_savedY = Tensor();
}

Tensor Flatten::forward(LayerContext& ctx, const Tensor& x) {
  m_inputShape = x.shape();
  // A view of the logical order: a channels-last map is made contiguous first (a transpose;
  // nothing for a contiguous one). The gradient goes back contiguous: image layers take any
  // format and convert it to theirs.
  return formatActivation(ctx.backend, x, MemoryFormat::Contiguous)
      .reshaped({x.dim(0), x.numel() / x.dim(0)});
}

Tensor Flatten::backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) {
  return needInputGrad ? dy.reshaped(m_inputShape) : Tensor();
}

}  // namespace amp
