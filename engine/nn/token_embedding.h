// GPT's input layer: token embedding plus learned position embedding (nanoGPT's transformer.wte
// and transformer.wpe). Tokens (batch, T) int32 -> (batch * T, C) rows: the transformer works on
// token rows, and the layers that need T (attention) read it from the shared SequenceLength.
// Not on any autocast list: it runs in the tables' dtype (fp32 masters: fp32 rows).
#pragma once

#include <memory>

#include "engine/nn/layer.h"

namespace amp {

// The sequence length of the batch in flight, set by TokenEmbedding::forward for the layers of
// the same model (the context of a training batch, or fewer tokens while generating text).
struct SequenceLength {
  std::int64_t t = 0;
};

class TokenEmbedding final : public Layer {
 public:
  TokenEmbedding(std::int64_t vocab, std::int64_t context, std::int64_t width,
                 std::shared_ptr<SequenceLength> length);
  std::string kind() const override { return "Embedding"; }
  std::string describe() const override;
  Shape outputShape(const Shape& in) const override;  // {T} -> {T, C}
  Tensor forward(LayerContext& ctx, const Tensor& tokens) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  std::vector<Parameter*> parameters() override { return {&m_wte, &m_wpe}; }
  void initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) override;
  void releaseSaved() override { m_tokens = Tensor(); }
  // The token table, which the LM head shares (Linear::tieWeight).
  Parameter* tokenTable() { return &m_wte; }
  std::int64_t parameterCount() const { return (m_vocab + m_context) * m_width; }

 private:
  std::int64_t m_vocab, m_context, m_width;
  std::shared_ptr<SequenceLength> m_length;
  Parameter m_wte, m_wpe;
  Tensor m_tokens;
  DType m_outputDtype = DType::F32;
};

}  // namespace amp
