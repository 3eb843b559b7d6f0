// Causal multi-head self-attention as nanoGPT writes it: q, k and v from one Linear (c_attn),
// split into heads, scores = q·kᵀ (a 16-bit matmul under autocast), times 1/sqrt(head width),
// masked above the diagonal, softmax (autocast's fp32 list: fp32 probabilities from 16-bit
// scores), probabilities · v (cast back to 16 bits for that matmul), heads merged, c_proj. Works
// on token rows (batch * T, C); T comes from the model's SequenceLength.
#pragma once

#include <memory>

#include "engine/nn/linear.h"
#include "engine/nn/token_embedding.h"

namespace amp {

class CausalSelfAttention final : public Layer {
 public:
  CausalSelfAttention(std::int64_t width, std::int64_t heads, int layers,
                      std::shared_ptr<SequenceLength> length);
  std::string kind() const override { return "CausalSelfAttention"; }
  std::string describe() const override;
  Shape outputShape(const Shape& in) const override { return in; }
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  std::vector<Parameter*> parameters() override;
  void initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) override;
  void releaseSaved() override;
  void setName(std::string n) override;
  void forEachLayer(const std::function<void(Layer&)>& visit) override {
    visit(*this);
    m_attn.forEachLayer(visit);
    m_proj.forEachLayer(visit);
  }

 private:
  void record(LayerContext& ctx, TracePhase phase, const char* op, std::vector<DType> in,
              DType compute, DType out, int casts, const char* note);

  std::int64_t m_width, m_heads;
  std::shared_ptr<SequenceLength> m_length;
  Linear m_attn, m_proj;
  // Saved for backward: q and k (the scores' operands), the softmax output, and the
  // probabilities and v as the second matmul read them.
  Tensor m_q, m_k, m_probs, m_p, m_v;
  DType m_qkvDtype = DType::F32;
  float m_scale = 1.f;
};

}  // namespace amp
