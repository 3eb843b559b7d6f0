#include "engine/nn/transformer_block.h"

#include <cmath>

namespace amp {

TransformerBlock::TransformerBlock(std::int64_t width, std::int64_t heads, int layers,
                                   std::shared_ptr<SequenceLength> length)
    : m_width(width), m_heads(heads), m_ln1(width), m_ln2(width),
      m_attn(width, heads, layers, std::move(length)), m_fc(width, 4 * width),
      m_proj(4 * width, width) {
  m_fc.setNormalInit(0.02);
  m_proj.setNormalInit(0.02 / std::sqrt(2.0 * layers));
}

std::string TransformerBlock::describe() const {
  return "TransformerBlock(" + std::to_string(m_width) + ", " + std::to_string(m_heads) +
         " heads, MLP " + std::to_string(4 * m_width) + ")";
}

void TransformerBlock::setName(std::string n) {
  Layer::setName(std::move(n));
  m_ln1.setName(m_name + ".ln_1");
  m_attn.setName(m_name + ".attn");
  m_ln2.setName(m_name + ".ln_2");
  m_fc.setName(m_name + ".mlp.c_fc");
  m_gelu.setName(m_name + ".mlp.gelu");
  m_proj.setName(m_name + ".mlp.c_proj");
}

std::vector<Parameter*> TransformerBlock::parameters() {
  // The state_dict's order: ln_1, attn, ln_2, mlp.
  std::vector<Parameter*> out;
  for (Layer* part : std::initializer_list<Layer*>{&m_ln1, &m_attn, &m_ln2, &m_fc, &m_proj})
    for (Parameter* p : part->parameters()) out.push_back(p);
  return out;
}

void TransformerBlock::initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) {
  for (Layer* part : std::initializer_list<Layer*>{&m_ln1, &m_attn, &m_ln2, &m_fc, &m_proj})
    part->initialize(be, rng, dtype, category);
}

Tensor TransformerBlock::residualAdd(LayerContext& ctx, const Tensor& a, const Tensor& b,
                                     const char* what) {
  const DType d = ctx.autocast.computeDtype("add", {a.dtype(), b.dtype()});
  Tensor sum = ctx.backend.empty(a.shape(), d, MemCategory::Activations);
  ctx.backend.add(a, b, sum);
  recordAdd(ctx, a.dtype(), b.dtype(), d, what);
  return sum;
}

void TransformerBlock::recordAdd(LayerContext& ctx, DType a, DType b, DType out, const char* what) {
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, "add", ctx.autocast.effectivePolicy("add"),
        ctx.autocast.enabled(), {a, b}, out, out, 0, 0, what};
  });
}

Tensor TransformerBlock::forward(LayerContext& ctx, const Tensor& x) {
  m_inputDtype = x.dtype();
  const Tensor a = m_attn.forward(ctx, m_ln1.forward(ctx, x));
  if (ctx.observer) ctx.observer->activation(m_attn.name(), a);
  // The residual add and ln_2 in one pass (the same bits as the add, then the LayerNorm).
  const DType midDtype = ctx.autocast.computeDtype("add", {x.dtype(), a.dtype()});
  recordAdd(ctx, x.dtype(), a.dtype(), midDtype, "residual add (attention)");
  Tensor mid;
  const Tensor normed = m_ln2.forwardSum(ctx, x, a, midDtype, mid);
  m_midDtype = mid.dtype();
  const Tensor h = m_gelu.forward(ctx, m_fc.forward(ctx, normed));
  const Tensor m = m_proj.forward(ctx, h);
  if (ctx.observer) ctx.observer->activation(m_name + ".mlp", m);
  return residualAdd(ctx, mid, m, "residual add (MLP)");
}

Tensor TransformerBlock::backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) {
  Backend& be = ctx.backend;
  int casts = 0;
  // The MLP branch, then the gradient of the middle of the stream: the identity path's dy plus
  // what came back through the branch (added in fp32, rounded once, as autograd's sum).
  Tensor g = m_proj.backward(ctx, dy, true);
  g = m_gelu.backward(ctx, g, true);
  g = m_fc.backward(ctx, g, true);
  g = m_ln2.backward(ctx, g, true);
  Tensor dmid = be.empty(g.shape(), m_midDtype, MemCategory::Activations);
  be.add(castActivation(be, dy, m_midDtype, casts), g, dmid);
  if (ctx.observer) {
    ctx.observer->discardInputGradRounding();  // dmid is a sum of two paths
    ctx.observer->activationGrad(m_attn.name(), dmid);
  }
  g = m_attn.backward(ctx, dmid, true);
  g = m_ln1.backward(ctx, g, true);
  if (ctx.observer) ctx.observer->discardInputGradRounding();  // dx is a sum of two paths
  if (!needInputGrad) return Tensor();
  Tensor dx = be.empty(g.shape(), m_inputDtype, MemCategory::Activations);
  be.add(castActivation(be, dmid, m_inputDtype, casts), g, dx);
  return dx;
}

void TransformerBlock::releaseSaved() {
  for (Layer* part :
       std::initializer_list<Layer*>{&m_ln1, &m_attn, &m_ln2, &m_fc, &m_gelu, &m_proj})
    part->releaseSaved();
}

}  // namespace amp
