#include "engine/nn/conv2d.h"

#include <cmath>
#include <stdexcept>

#include "engine/data/rng.h"

namespace amp {

Conv2d::Conv2d(std::int64_t inChannels, std::int64_t outChannels, std::int64_t kernel,
               std::int64_t padding, std::int64_t stride, bool bias)
    : m_in(inChannels), m_out(outChannels), m_kernel(kernel), m_padding(padding),
      m_stride(stride), m_hasBias(bias) {
  if (inChannels <= 0 || outChannels <= 0 || kernel <= 0 || stride <= 0 || padding < 0)
    throw std::invalid_argument("Conv2d: channels, kernel and stride must be positive, padding "
                                "not negative");
}

std::string Conv2d::describe() const {
  std::string s = "Conv2d(" + std::to_string(m_in) + " -> " + std::to_string(m_out) + ", k" +
                  std::to_string(m_kernel) + ", p" + std::to_string(m_padding);
  if (m_stride != 1) s += ", s" + std::to_string(m_stride);
  return s + (m_hasBias ? ")" : ", no bias)");
}

Shape Conv2d::outputShape(const Shape& in) const {
  if (in.size() != 3 || in[0] != m_in)
    throw std::invalid_argument("Conv2d expects (" + std::to_string(m_in) +
                                ", H, W) per sample, got " + shapeString(in));
  const std::int64_t oh = (in[1] + 2 * m_padding - m_kernel) / m_stride + 1;
  const std::int64_t ow = (in[2] + 2 * m_padding - m_kernel) / m_stride + 1;
  if (in[1] + 2 * m_padding < m_kernel || in[2] + 2 * m_padding < m_kernel)
    throw std::invalid_argument("Conv2d: a " + std::to_string(m_kernel) + "x" +
                                std::to_string(m_kernel) + " kernel does not fit a padded " +
                                shapeString(in) + " input");
  return {m_out, oh, ow};
}

std::vector<Parameter*> Conv2d::parameters() {
  if (m_hasBias) return {&m_weight, &m_bias};
  return {&m_weight};
}

void Conv2d::initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) {
  initWeightAndBias(be, rng, m_name, m_weight, {m_out, m_in, m_kernel, m_kernel},
                    m_hasBias ? &m_bias : nullptr, m_in * m_kernel * m_kernel, dtype, category);
}

Conv2dGeometry Conv2d::geometry(const Tensor& x) const {
  if (x.rank() != 4 || x.dim(1) != m_in)
    throw std::invalid_argument(describe() + ": input " + shapeString(x.shape()) +
                                " is not (N, " + std::to_string(m_in) + ", H, W)");
  Conv2dGeometry g;
  g.n = x.dim(0), g.c = m_in, g.h = x.dim(2), g.w = x.dim(3);
  g.k = m_out, g.r = m_kernel, g.s = m_kernel;
  g.strideH = g.strideW = m_stride;
  g.padH = g.padW = m_padding;
  outputShape({g.c, g.h, g.w});  // throws if the kernel does not fit
  return g;
}

Tensor Conv2d::forward(LayerContext& ctx, const Tensor& x) {
  Backend& be = ctx.backend;
  m_geometry = geometry(x);
  m_inputDtype = x.dtype();
  AutocastOperands o = autocastOperands(ctx, "conv2d", x, m_weight, m_hasBias ? &m_bias : nullptr);
  // Activations in the backend's preferred format (channels-last on the GPU, where cuDNN's
  // tensor-core kernels would otherwise transpose them on every call): the input is converted
  // once here if it arrives otherwise (the model's input, a Flatten's neighbour), after the
  // cast, where it is smallest. Weights stay contiguous (K, C, R, S).
  const MemoryFormat format = be.preferredImageFormat();
  m_savedX = formatActivation(be, o.x, format);
  m_savedW = o.weight;
  const Conv2dGeometry& g = m_geometry;
  Tensor y = be.empty({g.n, g.k, g.outH(), g.outW()}, o.dtype, MemCategory::Activations, format);
  be.conv2dForward(m_savedX, m_savedW, m_hasBias ? &o.bias : nullptr, y, g);
  recordWeightedForward(ctx, m_name, "conv2d", o);
  return y;
}

Tensor Conv2d::backward(LayerContext& ctx, const Tensor& dyIn, bool needInputGrad) {
  if (!m_savedW.defined()) throw std::logic_error(describe() + ": backward without forward");
  Backend& be = ctx.backend;
  const DType d = m_savedW.dtype();
  const Conv2dGeometry& g = m_geometry;
  int casts = 0;
  // dy in the forward's activation format (a layer after this one may hand it back in another:
  // Flatten returns a contiguous one).
  const Tensor dy = formatActivation(be, castActivation(be, dyIn, d, casts), m_savedX.format());

  // Weight and bias gradients in the compute dtype (a 16-bit output is rounded to 16 bits, as
  // cuDNN's is: where small gradients underflow), then handed to the fp32 .grad by the cast's
  // backward. When .grad is still empty oneDNN writes fp32 straight into it and we round
  // through 16 bits in place: the same values, without 16-bit temporaries and casts (as Linear).
  // On cuDNN, which cannot write fp32 from 16-bit inputs on tensor cores, the 16-bit way is
  // the fast one.
  const bool dwCast = isLowPrecision(d) && m_weight.value.dtype() == DType::F32;
  const bool direct = dwCast && be.convWritesFp32FromHalfNatively() && !m_weight.grad.defined() &&
                      (!m_hasBias || !m_bias.grad.defined());
  const DType gd = direct ? DType::F32 : d;
  Tensor dw = be.empty(m_weight.value.shape(), gd, MemCategory::Gradients);
  Tensor db = m_hasBias ? be.empty({m_out}, gd, MemCategory::Gradients) : Tensor();
  // On histogram steps (an observer is set) each 16-bit result is also counted against the
  // same convolution with fp32 output: how many values rounding flushed to zero or made inf.
  TensorObserver* measure =
      isLowPrecision(d) && ctx.observer && ctx.observer->wantsRoundingCounts() ? ctx.observer : nullptr;
  // Both passes in one call where nothing is measured between them: the backend may share their
  // work (the CPU reorders dy once). The results are the same as the two calls'.
  Tensor dx;
  const bool together = needInputGrad && !measure;
  if (together) {
    dx = be.empty(m_savedX.shape(), d, MemCategory::Activations, m_savedX.format());
    be.conv2dBackward(dy, m_savedX, m_savedW, &dx, dw, m_hasBias ? &db : nullptr, g);
  } else {
    be.conv2dBackwardWeights(dy, m_savedX, dw, m_hasBias ? &db : nullptr, g);
  }
  if (direct) {
    // dw and db hold the fp32 results until they are rounded in place: free references.
    const ExponentHistogram refW = measure ? be.histogram(dw, 1.0) : ExponentHistogram{};
    const ExponentHistogram refB = measure && m_hasBias ? be.histogram(db, 1.0) : ExponentHistogram{};
    be.roundThrough(dw, d);
    if (m_hasBias) be.roundThrough(db, d);
    if (measure) {
      measure->weightGradRounding(m_weight.name, roundingBetween(refW, be.histogram(dw, 1.0)));
      if (m_hasBias)
        measure->weightGradRounding(m_bias.name, roundingBetween(refB, be.histogram(db, 1.0)));
    }
  } else if (measure) {
    Tensor refW = be.empty(dw.shape(), DType::F32, MemCategory::Workspace);
    Tensor refB = m_hasBias ? be.empty(db.shape(), DType::F32, MemCategory::Workspace) : Tensor();
    be.conv2dBackwardWeights(dy, m_savedX, refW, m_hasBias ? &refB : nullptr, g);
    measure->weightGradRounding(m_weight.name,
                                roundingBetween(be.histogram(refW, 1.0), be.histogram(dw, 1.0)));
    if (m_hasBias)
      measure->weightGradRounding(m_bias.name,
                                  roundingBetween(be.histogram(refB, 1.0), be.histogram(db, 1.0)));
  }
  accumulateGrad(be, m_weight, std::move(dw));
  if (m_hasBias) accumulateGrad(be, m_bias, std::move(db));
  if (needInputGrad) {
    if (!together) {
      dx = be.empty(m_savedX.shape(), d, MemCategory::Activations, m_savedX.format());
      be.conv2dBackwardData(dy, m_savedW, dx, g);
    }
    if (measure)
      measure->inputGradRounding(measureRounding(be, dx, [&](Tensor& ref) {
        be.conv2dBackwardData(dy, m_savedW, ref, g);
      }));
    dx = castActivation(be, dx, m_inputDtype, casts);
  }
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, m_name, "conv2d_backward",
        ctx.autocast.policy().policyFor("conv2d"), false, {dyIn.dtype()}, d,
        needInputGrad ? m_inputDtype : d, casts + int(dwCast), 0,
        dwCast ? "16-bit weight grad cast to fp32 for .grad" : ""};
  });
  releaseSaved();
  return dx;
}

void Conv2d::releaseSaved() {
  m_savedX = Tensor();
  m_savedW = Tensor();
}

}  // namespace amp
