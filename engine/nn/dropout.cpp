#include "engine/nn/dropout.h"

#include <cstdio>
#include <stdexcept>

#include "kernels/common/mix64.h"

namespace amp {

namespace {
// FNV-1a: a hash of the layer's name that is the same on every platform (std::hash is not).
std::uint64_t nameHash(const std::string& s) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}
}  // namespace

Dropout::Dropout(double p) : m_p(p) {
  if (!(p >= 0.0 && p < 1.0)) throw std::invalid_argument("Dropout: p must be in [0, 1)");
}

std::string Dropout::describe() const {
  char buf[48];
  std::snprintf(buf, sizeof buf, "Dropout(p=%g)", m_p);
  return buf;
}

std::uint64_t Dropout::maskSeed(std::uint64_t stepSeed) const {
  // The layer's name is its index in the model, so each layer draws its own mask.
  return mix64(stepSeed ^ mix64(nameHash(m_name)));
}

Tensor Dropout::forward(LayerContext& ctx, const Tensor& x) {
  m_inputDtype = x.dtype();
  m_mask = Tensor();
  if (!ctx.training || m_p == 0.0) {
    ctx.autocast.record([&] {
      return OpTraceEntry{TracePhase::Forward, m_name, "dropout",
          ctx.autocast.effectivePolicy("dropout"), ctx.autocast.enabled(),
          {x.dtype()}, x.dtype(), x.dtype(), 0, 0, "identity (eval or p = 0)"};
    });
    return x;
  }
  Backend& be = ctx.backend;
  const DType d = ctx.autocast.computeDtype("dropout", {x.dtype()});
  int casts = 0;
  const Tensor xc = castActivation(be, x, d, casts);
  // The mask and the output in the input's format (the backends draw the mask by logical
  // index, so the same elements drop in either).
  m_mask = be.empty(x.shape(), DType::U8, MemCategory::Activations, x.format());
  Tensor y = be.empty(x.shape(), d, MemCategory::Activations, x.format());
  be.dropoutForward(xc, m_mask, y, static_cast<float>(m_p), maskSeed(ctx.stepSeed));
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, "dropout",
        ctx.autocast.effectivePolicy("dropout"), ctx.autocast.enabled(),
        {x.dtype()}, d, d, casts, 0, ""};
  });
  return y;
}

Tensor Dropout::backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) {
  Tensor dx;
  if (needInputGrad) {
    if (!m_mask.defined()) {
      dx = dy;  // the forward was the identity
    } else {
      Backend& be = ctx.backend;
      const Tensor g = formatActivation(be, dy, m_mask.format());
      dx = be.empty(g.shape(), g.dtype(), MemCategory::Activations, g.format());
      be.dropoutBackward(g, m_mask, dx, static_cast<float>(m_p));
      int casts = 0;
      dx = castActivation(be, dx, m_inputDtype, casts);
      ctx.autocast.record([&] {
        return OpTraceEntry{TracePhase::Backward, m_name, "dropout_backward",
            CastPolicy::PassThrough, false, {dy.dtype()}, dy.dtype(),
            m_inputDtype, casts, 0, "the forward's mask reused"};
      });
    }
  }
  releaseSaved();
  return dx;
}

}  // namespace amp
