#include "engine/nn/causal_self_attention.h"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace amp {

CausalSelfAttention::CausalSelfAttention(std::int64_t width, std::int64_t heads, int layers,
                                         std::shared_ptr<SequenceLength> length)
    : m_width(width), m_heads(heads), m_length(std::move(length)), m_attn(width, 3 * width),
      m_proj(width, width) {
  if (heads <= 0 || width % heads != 0)
    throw std::invalid_argument("attention: " + std::to_string(width) +
                                " is not divisible into " + std::to_string(heads) + " heads");
  m_scale = static_cast<float>(1.0 / std::sqrt(double(width / heads)));
  // nanoGPT: normal(0, 0.02), the residual projections scaled by 1/sqrt(2 * layers).
  m_attn.setNormalInit(0.02);
  m_proj.setNormalInit(0.02 / std::sqrt(2.0 * layers));
}

std::string CausalSelfAttention::describe() const {
  return "CausalSelfAttention(" + std::to_string(m_width) + ", " + std::to_string(m_heads) +
         " heads)";
}

void CausalSelfAttention::setName(std::string n) {
  Layer::setName(std::move(n));
  m_attn.setName(m_name + ".c_attn");
  m_proj.setName(m_name + ".c_proj");
}

std::vector<Parameter*> CausalSelfAttention::parameters() {
  std::vector<Parameter*> out = m_attn.parameters();
  for (Parameter* p : m_proj.parameters()) out.push_back(p);
  return out;
}

void CausalSelfAttention::initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) {
  m_attn.initialize(be, rng, dtype, category);
  m_proj.initialize(be, rng, dtype, category);
}

void CausalSelfAttention::record(LayerContext& ctx, TracePhase phase, const char* op,
                                 std::vector<DType> in, DType compute, DType out, int casts,
                                 const char* note) {
  ctx.autocast.record([&] {
    return OpTraceEntry{phase, m_name, op,
        phase == TracePhase::Forward ? ctx.autocast.effectivePolicy(op) : ctx.autocast.policy().policyFor(op),
        phase == TracePhase::Forward && ctx.autocast.enabled(), std::move(in), compute, out, casts,
        0, note};
  });
}

Tensor CausalSelfAttention::forward(LayerContext& ctx, const Tensor& x) {
  Backend& be = ctx.backend;
  const std::int64_t T = m_length->t, rows = x.dim(0);
  if (T <= 0 || rows % T != 0) throw std::logic_error(describe() + ": no sequence length set");
  const std::int64_t BH = rows / T * m_heads, D = m_width / m_heads;

  const Tensor qkv = m_attn.forward(ctx, x);  // (rows, 3C)
  m_qkvDtype = qkv.dtype();
  // Scores: q·kᵀ per head, in matmul's dtype (16 bits under autocast).
  const DType sd = ctx.autocast.computeDtype("matmul", {m_qkvDtype, m_qkvDtype});
  m_q = be.empty({BH, T, D}, sd, MemCategory::Activations);
  m_k = be.empty({BH, T, D}, sd, MemCategory::Activations);
  Tensor v = be.empty({BH, T, D}, m_qkvDtype, MemCategory::Activations);
  be.splitHeads(qkv, m_heads, 0, m_q);
  be.splitHeads(qkv, m_heads, 1, m_k);
  be.splitHeads(qkv, m_heads, 2, v);
  // Scores, the scale multiply (in the scores' dtype), the causal mask, the softmax and
  // probabilities · v in one backend call (a matrix at a time on the CPU, no scores tensor),
  // each value rounded as the separate ops round it. The softmax is on autocast's fp32 list
  // (fp32 probabilities from 16-bit scores); the product's matmul casts both operands to its
  // dtype (the fp32 probabilities to 16 bits: written beside them, the backward reads both).
  const DType pd = ctx.autocast.computeDtype("softmax", {sd});
  const DType md = ctx.autocast.computeDtype("matmul", {pd, m_qkvDtype});
  int casts = int(pd != md);
  m_v = castActivation(be, v, md, casts);
  m_probs = be.empty({BH, T, T}, pd, MemCategory::Activations);
  m_p = pd != md ? be.empty({BH, T, T}, md, MemCategory::Activations) : Tensor();
  Tensor yh = be.empty({BH, T, D}, md, MemCategory::Activations);
  be.causalAttentionForward(m_q, m_k, m_v, m_scale, m_probs, pd != md ? &m_p : nullptr, yh);
  if (pd == md) std::swap(m_p, m_probs);  // one tensor serves both backward passes
  record(ctx, TracePhase::Forward, "matmul", {m_qkvDtype, m_qkvDtype}, sd, sd,
         int(sd != m_qkvDtype) * 2, "attention scores q·kᵀ");
  record(ctx, TracePhase::Forward, "softmax", {sd}, DType::F32, pd, int(pd != sd),
         pd == DType::F32 ? "scaled, causal mask; fp32 probabilities"
                          : "scaled, causal mask; 16-bit probabilities (fp32 inside the kernel)");
  record(ctx, TracePhase::Forward, "matmul", {pd, m_qkvDtype}, md, md, casts,
         casts ? "probabilities · v (probabilities cast to 16 bits)" : "probabilities · v");
  Tensor y = be.empty({rows, m_width}, md, MemCategory::Activations);
  be.mergeHeads(yh, m_heads, 0, y);
  return m_proj.forward(ctx, y);
}

Tensor CausalSelfAttention::backward(LayerContext& ctx, const Tensor& dOut, bool needInputGrad) {
  Backend& be = ctx.backend;
  const Tensor dy = m_proj.backward(ctx, dOut, true);  // (rows, C) in the matmul's dtype
  const std::int64_t BH = m_q.dim(0), T = m_q.dim(1), D = m_q.dim(2);
  const DType md = m_p.dtype(), sd = m_q.dtype();
  Tensor dyh = be.empty({BH, T, D}, dy.dtype(), MemCategory::Activations);
  be.splitHeads(dy, m_heads, 0, dyh);
  const Tensor dyhm = dyh.dtype() == md ? dyh : be.cast(dyh, md, MemCategory::Activations);
  // y = P·V: dP = dY·Vᵀ, dV = Pᵀ·dY; the softmax's backward reads dP widened (the cast's
  // backward) and rounds into the scores' dtype, then the scale multiply's backward (kernel
  // comment in backend.h); S = Q·Kᵀ: dQ = dS·K, dK = dSᵀ·Q. One backend call (a matrix at a
  // time on the CPU), each value rounded as the separate ops round it.
  const Tensor& probs = m_probs.defined() ? m_probs : m_p;
  Tensor dv = be.empty({BH, T, D}, md, MemCategory::Activations);
  Tensor dq = be.empty({BH, T, D}, sd, MemCategory::Activations);
  Tensor dk = be.empty({BH, T, D}, sd, MemCategory::Activations);
  be.causalAttentionBackward(dyhm, m_q, m_k, m_v, probs, m_p, m_scale, dq, dk, dv);
  record(ctx, TracePhase::Backward, "matmul", {md}, md, md, 0, "dP = dY·Vᵀ, dV = Pᵀ·dY");
  record(ctx, TracePhase::Backward, "softmax", {md}, DType::F32, sd, int(sd != probs.dtype()),
         "softmax gradient in fp32, cast to the scores' dtype");
  record(ctx, TracePhase::Backward, "matmul", {sd}, sd, sd, 0, "dQ = dS·K, dK = dSᵀ·Q");
  Tensor dqkv = be.empty({BH / m_heads * T, 3 * m_width}, m_qkvDtype, MemCategory::Activations);
  be.mergeHeads(dq, m_heads, 0, dqkv);
  be.mergeHeads(dk, m_heads, 1, dqkv);
  be.mergeHeads(dv, m_heads, 2, dqkv);
  m_q = m_k = m_probs = m_p = m_v = Tensor();  // c_attn still holds what its backward needs
  return m_attn.backward(ctx, dqkv, needInputGrad);
}

void CausalSelfAttention::releaseSaved() {
  m_q = m_k = m_probs = m_p = m_v = Tensor();
  m_attn.releaseSaved();
  m_proj.releaseSaved();
}

}  // namespace amp
