// The transformer's ops on the CPU backend and its layers: gradients against central finite
// differences (LayerNorm, causal self-attention, a whole block, the GPT with its tied head through
// token cross-entropy), the ops against hand-computed values (embedding rows and their
// deterministic scatter-add, the causal mask, head split/merge as exact permutations, batched GEMM
// as one GEMM per matrix), and the 16-bit roundings the softmax's scale multiply adds.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "engine/nn/causal_self_attention.h"
#include "engine/nn/layer_norm.h"
#include "engine/nn/loss.h"
#include "engine/nn/transformer_block.h"
#include "engine/train/gpt_builder.h"
#include "gradcheck_support.h"
#include "kernels/common/float16.h"

using namespace amp;
using namespace amp::test;

namespace {

Tensor host(Backend& be, const std::vector<float>& v, const Shape& s, DType d = DType::F32) {
  return be.fromHost(v, s, d, MemCategory::Activations);
}

float half(float v) { return halfBitsToFloat(floatToHalfBits(v)); }

}  // namespace

TEST(TransformerOps, EmbeddingAddsTheTokenAndPositionRows) {
  auto be = makeCpuBackend();
  // vocabulary 3, width 2, context 2; tokens of two sequences of 2.
  Tensor wte = host(*be, {1, 2, 10, 20, 100, 200}, {3, 2});
  Tensor wpe = host(*be, {0.5f, 0.25f, -1, -2}, {2, 2});
  Tensor tok = be->fromHostInt(std::vector<std::int32_t>{2, 0, 1, 1}, {2, 2}, MemCategory::Activations);
  Tensor y = be->empty({4, 2}, DType::F32, MemCategory::Activations);
  be->embeddingForward(tok, wte, wpe, 2, y);
  EXPECT_EQ(be->toHostFloat(y), (std::vector<float>{100.5f, 200.25f, 0, 0, 10.5f, 20.25f, 9, 18}));
}

TEST(TransformerOps, EmbeddingBackwardSumsRowsPerTokenAndPosition) {
  auto be = makeCpuBackend();
  Tensor tok = be->fromHostInt(std::vector<std::int32_t>{2, 0, 2, 2}, {2, 2}, MemCategory::Activations);
  Tensor dy = host(*be, {1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  Tensor dwte = be->empty({3, 2}, DType::F32, MemCategory::Gradients);
  Tensor dwpe = be->empty({3, 2}, DType::F32, MemCategory::Gradients);  // one row past T stays 0
  be->embeddingBackward(dy, tok, 2, dwte, dwpe);
  // token 2 at rows 0, 2, 3; token 0 at row 1; token 1 nowhere.
  EXPECT_EQ(be->toHostFloat(dwte), (std::vector<float>{3, 4, 0, 0, 1 + 5 + 7, 2 + 6 + 8}));
  EXPECT_EQ(be->toHostFloat(dwpe), (std::vector<float>{1 + 5, 2 + 6, 3 + 7, 4 + 8, 0, 0}));
}

TEST(TransformerOps, EmbeddingRefusesTokensOutsideTheVocabulary) {
  auto be = makeCpuBackend();
  Tensor wte = be->zeros({3, 2}, DType::F32, MemCategory::Weights);
  Tensor wpe = be->zeros({2, 2}, DType::F32, MemCategory::Weights);
  Tensor tok = be->fromHostInt(std::vector<std::int32_t>{1, 3}, {1, 2}, MemCategory::Activations);
  Tensor y = be->empty({2, 2}, DType::F32, MemCategory::Activations);
  EXPECT_THROW(be->embeddingForward(tok, wte, wpe, 2, y), std::invalid_argument);
}

TEST(TransformerOps, LayerNormHasZeroMeanUnitVarianceRowsAndFp32Statistics) {
  auto be = makeCpuBackend();
  // One fp16 row of 1, 2, 3, 4: mean 2.5, biased variance 1.25.
  Tensor x = host(*be, {1, 2, 3, 4}, {1, 4}, DType::F16);
  Tensor g = host(*be, {1, 1, 1, 1}, {4});
  Tensor b = host(*be, {0, 0, 0, 10}, {4});
  Tensor y = be->empty({1, 4}, DType::F32, MemCategory::Activations);
  Tensor mean = be->empty({1}, DType::F32, MemCategory::Activations);
  Tensor rstd = be->empty({1}, DType::F32, MemCategory::Activations);
  be->layerNormForward(x, g, b, 1e-5f, y, mean, rstd);
  const float r = 1.f / std::sqrt(1.25f + 1e-5f);
  EXPECT_EQ(be->toHostFloat(mean)[0], 2.5f);
  EXPECT_FLOAT_EQ(be->toHostFloat(rstd)[0], r);
  const auto v = be->toHostFloat(y);
  EXPECT_FLOAT_EQ(v[0], -1.5f * r);
  EXPECT_FLOAT_EQ(v[3], 1.5f * r + 10);
}

TEST(TransformerOps, CausalSoftmaxMasksTheFutureAndRoundsTheScaledScores) {
  auto be = makeCpuBackend();
  // Scores in fp16: 1.1 * 0.3 is rounded to fp16 before the softmax, as PyTorch's multiply.
  const float s = half(1.1f), scale = 0.3f;
  Tensor scores = host(*be, {s, 9, 9, s, 0, 9, 0, s, 1}, {1, 3, 3}, DType::F16);
  Tensor p = be->empty({1, 3, 3}, DType::F32, MemCategory::Activations);
  be->causalSoftmaxForward(scores, scale, p);
  const auto v = be->toHostFloat(p);
  EXPECT_EQ(v[0], 1.f);
  EXPECT_EQ(v[1], 0.f) << "masked";
  EXPECT_EQ(v[2], 0.f) << "masked";
  const float a = half(s * scale);
  EXPECT_FLOAT_EQ(v[3], std::exp(a - a) / (1 + std::exp(0 - a)));
  EXPECT_EQ(v[5], 0.f);
  const float sum = v[6] + v[7] + v[8];
  EXPECT_NEAR(sum, 1.f, 1e-6);
  EXPECT_FLOAT_EQ(v[8] / v[6], std::exp(half(1 * scale) - 0.f));
}

TEST(TransformerOps, CausalSoftmaxBackwardMatchesFiniteDifferences) {
  auto be = makeCpuBackend();
  const std::int64_t N = 2, T = 4;
  const float scale = 0.7f;
  const auto sv = randomVector(N * T * T, 5, -2, 2);
  const auto r = randomVector(N * T * T, 6, -1, 1);
  auto objective = [&](const std::vector<float>& in) {
    Tensor p = be->empty({N, T, T}, DType::F32, MemCategory::Activations);
    be->causalSoftmaxForward(host(*be, in, {N, T, T}), scale, p);
    return dot(be->toHostFloat(p), r);
  };
  Tensor p = be->empty({N, T, T}, DType::F32, MemCategory::Activations);
  be->causalSoftmaxForward(host(*be, sv, {N, T, T}), scale, p);
  Tensor ds = be->empty({N, T, T}, DType::F32, MemCategory::Activations);
  be->causalSoftmaxBackward(p, host(*be, r, {N, T, T}), scale, ds);
  expectGradientsMatch(sv, be->toHostFloat(ds), objective, "causal softmax", 1e-2, 2e-3);
}

TEST(TransformerOps, SplitAndMergeHeadsArePermutations) {
  auto be = makeCpuBackend();
  const std::int64_t B = 2, T = 3, H = 2, D = 2, C = H * D;
  std::vector<float> rows(B * T * 3 * C);
  std::iota(rows.begin(), rows.end(), 0.f);
  Tensor x = host(*be, rows, {B * T, 3 * C});
  Tensor k = be->empty({B * H, T, D}, DType::F32, MemCategory::Activations);
  be->splitHeads(x, H, 1, k);
  const auto kv = be->toHostFloat(k);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t d = 0; d < D; ++d)
          EXPECT_EQ(kv[((b * H + h) * T + t) * D + d], rows[(b * T + t) * 3 * C + C + h * D + d]);
  Tensor back = be->zeros({B * T, 3 * C}, DType::F32, MemCategory::Activations);
  be->mergeHeads(k, H, 1, back);
  const auto bv = be->toHostFloat(back);
  for (std::int64_t i = 0; i < B * T; ++i)
    for (std::int64_t c = 0; c < 3 * C; ++c)
      EXPECT_EQ(bv[i * 3 * C + c], c >= C && c < 2 * C ? rows[i * 3 * C + c] : 0.f);
}

TEST(TransformerOps, BatchedGemmIsOneGemmPerMatrix) {
  auto be = makeCpuBackend();
  const std::int64_t n = 3, m = 4, k = 5, p = 2;
  const auto av = randomVector(n * m * k, 1, -1, 1), bv = randomVector(n * p * k, 2, -1, 1);
  Tensor a = host(*be, av, {n, m, k}, DType::F16), b = host(*be, bv, {n, p, k}, DType::F16);
  Tensor c = be->empty({n, m, p}, DType::F16, MemCategory::Activations);
  be->gemmBatched(a, false, b, true, c);
  const auto got = be->toHostFloat(c);
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<float> ai(av.begin() + i * m * k, av.begin() + (i + 1) * m * k);
    std::vector<float> bi(bv.begin() + i * p * k, bv.begin() + (i + 1) * p * k);
    Tensor c1 = be->empty({m, p}, DType::F16, MemCategory::Activations);
    be->gemm(host(*be, ai, {m, k}, DType::F16), false, host(*be, bi, {p, k}, DType::F16), true, c1);
    const auto want = be->toHostFloat(c1);
    for (std::int64_t j = 0; j < m * p; ++j) EXPECT_EQ(got[i * m * p + j], want[j]) << i << "," << j;
  }
}

TEST(TransformerLayers, LayerNormGradientsMatchFiniteDifferences) {
  checkLayer([] { return std::make_unique<LayerNorm>(6); }, {5, 6}, 0, "LayerNorm");
}

TEST(TransformerLayers, AttentionGradientsMatchFiniteDifferences) {
  auto length = std::make_shared<SequenceLength>();
  length->t = 3;
  checkLayer([&] { return std::make_unique<CausalSelfAttention>(4, 2, 1, length); }, {6, 4}, 0,
             "attention", 1e-2, 3e-3);
}

TEST(TransformerLayers, BlockGradientsMatchFiniteDifferences) {
  auto length = std::make_shared<SequenceLength>();
  length->t = 3;
  checkLayer([&] { return std::make_unique<TransformerBlock>(4, 2, 2, length); }, {6, 4}, 0,
             "block", 1e-2, 3e-3);
}

TEST(TransformerLayers, GptParameterGradientsThroughTokenCrossEntropyMatchFiniteDifferences) {
  Fixture f;
  ModelConfig m;
  m.name = "gpt";
  m.layers = 1;
  m.heads = 2;
  m.embd = 4;
  m.block = 3;
  auto net = buildGpt(m, {3}, kByteVocabulary);
  net->initialize(*f.be, 7, DType::F32, MemCategory::Weights);
  // nanoGPT's 0.02-wide draws make LayerNorm's inputs tiny, where a difference step is a large
  // relative change: values of order one keep the check well conditioned.
  std::uint64_t seed = 40;
  for (Parameter* p : net->parameters())
    f.be->uploadFloat(p->value, randomVector(std::size_t(p->value.numel()), ++seed, -0.5, 0.5));
  Tensor tok = f.be->fromHostInt(std::vector<std::int32_t>{65, 66, 67, 66, 65, 255}, {2, 3},
                                 MemCategory::Activations);
  Tensor labels = f.be->fromHostInt(std::vector<std::int32_t>{66, 67, 65, 65, 255, 0}, {6},
                                    MemCategory::Activations);
  CrossEntropyLoss loss;
  auto lossAt = [&] {
    const double l = loss.forward(f.ctx, net->forward(f.ctx, tok), labels);
    loss.releaseSaved();
    net->releaseSaved();
    return l;
  };
  net->zeroGrad();
  loss.forward(f.ctx, net->forward(f.ctx, tok), labels);
  net->backward(f.ctx, loss.backward(f.ctx, 1.f));
  ASSERT_EQ(net->tiedParameters().size(), 1u);
  EXPECT_EQ(net->tiedParameters()[0].first, "lm_head.weight");
  EXPECT_EQ(net->tiedParameters()[0].second->name, "transformer.wte.weight");
  for (Parameter* p : net->parameters()) {
    const auto pv = f.be->toHostFloat(p->value);
    // Only the rows the batch touches: the embedding tables are mostly untouched rows.
    std::vector<float> g = f.be->toHostFloat(p->grad);
    auto objective = [&](const std::vector<float>& v) {
      f.be->uploadFloat(p->value, v);
      const double l = lossAt();
      f.be->uploadFloat(p->value, pv);
      return l;
    };
    if (p->name == "transformer.wte.weight") {
      // Rows 64..67 and 255: tokens used as inputs and as the tied head's outputs.
      for (std::int64_t row : {64, 65, 66, 67, 255}) {
        std::vector<float> v = pv;
        for (std::int64_t c = 0; c < 4; ++c) {
          const std::size_t i = std::size_t(row * 4 + c);
          const float keep = v[i];
          v[i] = keep + 1e-2f;
          const double up = objective(v);
          v[i] = keep - 1e-2f;
          const double down = objective(v);
          v[i] = keep;
          EXPECT_NEAR(g[i], (up - down) / 2e-2, 2e-3) << p->name << " row " << row;
        }
      }
      continue;
    }
    expectGradientsMatch(pv, g, objective, p->name, 1e-2, 3e-3);
  }
}
