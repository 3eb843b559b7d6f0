// The CPU's fused transformer ops give the bits of the unfused ops in turn (Backend's default
// implementations, which make those calls):
//   - the attention (causalAttentionForward / causalAttentionBackward: one matrix at a time,
//     scores, softmax and products while they are in cache) against gemmBatched,
//     causalSoftmaxForward, castInto, gemmBatched and the backward's gemmBatched,
//     causalSoftmaxBackward, gemmBatched, for every dtype combination the attention layer makes:
//     fp32; 16-bit q, k, v with fp32 probabilities and their 16-bit copy (autocast); 16-bit
//     probabilities (softmax moved to the 16-bit list); on a T that is not a multiple of the
//     vector width and on the GPT preset's T = 128, D = 32;
//   - the residual add and LayerNorm in one pass (addLayerNormForward) against add, then
//     layerNormForward, for the dtypes a block makes (fp32 stream plus a 16-bit branch, all
//     16-bit, 16-bit LayerNorm output).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"

using namespace amp;

namespace {

struct Case {
  DType qk, probs, v;  // v's dtype is the product's (y, pv, dy, dv)
};

std::vector<float> randoms(std::int64_t n, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

void expectSameBytes(Backend& be, const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  const auto x = be.toHostBytes(a), y = be.toHostBytes(b);
  ASSERT_EQ(x.size(), y.size()) << what;
  std::size_t differ = 0, first = x.size();
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i] && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << what << ": first differing byte " << first;
}

}  // namespace

TEST(FusedAttention, ForwardAndBackwardEqualTheUnfusedOpsBitForBit) {
  auto be = makeCpuBackend();
  const Case cases[] = {{DType::F32, DType::F32, DType::F32},
                        {DType::BF16, DType::F32, DType::BF16},
                        {DType::F16, DType::F32, DType::F16},
                        {DType::BF16, DType::BF16, DType::BF16},
                        {DType::F16, DType::F16, DType::F16}};
  struct Size {
    std::int64_t n, t, d;
  };
  for (const Size sz : {Size{5, 37, 12}, Size{8, 128, 32}}) {
    const std::int64_t N = sz.n, T = sz.t, D = sz.d;
    const float scale = 1.f / std::sqrt(float(D));
    for (const Case& c : cases) {
      const std::string what = std::string("T ") + std::to_string(T) + " q/k " + std::string(dtypeName(c.qk)) +
                               " probs " + std::string(dtypeName(c.probs)) + " v " + std::string(dtypeName(c.v));
      SCOPED_TRACE(what);
      auto make = [&](unsigned seed, DType d, float s) {
        return be->fromHost(randoms(N * T * D, seed, s), {N, T, D}, d, MemCategory::Activations);
      };
      // Scores of a few units (scale 2 on q and k): rows far from uniform, as trained ones.
      const Tensor q = make(1, c.qk, 2.f), k = make(2, c.qk, 2.f), v = make(3, c.v, 1.f);
      const bool copy = c.probs != c.v;
      auto square = [&](DType d) { return be->empty({N, T, T}, d, MemCategory::Activations); };
      auto heads = [&](DType d) { return be->empty({N, T, D}, d, MemCategory::Activations); };
      Tensor probsF = square(c.probs), probsU = square(c.probs);
      Tensor pvF = copy ? square(c.v) : Tensor(), pvU = copy ? square(c.v) : Tensor();
      Tensor yF = heads(c.v), yU = heads(c.v);
      be->causalAttentionForward(q, k, v, scale, probsF, copy ? &pvF : nullptr, yF);
      be->Backend::causalAttentionForward(q, k, v, scale, probsU, copy ? &pvU : nullptr, yU);
      expectSameBytes(*be, probsF, probsU, "probabilities");
      if (copy) expectSameBytes(*be, pvF, pvU, "the probabilities' copy");
      expectSameBytes(*be, yF, yU, "y");

      const Tensor dy = make(4, c.v, 1.f);
      const Tensor& p = copy ? pvU : probsU;
      Tensor dqF = heads(c.qk), dkF = heads(c.qk), dvF = heads(c.v);
      Tensor dqU = heads(c.qk), dkU = heads(c.qk), dvU = heads(c.v);
      be->causalAttentionBackward(dy, q, k, v, probsU, p, scale, dqF, dkF, dvF);
      be->Backend::causalAttentionBackward(dy, q, k, v, probsU, p, scale, dqU, dkU, dvU);
      expectSameBytes(*be, dqF, dqU, "dq");
      expectSameBytes(*be, dkF, dkU, "dk");
      expectSameBytes(*be, dvF, dvU, "dv");
    }
  }
}

// Operands the fused op cannot take are refused before anything runs.
TEST(FusedAttention, RefusesMismatchedOperands) {
  auto be = makeCpuBackend();
  auto t = [&](Shape s, DType d) { return be->empty(s, d, MemCategory::Activations); };
  Tensor q = t({2, 8, 4}, DType::F32), k = t({2, 8, 4}, DType::F32), v = t({2, 8, 4}, DType::BF16);
  be->fill(q, 0.f);
  be->fill(k, 0.f);
  be->fill(v, 0.f);
  Tensor probs = t({2, 8, 8}, DType::F32), y = t({2, 8, 4}, DType::BF16);
  // fp32 probabilities and a bf16 v need the probabilities' copy.
  EXPECT_THROW(be->causalAttentionForward(q, k, v, 1.f, probs, nullptr, y), std::invalid_argument);
  Tensor wrong = t({2, 8, 4}, DType::F32);
  EXPECT_THROW(be->causalAttentionForward(q, k, v, 1.f, wrong, nullptr, y), std::invalid_argument);
}

TEST(FusedLayerNorm, AddThenLayerNormEqualsTheTwoOpsBitForBit) {
  auto be = makeCpuBackend();
  struct Dtypes {
    DType a, b, sum, y;
  };
  const Dtypes cases[] = {{DType::F32, DType::F32, DType::F32, DType::F32},
                          {DType::F32, DType::BF16, DType::F32, DType::F32},
                          {DType::F32, DType::F16, DType::F32, DType::F16},
                          {DType::BF16, DType::BF16, DType::BF16, DType::BF16},
                          {DType::F16, DType::F16, DType::F16, DType::F32}};
  for (const auto& [rows, width] : {std::pair<std::int64_t, std::int64_t>{37, 128}, {64, 40}}) {
    for (const Dtypes& c : cases) {
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(width) + " " + std::string(dtypeName(c.a)) + " + " +
                   std::string(dtypeName(c.b)) + " -> " + std::string(dtypeName(c.sum)) + ", y " + std::string(dtypeName(c.y)));
      auto make = [&](unsigned seed, DType d, float s, float offset) {
        std::vector<float> v = randoms(rows * width, seed, s);
        for (float& x : v) x += offset;
        return be->fromHost(v, {rows, width}, d, MemCategory::Activations);
      };
      const Tensor a = make(11, c.a, 3.f, 0.5f), b = make(12, c.b, 0.2f, 0.f);
      const Tensor gamma = be->fromHost(randoms(width, 13, 1.f), {width}, c.y, MemCategory::Weights);
      const Tensor beta = be->fromHost(randoms(width, 14, 1.f), {width}, c.y, MemCategory::Weights);
      auto out = [&](DType d) { return be->empty({rows, width}, d, MemCategory::Activations); };
      auto stat = [&] { return be->empty({rows}, DType::F32, MemCategory::Activations); };
      Tensor sumF = out(c.sum), yF = out(c.y), meanF = stat(), rstdF = stat();
      Tensor sumU = out(c.sum), yU = out(c.y), meanU = stat(), rstdU = stat();
      be->addLayerNormForward(a, b, gamma, beta, 1e-5f, sumF, yF, meanF, rstdF);
      be->Backend::addLayerNormForward(a, b, gamma, beta, 1e-5f, sumU, yU, meanU, rstdU);
      expectSameBytes(*be, sumF, sumU, "sum");
      expectSameBytes(*be, yF, yU, "y");
      expectSameBytes(*be, meanF, meanU, "mean");
      expectSameBytes(*be, rstdF, rstdU, "rstd");
    }
  }
}
