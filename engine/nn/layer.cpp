#include "engine/nn/layer.h"

#include <cmath>

#include "engine/data/rng.h"

namespace amp {

void settleGrad(Backend& be, Parameter& p) {
  if (p.gradRoundThrough == DType::F32) return;
  if (p.grad.defined()) be.roundThrough(p.grad, p.gradRoundThrough);
  p.gradRoundThrough = DType::F32;
}

void accumulateGrad(Backend& be, Parameter& p, Tensor computed) {
  settleGrad(be, p);  // a second micro-batch adds to the rounded values, as without deferral
  if (!p.grad.defined()) {
    p.grad = computed.dtype() == p.value.dtype()
                 ? std::move(computed)
                 : be.cast(computed, p.value.dtype(), MemCategory::Gradients);
    return;
  }
  be.accumulate(p.grad, computed);
}

Tensor castActivation(Backend& be, const Tensor& x, DType to, int& casts) {
  if (x.dtype() == to) return x;
  ++casts;
  return be.cast(x, to, MemCategory::Activations);
}

Tensor formatActivation(Backend& be, const Tensor& x, MemoryFormat format) {
  return be.toFormat(x, format, MemCategory::Activations);
}

AutocastOperands autocastOperands(LayerContext& ctx, const char* op, const Tensor& x,
                                  Parameter& weight, Parameter* bias) {
  AutocastOperands o;
  o.inputDtypes = {x.dtype(), weight.value.dtype()};
  if (bias) o.inputDtypes.push_back(bias->value.dtype());
  o.dtype = ctx.autocast.computeDtype(op, o.inputDtypes);
  o.x = castActivation(ctx.backend, x, o.dtype, o.casts);
  bool hit = false, cast = false;
  o.weight = ctx.autocast.castParameter(ctx.backend, weight, o.dtype, hit, cast);
  o.casts += cast;
  o.cacheHits += hit;
  if (bias) {
    o.bias = ctx.autocast.castParameter(ctx.backend, *bias, o.dtype, hit, cast);
    o.casts += cast;
    o.cacheHits += hit;
  }
  return o;
}

void initWeightAndBias(Backend& be, Rng& rng, const std::string& layer, Parameter& weight,
                       const Shape& weightShape, Parameter* bias, std::int64_t fanIn, DType dtype,
                       MemCategory category) {
  const double bound = 1.0 / std::sqrt(double(fanIn));
  auto draw = [&](Parameter& p, const char* suffix, const Shape& shape) {
    std::vector<float> v(static_cast<std::size_t>(shapeNumel(shape)));
    for (auto& x : v) x = static_cast<float>(rng.uniform(-bound, bound));
    p.name = layer + suffix;
    p.value = be.fromHost(v, shape, dtype, category);
  };
  draw(weight, ".weight", weightShape);
  if (bias) draw(*bias, ".bias", {weightShape.front()});
}

void recordWeightedForward(LayerContext& ctx, const std::string& layer, const char* op,
                           const AutocastOperands& o) {
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, layer, op, ctx.autocast.effectivePolicy(op),
        ctx.autocast.enabled(), o.inputDtypes, o.dtype, o.dtype, o.casts,
        o.cacheHits, o.cacheHits ? "weight casts served by the cache" : ""};
  });
}

}  // namespace amp
