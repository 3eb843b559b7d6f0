// One pre-LayerNorm GPT block (nanoGPT's transformer.h.N): x + attn(ln_1(x)), then
// + mlp.c_proj(gelu(mlp.c_fc(ln_2(.)))), the MLP 4x wide with exact (erf) GELU. The residual
// stream keeps the widest dtype of its adds (fp32 under autocast: the embedding is fp32 and
// PyTorch's add promotes), the branches compute in whatever autocast gives them.
#pragma once

#include "engine/nn/activation_layer.h"
#include "engine/nn/causal_self_attention.h"
#include "engine/nn/layer_norm.h"

namespace amp {

class TransformerBlock final : public Layer {
 public:
  TransformerBlock(std::int64_t width, std::int64_t heads, int layers,
                   std::shared_ptr<SequenceLength> length);
  std::string kind() const override { return "TransformerBlock"; }
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
    m_ln1.forEachLayer(visit);
    m_attn.forEachLayer(visit);
    m_ln2.forEachLayer(visit);
    m_fc.forEachLayer(visit);
    m_gelu.forEachLayer(visit);
    m_proj.forEachLayer(visit);
  }
  std::int64_t width() const { return m_width; }
  std::int64_t heads() const { return m_heads; }
  // Parameters, all but the two LayerNorms' in weighted (16-bit under autocast) layers.
  static std::int64_t parameterCount(std::int64_t width) { return 12 * width * width + 13 * width; }

 private:
  // a + b into the promoted dtype (PyTorch's add), with its trace row.
  Tensor residualAdd(LayerContext& ctx, const Tensor& a, const Tensor& b, const char* what);
  void recordAdd(LayerContext& ctx, DType a, DType b, DType out, const char* what);

  std::int64_t m_width, m_heads;
  LayerNorm m_ln1, m_ln2;
  CausalSelfAttention m_attn;
  Linear m_fc, m_proj;
  ActivationLayer m_gelu{Activation::GELU};
  DType m_inputDtype = DType::F32, m_midDtype = DType::F32;
};

}  // namespace amp
