#include "engine/nn/token_embedding.h"

#include <stdexcept>
#include <vector>

#include "engine/data/rng.h"

namespace amp {

TokenEmbedding::TokenEmbedding(std::int64_t vocab, std::int64_t context, std::int64_t width,
                               std::shared_ptr<SequenceLength> length)
    : m_vocab(vocab), m_context(context), m_width(width), m_length(std::move(length)) {
  if (vocab <= 0 || context <= 0 || width <= 0)
    throw std::invalid_argument("Embedding: sizes must be positive");
}

std::string TokenEmbedding::describe() const {
  return "Embedding(" + std::to_string(m_vocab) + " tokens + " + std::to_string(m_context) +
         " positions -> " + std::to_string(m_width) + ")";
}

Shape TokenEmbedding::outputShape(const Shape& in) const {
  if (in.size() != 1 || in[0] <= 0 || in[0] > m_context)
    throw std::invalid_argument(describe() + " expects sequences of at most " +
                                std::to_string(m_context) + " tokens, got " + shapeString(in));
  return {in[0], m_width};
}

void TokenEmbedding::initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) {
  // nanoGPT: both tables ~ normal(0, 0.02).
  auto draw = [&](Parameter& p, const char* suffix, std::int64_t rows) {
    std::vector<float> v(static_cast<std::size_t>(rows * m_width));
    for (float& e : v) e = static_cast<float>(rng.normal() * 0.02);
    p.name = m_name + suffix;
    p.value = be.fromHost(v, {rows, m_width}, dtype, category);
  };
  draw(m_wte, ".wte.weight", m_vocab);
  draw(m_wpe, ".wpe.weight", m_context);
}

Tensor TokenEmbedding::forward(LayerContext& ctx, const Tensor& tokens) {
  if (tokens.dtype() != DType::I32 || tokens.rank() != 2 || tokens.dim(1) > m_context)
    throw std::invalid_argument(describe() + ": expected int32 tokens (batch, <= " +
                                std::to_string(m_context) + "), got " + shapeString(tokens.shape()));
  const std::int64_t T = tokens.dim(1);
  m_length->t = T;
  const std::vector<DType> inputs{m_wte.value.dtype(), m_wpe.value.dtype()};
  m_outputDtype = ctx.autocast.computeDtype("embedding", inputs);
  Tensor y = ctx.backend.empty({tokens.numel(), m_width}, m_outputDtype, MemCategory::Activations);
  ctx.backend.embeddingForward(tokens, m_wte.value, m_wpe.value, T, y);
  m_tokens = tokens;
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, m_name, "embedding",
        ctx.autocast.effectivePolicy("embedding"), ctx.autocast.enabled(), inputs, m_outputDtype,
        m_outputDtype, 0, 0, "token + position rows, in the tables' dtype"};
  });
  return y;
}

Tensor TokenEmbedding::backward(LayerContext& ctx, const Tensor& dy, bool) {
  Backend& be = ctx.backend;
  const std::int64_t T = m_tokens.dim(1);
  Tensor dwte = be.empty(m_wte.value.shape(), m_wte.value.dtype(), MemCategory::Gradients);
  Tensor dwpe = be.empty(m_wpe.value.shape(), m_wpe.value.dtype(), MemCategory::Gradients);
  be.embeddingBackward(dy, m_tokens, T, dwte, dwpe);
  accumulateGrad(be, m_wte, std::move(dwte));
  accumulateGrad(be, m_wpe, std::move(dwpe));
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, m_name, "embedding_backward",
        ctx.autocast.policy().policyFor("embedding"), false, {dy.dtype()}, dy.dtype(),
        m_wte.value.dtype(), 0, 0, "rows summed per token in a fixed order"};
  });
  releaseSaved();
  return Tensor();  // tokens have no gradient
}

}  // namespace amp
