#include "engine/nn/linear.h"

#include <cmath>
#include <stdexcept>

#include "engine/amp/fp8_context.h"
#include "engine/data/rng.h"

namespace amp {

Linear::Linear(std::int64_t in, std::int64_t out, bool bias)
    : m_in(in), m_out(out), m_hasBias(bias) {
  if (in <= 0 || out <= 0) throw std::invalid_argument("Linear: sizes must be positive");
}

std::string Linear::describe() const {
  return "Linear(" + std::to_string(m_in) + " -> " + std::to_string(m_out) +
         (m_hasBias ? ")" : ", no bias)");
}

Shape Linear::outputShape(const Shape& in) const {
  // Token rows (a transformer's per-sample {T, C}): applied to each position's features.
  if (in.size() >= 2 && in.back() == m_in && shapeNumel(in) != m_in) {
    Shape out = in;
    out.back() = m_out;
    return out;
  }
  if (shapeNumel(in) != m_in)
    throw std::invalid_argument("Linear expects " + std::to_string(m_in) + " input features, got " +
                                shapeString(in));
  return {m_out};
}

std::vector<Parameter*> Linear::parameters() {
  std::vector<Parameter*> out;
  if (!m_tied) out.push_back(&m_weight);
  if (m_hasBias) out.push_back(&m_bias);
  return out;
}

std::vector<std::pair<std::string, Parameter*>> Linear::tiedParameters() {
  if (!m_tied) return {};
  return {{m_name + ".weight", m_tied}};
}

void Linear::initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) {
  if (m_tied) {
    if (m_hasBias) m_bias = {m_name + ".bias", be.zeros({m_out}, dtype, category)};
    return;
  }
  if (m_normalStd > 0) {
    std::vector<float> w(static_cast<std::size_t>(m_out * m_in));
    for (float& v : w) v = static_cast<float>(rng.normal() * m_normalStd);
    m_weight.name = m_name + ".weight";
    m_weight.value = be.fromHost(w, {m_out, m_in}, dtype, category);
    if (m_hasBias) {
      m_bias.name = m_name + ".bias";
      m_bias.value = be.zeros({m_out}, dtype, category);
    }
    return;
  }
  initWeightAndBias(be, rng, m_name, m_weight, {m_out, m_in}, m_hasBias ? &m_bias : nullptr, m_in,
                    dtype, category);
}

Tensor Linear::forward(LayerContext& ctx, const Tensor& xIn) {
  Backend& be = ctx.backend;
  // An image input is flattened as Flatten does: in the logical order, so contiguous first.
  const Tensor x = xIn.rank() == 2 ? xIn
                                   : formatActivation(be, xIn, MemoryFormat::Contiguous).reshaped(
                                         {xIn.dim(0), shapeNumel(xIn.shape()) / xIn.dim(0)});
  if (x.dim(1) != m_in)
    throw std::invalid_argument(describe() + ": input " + shapeString(xIn.shape()));
  m_inputDtype = x.dtype();
  m_inputShape = xIn.shape();
  if (ctx.fp8 && ctx.fp8->quantizes(m_name)) return forwardFp8(ctx, x);
  AutocastOperands o = autocastOperands(ctx, "linear", x, weight(), m_hasBias ? &m_bias : nullptr);
  m_savedX = o.x;
  m_savedW = o.weight;
  Tensor y = be.empty({x.dim(0), m_out}, o.dtype, MemCategory::Activations);
  be.gemm(m_savedX, false, m_savedW, true, y, m_hasBias ? &o.bias : nullptr);
  recordWeightedForward(ctx, m_name, "linear", o);
  return y;
}

Tensor Linear::backward(LayerContext& ctx, const Tensor& dyIn, bool needInputGrad) {
  if (ctx.fp8 && ctx.fp8->quantizes(m_name)) return backwardFp8(ctx, dyIn, needInputGrad);
  Backend& be = ctx.backend;
  const DType d = m_savedW.dtype();
  int casts = 0;
  const Tensor dy = castActivation(be, dyIn, d, casts);

  // Weight and bias gradients in the compute dtype (a 16-bit GEMM output is rounded to 16
  // bits — where small gradients underflow), then handed to the fp32 .grad. When .grad is
  // still empty the GEMM writes fp32 straight into it and rounds through 16 bits in place:
  // the same values, without a 16-bit temporary and a separate cast.
  const bool dwCast = isLowPrecision(d) && weight().value.dtype() == DType::F32;
  const bool direct = dwCast && !weight().grad.defined();
  // On histogram steps (an observer is set) each 16-bit result is also counted against the
  // same product with fp32 output: how many values rounding flushed to zero or made inf.
  TensorObserver* measure =
      isLowPrecision(d) && ctx.observer && ctx.observer->wantsRoundingCounts() ? ctx.observer : nullptr;
  Tensor dw = be.empty({m_out, m_in}, direct ? DType::F32 : d, MemCategory::Gradients);
  be.gemm(dy, true, m_savedX, false, dw);
  // Where the backend folds the rounding into the step's first read of the gradients (CUDA's
  // unscale or optimizer kernels) it is left to them: one pass over dW fewer. Histogram steps
  // measure it here, so they round here.
  const bool deferRounding = direct && !measure && be.defersGradRounding();
  if (direct && !deferRounding) {
    // dw holds the fp32 result until it is rounded in place: the reference costs nothing.
    const ExponentHistogram reference = measure ? be.histogram(dw, 1.0) : ExponentHistogram{};
    be.roundThrough(dw, d);
    if (measure) measure->weightGradRounding(weight().name, roundingBetween(reference, be.histogram(dw, 1.0)));
  } else if (measure) {
    measure->weightGradRounding(weight().name, measureRounding(be, dw, [&](Tensor& ref) {
      be.gemm(dy, true, m_savedX, false, ref);
    }));
  }
  accumulateGrad(be, weight(), std::move(dw));
  if (deferRounding) weight().gradRoundThrough = d;
  if (m_hasBias) {
    Tensor db = be.empty({m_out}, d, MemCategory::Gradients);
    be.biasGrad(dy, db);
    if (measure)
      measure->weightGradRounding(m_bias.name, measureRounding(be, db, [&](Tensor& ref) {
        be.biasGrad(dy, ref);
      }));
    accumulateGrad(be, m_bias, std::move(db));
  }
  Tensor dx;
  if (needInputGrad) {
    dx = be.empty({dy.dim(0), m_in}, d, MemCategory::Activations);
    be.gemm(dy, false, m_savedW, false, dx);
    if (measure)
      measure->inputGradRounding(measureRounding(be, dx, [&](Tensor& ref) {
        be.gemm(dy, false, m_savedW, false, ref);
      }));
    dx = castActivation(be, dx, m_inputDtype, casts).reshaped(m_inputShape);
  }
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, m_name, "linear_backward",
        ctx.autocast.policy().policyFor("linear"), false,
        {dyIn.dtype()}, d, needInputGrad ? m_inputDtype : d, casts + int(dwCast), 0,
        dwCast ? "16-bit weight grad cast to fp32 for .grad" : ""};
  });
  releaseSaved();
  return dx;
}

void Linear::releaseSaved() {
  m_savedX = Tensor();
  m_savedW = Tensor();
  m_fp8Xq = QuantizedTensor();
  m_fp8Wq = QuantizedTensor();
}

}  // namespace amp
