#include "engine/nn/max_pool2d.h"

#include <stdexcept>

namespace amp {

MaxPool2d::MaxPool2d(std::int64_t kernel, std::int64_t stride, std::int64_t padding)
    : m_kernel(kernel), m_stride(stride), m_padding(padding) {
  if (kernel <= 0 || stride <= 0)
    throw std::invalid_argument("MaxPool2d: kernel and stride must be positive");
  if (padding < 0 || 2 * padding > kernel)
    throw std::invalid_argument("MaxPool2d: padding must be from 0 to half the window");
}

std::string MaxPool2d::describe() const {
  return "MaxPool2d(" + std::to_string(m_kernel) + ", stride " + std::to_string(m_stride) +
         (m_padding ? ", padding " + std::to_string(m_padding) : std::string()) + ")";
}

Shape MaxPool2d::outputShape(const Shape& in) const {
  if (in.size() != 3)
    throw std::invalid_argument("MaxPool2d expects (C, H, W) per sample, got " + shapeString(in));
  if (in[1] + 2 * m_padding < m_kernel || in[2] + 2 * m_padding < m_kernel)
    throw std::invalid_argument("MaxPool2d: a " + std::to_string(m_kernel) + "x" +
                                std::to_string(m_kernel) + " window does not fit a " +
                                shapeString(in) + " input");
  return {in[0], (in[1] + 2 * m_padding - m_kernel) / m_stride + 1,
          (in[2] + 2 * m_padding - m_kernel) / m_stride + 1};
}

Tensor MaxPool2d::forward(LayerContext& ctx, const Tensor& x) {
  Backend& be = ctx.backend;
  if (x.rank() != 4)
    throw std::invalid_argument(describe() + ": input " + shapeString(x.shape()) +
                                " is not (N, C, H, W)");
  const Shape out = outputShape({x.dim(1), x.dim(2), x.dim(3)});
  m_inputShape = x.shape();
  m_inputDtype = x.dtype();
  const DType d = ctx.autocast.computeDtype("max_pool2d", {x.dtype()});
  int casts = 0;
  const Tensor xc = castActivation(be, x, d, casts);
  Pool2dGeometry& g = m_geometry;
  g.n = x.dim(0), g.c = x.dim(1), g.h = x.dim(2), g.w = x.dim(3);
  g.kernel = m_kernel, g.stride = m_stride, g.padding = m_padding;
  m_format = x.format();  // the output and argmax keep the input's format
  Tensor y = be.empty({g.n, out[0], out[1], out[2]}, d, MemCategory::Activations, m_format);
  m_argmax = be.empty(y.shape(), DType::I32, MemCategory::Activations, m_format);
  be.maxPool2dForward(xc, y, m_argmax, g);
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, "max_pool2d",
        ctx.autocast.effectivePolicy("max_pool2d"), ctx.autocast.enabled(),
        {x.dtype()}, d, d, casts, 0, ""};
  });
  return y;
}

Tensor MaxPool2d::backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) {
  Tensor dx;
  if (needInputGrad) {
    if (!m_argmax.defined()) throw std::logic_error(describe() + ": backward without forward");
    Backend& be = ctx.backend;
    dx = be.empty(m_inputShape, dy.dtype(), MemCategory::Activations, m_format);
    be.maxPool2dBackward(formatActivation(be, dy, m_format), m_argmax, dx, m_geometry);
    int casts = 0;
    dx = castActivation(be, dx, m_inputDtype, casts);
    ctx.autocast.record([&] {
      return OpTraceEntry{TracePhase::Backward, m_name, "max_pool2d_backward",
          CastPolicy::PassThrough, false, {dy.dtype()}, dy.dtype(), m_inputDtype,
          casts, 0, ""};
    });
  }
  releaseSaved();
  return dx;
}

void MaxPool2d::releaseSaved() { m_argmax = Tensor(); }

}  // namespace amp
