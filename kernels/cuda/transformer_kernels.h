// Launchers of the transformer kernels (embedding.cu, layer_norm.cu, causal_softmax.cu,
// attention_heads.cu), in the style of cuda_kernels.h: raw device pointers, dtype codes as
// amp::DType (0 fp32, 1 fp16, 2 bf16), the caller's stream, no CUDA headers needed to call them.
// Launchers only enqueue work; the caller validates shapes first (backend_checks) and checks
// cudaGetLastError() afterwards. The numerics are backend.h's ("transformers"), the per-element
// expressions kernels/common/transformer_math.h's, shared with the CPU backend.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"  // Stream

namespace amp::cuda {

// A float tensor as the kernels see it: its dtype code and its device address.
struct FloatIn {
  int code = 0;
  const void* data = nullptr;
};
struct FloatOut {
  int code = 0;
  void* data = nullptr;
};

// ---- embeddings (embedding.cu) -------------------------------------------------------------
struct EmbeddingShape {
  std::int64_t rows = 0;       // M tokens (a multiple of t)
  std::int64_t vocab = 0;      // V rows of wte
  std::int64_t width = 0;      // C
  std::int64_t positions = 0;  // rows of wpe (>= t)
  std::int64_t t = 0;          // the sequence length T
};
// y (M, C) row m = wte[tokens[m]] + wpe[m % T], the fp32 sum rounded once to y's dtype. A token
// outside [0, V) makes its row NaN (nothing is read out of bounds; the loss then says so).
void launchEmbeddingForward(const EmbeddingShape& s, const std::int32_t* tokens, FloatIn wte,
                            FloatIn wpe, FloatOut y, Stream st);
// Scratch launchEmbeddingBackward needs (the rows sorted by token), in bytes.
std::int64_t embeddingBackwardWorkspaceBytes(const EmbeddingShape& s);
// dwte (V, C) row v = sum of dy's rows m with tokens[m] == v, in fp32 in increasing m (the rows
// are sorted by token with a stable sort, so each bucket keeps that order); dwpe (positions, C)
// row t < T = sum over b of dy row b*T + t in increasing b, rows past T zero. Both rounded once
// to their dtypes; rows no token chose are 0; tokens outside [0, V) add to nothing.
void launchEmbeddingBackward(const EmbeddingShape& s, FloatIn dy, const std::int32_t* tokens,
                             FloatOut dwte, FloatOut dwpe, void* workspace,
                             std::int64_t workspaceBytes, Stream st);

// ---- layer norm (layer_norm.cu): x (rows, width), gamma and beta (width) -------------------
// One warp per row: fp32 mean and biased variance, rstd = 1 / sqrt(var + eps), y rounded once;
// mean and rstd (rows) fp32.
void launchLayerNormForward(std::int64_t rows, std::int64_t width, FloatIn x, FloatIn gamma,
                            FloatIn beta, float eps, FloatOut y, float* mean, float* rstd,
                            Stream st);
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma, one warp per row; dgamma =
// sum of dy * xhat and dbeta = sum of dy per column, each in fp32 in
// kernels/common/bias_grad_order.h's blocked order (the CPU's), rounded once. partials:
// layerNormParamPartialFloats(rows, width) floats of workspace.
std::size_t layerNormParamPartialFloats(std::int64_t rows, std::int64_t width);
void launchLayerNormBackward(std::int64_t rows, std::int64_t width, FloatIn dy, FloatIn x,
                             FloatIn gamma, const float* mean, const float* rstd, FloatOut dx,
                             FloatOut dgamma, FloatOut dbeta, float* partials, Stream st);

// ---- causal softmax (causal_softmax.cu): (matrices, t, t), one warp per row ------------------
// probs row i = softmax over j <= i of causalScore(scores' dtype, scores, scale), 0 for j > i.
void launchCausalSoftmaxForward(std::int64_t matrices, std::int64_t t, FloatIn scores,
                                float scale, FloatOut probs, Stream st);
// dscores = causalScoreGrad(dscores' dtype, probs, dprobs, dot, scale) for j <= i, 0 above.
void launchCausalSoftmaxBackward(std::int64_t matrices, std::int64_t t, FloatIn probs,
                                 FloatIn dprobs, float scale, FloatOut dscores, Stream st);

// ---- attention heads (attention_heads.cu) --------------------------------------------------
struct HeadShape {
  std::int64_t batch = 0, t = 0, heads = 0, headDim = 0, parts = 0;  // B, T, H, D, P
  int part = 0;
};
// splitHeads: perHead (B*H, T, D) = block `part` of rows (B*T, P*H*D); mergeHeads: the reverse,
// leaving rows' other blocks alone. Equal dtypes copy the bits; others convert (RNE).
void launchSplitHeads(const HeadShape& s, FloatIn rows, FloatOut perHead, Stream st);
void launchMergeHeads(const HeadShape& s, FloatIn perHead, FloatOut rows, Stream st);

}  // namespace amp::cuda
