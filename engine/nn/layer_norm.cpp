#include "engine/nn/layer_norm.h"

#include <stdexcept>
#include <vector>

namespace amp {

LayerNorm::LayerNorm(std::int64_t width, float eps) : m_width(width), m_eps(eps) {
  if (width <= 0) throw std::invalid_argument("LayerNorm: width must be positive");
}

std::string LayerNorm::describe() const { return "LayerNorm(" + std::to_string(m_width) + ")"; }

Shape LayerNorm::outputShape(const Shape& in) const {
  if (in.empty() || in.back() != m_width)
    throw std::invalid_argument(describe() + " expects a last dimension of " +
                                std::to_string(m_width) + ", got " + shapeString(in));
  return in;
}

void LayerNorm::initialize(Backend& be, Rng&, DType dtype, MemCategory category) {
  const std::vector<float> ones(static_cast<std::size_t>(m_width), 1.f);
  m_weight.name = m_name + ".weight";
  m_weight.value = be.fromHost(ones, {m_width}, dtype, category);
  m_bias.name = m_name + ".bias";
  m_bias.value = be.zeros({m_width}, dtype, category);
}

Tensor LayerNorm::forward(LayerContext& ctx, const Tensor& xIn) {
  if (xIn.rank() < 1 || xIn.dim(-1) != m_width)
    throw std::invalid_argument(describe() + ": input " + shapeString(xIn.shape()));
  return run(ctx, xIn.reshaped({xIn.numel() / m_width, m_width}), nullptr, nullptr, nullptr,
             xIn.shape());
}

Tensor LayerNorm::forwardSum(LayerContext& ctx, const Tensor& a, const Tensor& b, DType sumDtype,
                             Tensor& sum) {
  if (a.rank() < 1 || a.dim(-1) != m_width || b.numel() != a.numel())
    throw std::invalid_argument(describe() + ": inputs " + shapeString(a.shape()) + " and " +
                                shapeString(b.shape()));
  const Shape rows{a.numel() / m_width, m_width};
  sum = ctx.backend.empty(a.shape(), sumDtype, MemCategory::Activations);
  const Tensor ra = a.reshaped(rows), rb = b.reshaped(rows);
  Tensor rs = sum.reshaped(rows);
  return run(ctx, rs, &ra, &rb, &rs, a.shape());
}

Tensor LayerNorm::run(LayerContext& ctx, const Tensor& x, const Tensor* a, const Tensor* b,
                      Tensor* sum, const Shape& shape) {
  Backend& be = ctx.backend;
  m_inputShape = shape;
  m_inputDtype = x.dtype();
  const std::vector<DType> inputs{x.dtype(), m_weight.value.dtype(), m_bias.value.dtype()};
  m_computeDtype = ctx.autocast.computeDtype("layer_norm", inputs);
  // The input is widened (or rounded) as the kernel reads it: the values a cast would give,
  // without the copy. The weight and bias are cast (and cached) only on the 16-bit list.
  int casts = m_inputDtype != m_computeDtype;
  int hits = 0;
  bool hit = false, cast = false;
  m_savedGamma = ctx.autocast.castParameter(be, m_weight, m_computeDtype, hit, cast);
  casts += cast;
  hits += hit;
  const Tensor beta = ctx.autocast.castParameter(be, m_bias, m_computeDtype, hit, cast);
  casts += cast;
  hits += hit;
  Tensor y = be.empty(x.shape(), m_computeDtype, MemCategory::Activations);
  m_mean = be.empty({x.dim(0)}, DType::F32, MemCategory::Activations);
  m_rstd = be.empty({x.dim(0)}, DType::F32, MemCategory::Activations);
  if (a)
    be.addLayerNormForward(*a, *b, m_savedGamma, beta, m_eps, *sum, y, m_mean, m_rstd);
  else
    be.layerNormForward(x, m_savedGamma, beta, m_eps, y, m_mean, m_rstd);
  m_savedX = x;
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, "layer_norm",
        ctx.autocast.effectivePolicy("layer_norm"), ctx.autocast.enabled(), inputs,
        m_computeDtype, m_computeDtype, casts, hits,
        isLowPrecision(m_computeDtype) ? "16-bit output; statistics still fp32 in the kernel"
                                       : "fp32 statistics and output"};
  });
  return y.reshaped(m_inputShape);
}

Tensor LayerNorm::backward(LayerContext& ctx, const Tensor& dyIn, bool needInputGrad) {
  Backend& be = ctx.backend;
  const Tensor dy = dyIn.reshaped(m_savedX.shape());
  // The kernel's gradient has the compute dtype's rounding; dx is rounded once more into the
  // input's dtype (the autocast cast's backward), which writing it there directly does.
  Tensor dx = be.empty(m_savedX.shape(), m_inputDtype, MemCategory::Activations);
  Tensor dgamma = be.empty({m_width}, m_computeDtype, MemCategory::Gradients);
  Tensor dbeta = be.empty({m_width}, m_computeDtype, MemCategory::Gradients);
  be.layerNormBackward(dy, m_savedX, m_savedGamma, m_mean, m_rstd, dx, dgamma, dbeta);
  accumulateGrad(be, m_weight, std::move(dgamma));
  accumulateGrad(be, m_bias, std::move(dbeta));
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, m_name, "layer_norm_backward",
        ctx.autocast.policy().policyFor("layer_norm"), false, {dyIn.dtype()}, m_computeDtype,
        m_inputDtype, int(m_inputDtype != m_computeDtype), 0,
        isLowPrecision(m_computeDtype) ? "16-bit weight and bias grads cast to fp32 for .grad" : ""};
  });
  releaseSaved();
  if (!needInputGrad) return Tensor();
  return dx.reshaped(m_inputShape);
}

void LayerNorm::releaseSaved() {
  m_savedX = Tensor();
  m_savedGamma = Tensor();
  m_mean = Tensor();
  m_rstd = Tensor();
}

}  // namespace amp
