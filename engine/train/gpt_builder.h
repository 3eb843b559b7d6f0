// A GPT-style byte-level language model (model.name = gpt), in nanoGPT's layout so its
// state_dict keys are those of ../shared/peers/pytorch_gpt.py: transformer.wte and .wpe
// (token and position embeddings), transformer.h.N (pre-LayerNorm blocks: ln_1, attn.c_attn,
// attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj), transformer.ln_f, lm_head (no bias, its weight the
// token embedding's: tied). Tokens (batch, T) in, logits (batch * T, vocabulary) out: one row per
// position, which token cross-entropy compares with the next byte.
#pragma once

#include <memory>
#include <string>

#include "engine/config/run_config.h"
#include "engine/nn/sequential.h"

namespace amp {

inline constexpr std::int64_t kByteVocabulary = 256;

// Checks model.layers/heads/embd/block against each other and the data (a sample shape of
// {block} tokens, `vocabulary` classes); throws ConfigError naming the key.
void validateGpt(const ModelConfig& m, const Shape& sample, std::int64_t vocabulary);

std::unique_ptr<Sequential> buildGpt(const ModelConfig& m, const Shape& sample,
                                     std::int64_t vocabulary);

}  // namespace amp
