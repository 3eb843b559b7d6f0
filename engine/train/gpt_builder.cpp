#include "engine/train/gpt_builder.h"

#include "engine/config/config_schema.h"
#include "engine/nn/layer_norm.h"
#include "engine/nn/linear.h"
#include "engine/nn/token_embedding.h"
#include "engine/nn/transformer_block.h"

namespace amp {

void validateGpt(const ModelConfig& m, const Shape& sample, std::int64_t vocabulary) {
  if (m.layers < 1 || m.layers > 96)
    throw ConfigError("model.layers: a gpt needs 1 to 96 blocks, got " + std::to_string(m.layers));
  if (m.embd < 1 || m.embd > 16384)
    throw ConfigError("model.embd: expected 1 to 16384, got " + std::to_string(m.embd));
  if (m.heads < 1 || m.embd % m.heads != 0)
    throw ConfigError("model.heads: " + std::to_string(m.heads) + " heads do not divide model.embd=" +
                      std::to_string(m.embd));
  if (m.block < 1 || m.block > 8192)
    throw ConfigError("model.block: expected a context of 1 to 8192 tokens, got " +
                      std::to_string(m.block));
  if (sample.size() != 1 || sample[0] > m.block)
    throw ConfigError("model.name: gpt needs token sequences (data.name=text or a sequence task); "
                      "this data set's samples are " + shapeString(sample));
  if (vocabulary != kByteVocabulary)
    throw ConfigError("model.name: gpt predicts bytes (256 classes); the data has " +
                      std::to_string(vocabulary));
}

std::unique_ptr<Sequential> buildGpt(const ModelConfig& m, const Shape& sample,
                                     std::int64_t vocabulary) {
  validateGpt(m, sample, vocabulary);
  auto length = std::make_shared<SequenceLength>();
  auto net = std::make_unique<Sequential>();
  auto embedding = std::make_unique<TokenEmbedding>(vocabulary, m.block, m.embd, length);
  Parameter* table = embedding->tokenTable();
  net->add(std::move(embedding), "transformer");
  for (int i = 0; i < m.layers; ++i)
    net->add(std::make_unique<TransformerBlock>(m.embd, m.heads, m.layers, length),
             "transformer.h." + std::to_string(i));
  net->add(std::make_unique<LayerNorm>(m.embd), "transformer.ln_f");
  auto head = std::make_unique<Linear>(m.embd, vocabulary, /*bias=*/false);
  head->tieWeight(table);
  net->add(std::move(head), "lm_head");
  return net;
}

}  // namespace amp
