#include "engine/nn/global_avg_pool.h"

#include <stdexcept>

namespace amp {

namespace {
constexpr const char* kOp = "adaptive_avg_pool2d";
}

Shape GlobalAvgPool::outputShape(const Shape& in) const {
  if (in.size() != 3 || in[1] <= 0 || in[2] <= 0)
    throw std::invalid_argument("GlobalAvgPool expects (C, H, W) per sample, got " + shapeString(in));
  return {in[0]};
}

Tensor GlobalAvgPool::forward(LayerContext& ctx, const Tensor& x) {
  Backend& be = ctx.backend;
  if (x.rank() != 4)
    throw std::invalid_argument(describe() + ": input " + shapeString(x.shape()) +
                                " is not (N, C, H, W)");
  m_inputShape = x.shape();
  m_inputDtype = x.dtype();
  m_inputFormat = x.format();
  const DType d = ctx.autocast.computeDtype(kOp, {x.dtype()});
  int casts = 0;
  const Tensor xc = castActivation(be, x, d, casts);
  Tensor y = be.empty({x.dim(0), x.dim(1)}, d, MemCategory::Activations);
  be.globalAvgPoolForward(xc, y);
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, kOp, ctx.autocast.effectivePolicy(kOp),
        ctx.autocast.enabled(), {x.dtype()}, d, d, casts, 0, "plane sums in fp32"};
  });
  return y;
}

Tensor GlobalAvgPool::backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) {
  if (!needInputGrad) return Tensor();
  if (m_inputShape.empty()) throw std::logic_error(describe() + ": backward without forward");
  Backend& be = ctx.backend;
  Tensor dx = be.empty(m_inputShape, dy.dtype(), MemCategory::Activations, m_inputFormat);
  be.globalAvgPoolBackward(dy, dx);
  int casts = 0;
  dx = castActivation(be, dx, m_inputDtype, casts);
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, m_name, std::string(kOp) + "_backward",
        CastPolicy::PassThrough, false, {dy.dtype()}, dy.dtype(), m_inputDtype, casts, 0, ""};
  });
  return dx;
}

}  // namespace amp
