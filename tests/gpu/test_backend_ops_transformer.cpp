// The transformer ops (backend.h, "transformers") on the CUDA backend against the CPU backend,
// for fp32, fp16 and bf16 operands. What each comparison may expect follows from where the two
// backends' orders of operations agree (kernels/common/transformer_math.h holds the per-element
// expressions both evaluate):
// - bit for bit: embedding forward (one fp32 add, one rounding), embedding backward (every sum
//   in increasing row order on both), layer norm's dgamma and dbeta (row order on both, from
//   the same saved statistics), split and merge of heads (index maps, RNE between dtypes), the
//   zeros above the softmax's diagonal;
// - within bounds: what depends on a row sum taken in another order (layer norm's statistics and
//   output, its dx; the softmax's sum and dot product) or on expf (libdevice vs glibc, a few
//   ulp), stated at each test; a 16-bit output may then round one ulp apart (relative 2^-10 for
//   fp16, 2^-7 for bf16; two for the softmax backward's double rounding).
// The attention products (gemmBatched) are checked against a double reference, as gemm is in
// test_backend_ops.cpp. Skips without a GPU.
#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

// fp16's smallest subnormal: one ulp of any fp16 value below 2^-14.
constexpr double kHalfSubnormalUlp = 5.9604644775390625e-8;

// One ulp of a 16-bit output relative to its value (0 for fp32), times `ulps`.
double outputUlps(DType d, double ulps) {
  return d == DType::F16 ? ulps * std::ldexp(1.0, -10) : d == DType::BF16 ? ulps * std::ldexp(1.0, -7) : 0.0;
}

double maxAbs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("another exception: ") + e.what();
  }
  return "";
}

std::int64_t workspaceBytes(Backend& be) {
  return be.memory().snapshot().current[static_cast<int>(MemCategory::Workspace)];
}

// Tokens with a skewed histogram, as text has: a quarter of the rows choose token 3 (buckets
// longer than the kernel's 32 rows in flight), the rest spread over [0, vocab - 5): the last
// five tokens are never chosen (their gradient rows must be zero).
std::vector<std::int32_t> skewedTokens(std::int64_t m, std::int64_t vocab, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> t(static_cast<std::size_t>(m));
  for (auto& x : t)
    x = rng() % 4 == 0 ? 3 : static_cast<std::int32_t>(rng() % std::uint32_t(vocab - 5));
  return t;
}

struct IntPair {
  Tensor c, g;
};

}  // namespace

class Transformer : public CpuAndCuda {
 protected:
  IntPair tokensBoth(const std::vector<std::int32_t>& t) {
    const Shape s{static_cast<std::int64_t>(t.size())};
    return {cpu->fromHostInt(t, s, MemCategory::Workspace), cuda->fromHostInt(t, s, MemCategory::Workspace)};
  }
};

TEST_F(Transformer, EmbeddingForwardIsBitExact) {
  const std::int64_t B = 3, T = 16;
  for (std::int64_t vocab : {50, 256})
    for (std::int64_t width : {96, 33}) {  // 96: four columns per thread; 33: one
      const IntPair tok = tokensBoth(skewedTokens(B * T, vocab, 1));
      for (DType table : kFloats)
        for (DType out : {table, DType::F32}) {
          Pair wte = both(finiteValues(vocab * width, 2, 3.f), {vocab, width}, table);
          Pair wpe = both(finiteValues((T + 3) * width, 3, 3.f), {T + 3, width}, table);
          Pair y = emptyBoth({B * T, width}, out);
          cpu->embeddingForward(tok.c, wte.c, wpe.c, T, y.c);
          cuda->embeddingForward(tok.g, wte.g, wpe.g, T, y.g);
          expectSameBits(y, "embedding V " + std::to_string(vocab) + " C " + std::to_string(width) +
                                " " + name(table) + " -> " + name(out));
        }
    }
}

TEST_F(Transformer, EmbeddingBackwardIsBitExactAndDeterministic) {
  const std::int64_t B = 8, T = 40, positions = T + 5;
  for (std::int64_t vocab : {50, 256})
    for (std::int64_t width : {128, 33}) {
      const IntPair tok = tokensBoth(skewedTokens(B * T, vocab, 4));
      for (DType g : kFloats)
        for (DType grad : {DType::F32, g}) {
          const std::string what = "embedding backward V " + std::to_string(vocab) + " C " +
                                   std::to_string(width) + " " + name(g) + " -> " + name(grad);
          Pair dy = both(finiteValues(B * T * width, 5, 4.f), {B * T, width}, g);
          Pair dwte = emptyBoth({vocab, width}, grad), dwpe = emptyBoth({positions, width}, grad);
          cpu->embeddingBackward(dy.c, tok.c, T, dwte.c, dwpe.c);
          const std::int64_t before = workspaceBytes(*cuda);
          cuda->embeddingBackward(dy.g, tok.g, T, dwte.g, dwpe.g);
          EXPECT_EQ(workspaceBytes(*cuda), before) << what << ": the sort's workspace is handed back";
          expectSameBits(dwte, what + " dwte");
          expectSameBits(dwpe, what + " dwpe");
          // A second run gives the same bits (no atomics, no order left to chance).
          Tensor dwte2 = cuda->empty({vocab, width}, grad, MemCategory::Workspace);
          Tensor dwpe2 = cuda->empty({positions, width}, grad, MemCategory::Workspace);
          cuda->embeddingBackward(dy.g, tok.g, T, dwte2, dwpe2);
          expectSameElements(grad, cuda->toHostBytes(dwte.g), cuda->toHostBytes(dwte2), what + " rerun");
        }
    }
}

// The CPU refuses a token outside the vocabulary; the GPU cannot look without a synchronisation,
// so the forward makes that row NaN and the backward adds it nowhere: the same gradients as the
// CPU's for those rows' dy zeroed and their tokens replaced by 0 (adding +0 changes no sum).
TEST_F(Transformer, TokensOutsideTheVocabularyGiveNaNRowsAndNoGradient) {
  const std::int64_t B = 2, T = 8, V = 20, C = 12;
  std::vector<std::int32_t> bad = skewedTokens(B * T, V, 6), fixed = bad;
  bad[5] = -1, bad[9] = V;
  fixed[5] = 0, fixed[9] = 0;
  const IntPair badTok = tokensBoth(bad), fixedTok = tokensBoth(fixed);
  Pair wte = both(finiteValues(V * C, 7), {V, C}, DType::F32), wpe = both(finiteValues(T * C, 8), {T, C}, DType::F32);
  Pair y = emptyBoth({B * T, C}, DType::F32);
  EXPECT_THROW(cpu->embeddingForward(badTok.c, wte.c, wpe.c, T, y.c), std::invalid_argument);
  cuda->embeddingForward(badTok.g, wte.g, wpe.g, T, y.g);
  const std::vector<float> out = cuda->toHostFloat(y.g);
  for (std::int64_t m = 0; m < B * T; ++m)
    for (std::int64_t c = 0; c < C; ++c)
      EXPECT_EQ(std::isnan(out[m * C + c]), m == 5 || m == 9) << "row " << m << " column " << c;
  std::vector<float> dyv = finiteValues(B * T * C, 9);
  Pair dy = both(dyv, {B * T, C}, DType::F32);
  std::fill_n(dyv.begin() + 5 * C, C, 0.f);
  std::fill_n(dyv.begin() + 9 * C, C, 0.f);
  const Tensor dyZeroed = cpu->fromHost(dyv, {B * T, C}, DType::F32, MemCategory::Workspace);
  Pair dwte = emptyBoth({V, C}, DType::F32), dwpe = emptyBoth({T, C}, DType::F32);
  cpu->embeddingBackward(dyZeroed, fixedTok.c, T, dwte.c, dwpe.c);
  cuda->embeddingBackward(dy.g, badTok.g, T, dwte.g, dwpe.g);
  expectSameBits(dwte, "dwte without the bad rows");
  // dwpe keeps every row's dy on the GPU (the position is valid), so compare it with the CPU's
  // over the same dy and valid tokens.
  Tensor dwteAll = cpu->empty({V, C}, DType::F32, MemCategory::Workspace);
  cpu->embeddingBackward(dy.c, fixedTok.c, T, dwteAll, dwpe.c);
  expectSameBits(dwpe, "dwpe");
}

// Statistics: each fp32 row sum in another order, so mean and rstd move by a few ulp of the
// sums' terms (relative 1e-5 of the row's largest value for the mean, 1e-5 for rstd); y by those
// through xhat * gamma (|xhat| < 6, |gamma| < 3 here: absolute 2e-5 of |y| <~ 20, plus relative
// 1e-5), then one ulp of a 16-bit y.
TEST_F(Transformer, LayerNormForwardMatchesWithinTheRowSumBound) {
  // 768: a GPT's width in registers; 30: one column per lane; 1500: past the register cache.
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{64, 128}, {37, 768}, {5, 30}, {3, 1500}};
  for (const auto& [rows, width] : shapes)
    for (DType x : kFloats)
      for (DType params : {DType::F32, x})
        for (DType out : {x, DType::F32}) {
          const std::string what = "layer_norm (" + std::to_string(rows) + ", " + std::to_string(width) +
                                   ") " + name(x) + ", params " + name(params) + " -> " + name(out);
          std::vector<float> xv = finiteValues(rows * width, 10, 1.f);
          for (std::size_t i = 0; i < xv.size(); ++i) xv[i] += float(i / width % 5) - 2.f;  // rows off zero
          std::vector<float> gv = finiteValues(width, 11, 0.5f), bv = finiteValues(width, 12, 0.5f);
          for (float& g : gv) g = 1.f + 0.5f * g;
          Pair xt = both(xv, {rows, width}, x), gamma = both(gv, {width}, params), beta = both(bv, {width}, params);
          Pair y = emptyBoth({rows, width}, out), mean = emptyBoth({rows}, DType::F32), rstd = emptyBoth({rows}, DType::F32);
          cpu->layerNormForward(xt.c, gamma.c, beta.c, 1e-5f, y.c, mean.c, rstd.c);
          cuda->layerNormForward(xt.g, gamma.g, beta.g, 1e-5f, y.g, mean.g, rstd.g);
          expectClose(mean, 1e-5 * maxAbs(cpu->toHostFloat(xt.c)), 1e-5, what + " mean");
          expectClose(rstd, 0, 1e-5, what + " rstd");
          expectClose(y, 2e-5 * maxAbs(cpu->toHostFloat(y.c)), 1e-5 + outputUlps(out, 1), what + " y");
        }
}

// From the same saved statistics: dgamma and dbeta bit for bit (row order on both); dx from
// the row means of g and g * xhat taken in another order: absolute 1e-5 of the largest |dx|
// (the terms cancel), relative 1e-5, then one ulp of a 16-bit dx.
TEST_F(Transformer, LayerNormBackwardMatchesAndItsParameterGradientsAreBitExact) {
  // 8192 x 768: the GPT's width over 256 row blocks (the two-pass kernels, 32 row groups).
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{300, 128}, {37, 768}, {70, 30}, {3, 1500}, {8192, 768}};
  for (const auto& [rows, width] : shapes)
    for (DType x : kFloats)
      for (DType params : {DType::F32, x}) {
        const std::string what = "layer_norm backward (" + std::to_string(rows) + ", " +
                                 std::to_string(width) + ") " + name(x) + ", params " + name(params);
        std::vector<float> gv = finiteValues(width, 13, 0.5f);
        for (float& g : gv) g = 1.f + 0.5f * g;
        Pair xt = both(finiteValues(rows * width, 14, 1.f), {rows, width}, x);
        Pair gamma = both(gv, {width}, params), beta = both(finiteValues(width, 15, 0.5f), {width}, params);
        Pair y = emptyBoth({rows, width}, x), mean = emptyBoth({rows}, DType::F32), rstd = emptyBoth({rows}, DType::F32);
        cpu->layerNormForward(xt.c, gamma.c, beta.c, 1e-5f, y.c, mean.c, rstd.c);
        // Both backwards get the CPU's statistics.
        mean.g = cuda->fromHost(cpu->toHostFloat(mean.c), {rows}, DType::F32, MemCategory::Workspace);
        rstd.g = cuda->fromHost(cpu->toHostFloat(rstd.c), {rows}, DType::F32, MemCategory::Workspace);
        Pair dy = both(finiteValues(rows * width, 16, 2.f), {rows, width}, x);
        Pair dx = emptyBoth({rows, width}, x), dgamma = emptyBoth({width}, params), dbeta = emptyBoth({width}, params);
        cpu->layerNormBackward(dy.c, xt.c, gamma.c, mean.c, rstd.c, dx.c, dgamma.c, dbeta.c);
        cuda->layerNormBackward(dy.g, xt.g, gamma.g, mean.g, rstd.g, dx.g, dgamma.g, dbeta.g);
        expectSameBits(dgamma, what + " dgamma");
        expectSameBits(dbeta, what + " dbeta");
        expectClose(dx, 1e-5 * maxAbs(cpu->toHostFloat(dx.c)), 1e-5 + outputUlps(x, 1), what + " dx");
      }
}

// Probabilities: exp in libdevice and glibc differ by a few ulp and the row sum's order
// differs (about sqrt(T) ulp of the sum): relative 1e-5, then one ulp of a 16-bit output (for
// fp16's subnormal probabilities an absolute 2^-24). Above the diagonal: exact zeros (+0).
TEST_F(Transformer, CausalSoftmaxMatchesWithinTheExpBoundAndMasksExactly) {
  // T = 1: one column; 7: no quads; 64 and 300: quads in registers; 1028 and 1030: rows past
  // the register cache (with and without quads).
  for (std::int64_t t : {1, 7, 64, 300, 1028, 1030})
    for (DType s : kFloats)
      for (DType out : {s, DType::F32})
        for (float scale : {0.125f, 0.17677669f}) {
          const std::int64_t n = t > 512 ? 1 : 6;
          const std::string what = "softmax T " + std::to_string(t) + " " + name(s) + " -> " + name(out) +
                                   " scale " + std::to_string(scale);
          Pair scores = both(finiteValues(n * t * t, 17, 3.f), {n, t, t}, s), probs = emptyBoth({n, t, t}, out);
          cpu->causalSoftmaxForward(scores.c, scale, probs.c);
          cuda->causalSoftmaxForward(scores.g, scale, probs.g);
          expectClose(probs, out == DType::F16 ? kHalfSubnormalUlp : 1e-12, 1e-5 + outputUlps(out, 1), what);
          const std::vector<float> p = cuda->toHostFloat(probs.g);
          int bad = 0;
          for (std::int64_t r = 0; r < n * t; ++r)
            for (std::int64_t j = r % t + 1; j < t; ++j)
              if (!(p[r * t + j] == 0.f && !std::signbit(p[r * t + j])) && bad++ < 3)
                ADD_FAILURE() << what << ": row " << r << " column " << j << " is " << p[r * t + j];
        }
}

// From the same probabilities: the dot product's order differs, so p * (dp - dot) moves by p
// times about sqrt(T) ulp of sum |p dp| <= max |dp| (absolute 1e-5 of max |dp| * scale,
// relative 1e-5), and a 16-bit result, rounded twice, by up to two ulp. Above the diagonal:
// exact zeros.
TEST_F(Transformer, CausalSoftmaxBackwardMatchesWithinTheDotProductBound) {
  for (std::int64_t t : {1, 7, 64, 300, 1030})
    for (DType d : kFloats)
      for (float scale : {0.125f, 0.17677669f}) {
        const std::int64_t n = t > 512 ? 1 : 4;
        const std::string what = "softmax backward T " + std::to_string(t) + " " + name(d) + " scale " + std::to_string(scale);
        Pair scores = both(finiteValues(n * t * t, 18, 3.f), {n, t, t}, d), probs = emptyBoth({n, t, t}, d);
        cpu->causalSoftmaxForward(scores.c, scale, probs.c);
        probs.g = cuda->fromHost(cpu->toHostFloat(probs.c), {n, t, t}, d, MemCategory::Workspace);
        const std::vector<float> dpv = finiteValues(n * t * t, 19, 2.f);
        Pair dprobs = both(dpv, {n, t, t}, d), dscores = emptyBoth({n, t, t}, d);
        cpu->causalSoftmaxBackward(probs.c, dprobs.c, scale, dscores.c);
        cuda->causalSoftmaxBackward(probs.g, dprobs.g, scale, dscores.g);
        expectClose(dscores, 1e-5 * maxAbs(dpv) * scale, 1e-5 + outputUlps(d, 2), what);
        const std::vector<float> g = cuda->toHostFloat(dscores.g);
        int bad = 0;
        for (std::int64_t r = 0; r < n * t; ++r)
          for (std::int64_t j = r % t + 1; j < t; ++j)
            if (!(g[r * t + j] == 0.f) && bad++ < 3)
              ADD_FAILURE() << what << ": row " << r << " column " << j << " is " << g[r * t + j];
      }
}

TEST_F(Transformer, SplitAndMergeHeadsAreBitExact) {
  const std::int64_t B = 2, T = 5, H = 3;
  // D = 8: 16- or 32-byte head rows (16-byte words); 6: 12 or 24 bytes; 5: 10 or 20 bytes.
  for (std::int64_t D : {8, 6, 5})
    for (std::int64_t parts : {3, 1})
      for (int part = 0; part < parts; ++part)
        for (DType from : kFloats)
          for (DType to : kFloats) {
            const std::string what = "heads D " + std::to_string(D) + " part " + std::to_string(part) +
                                     "/" + std::to_string(parts) + " " + name(from) + " -> " + name(to);
            const Shape rowsShape{B * T, parts * H * D}, headShape{B * H, T, D};
            Pair rows = both(testValues(shapeNumel(rowsShape), 20, 20.f), rowsShape, from);
            Pair heads = emptyBoth(headShape, to);
            cpu->splitHeads(rows.c, H, part, heads.c);
            cuda->splitHeads(rows.g, H, part, heads.g);
            expectSameBits(heads, "split " + what);
            // Merge into rows that already hold values: the other blocks must stay as they are.
            Pair perHead = both(testValues(shapeNumel(headShape), 21, 20.f), headShape, from);
            Pair merged = both(finiteValues(shapeNumel(rowsShape), 22), rowsShape, to);
            cpu->mergeHeads(perHead.c, H, part, merged.c);
            cuda->mergeHeads(perHead.g, H, part, merged.g);
            expectSameBits(merged, "merge " + what);
          }
}

// c[i] = op(a[i]) op(b[i]) against a double reference, with gemm's bound (test_backend_ops.cpp):
// k * u * sum |a b| (u = 2^-23, TF32 off) plus half an ulp of a 16-bit output.
TEST_F(Transformer, BatchedGemmsMatchADoubleReference) {
  const std::int64_t batch = 6, m = 37, k = 29, n = 19;
  for (DType in : kFloats)
    for (DType out : {DType::F32, in})
      for (int trans = 0; trans < 4; ++trans) {
        const bool ta = trans & 1, tb = trans & 2;
        const Shape as = ta ? Shape{batch, k, m} : Shape{batch, m, k};
        const Shape bs = tb ? Shape{batch, n, k} : Shape{batch, k, n};
        Pair a = both(finiteValues(shapeNumel(as), 23, 2.f), as, in), b = both(finiteValues(shapeNumel(bs), 24, 2.f), bs, in);
        Pair c = emptyBoth({batch, m, n}, out);
        cuda->gemmBatched(a.g, ta, b.g, tb, c.g);
        const auto A = cpu->toHostFloat(a.c), Bv = cpu->toHostFloat(b.c), C = cuda->toHostFloat(c.g);
        const double u = std::ldexp(1.0, -23), half = outputUlps(out, 0.5);
        int bad = 0;
        for (std::int64_t q = 0; q < batch; ++q)
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
              double ref = 0, mag = 0;
              for (std::int64_t p = 0; p < k; ++p) {
                const double x = A[q * m * k + (ta ? p * m + i : i * k + p)];
                const double y = Bv[q * k * n + (tb ? j * k + p : p * n + j)];
                ref += x * y;
                mag += std::fabs(x * y);
              }
              const double got = C[(q * m + i) * n + j];
              if (std::fabs(got - ref) > (k + 2) * u * mag + half * std::fabs(ref) + 1e-30 && bad++ < 5)
                ADD_FAILURE() << name(in) << "->" << name(out) << " trans " << trans << " [" << q << ","
                              << i << "," << j << "]: " << got << " vs " << ref;
            }
      }
}

TEST_F(Transformer, TransformerOpsRefuseWhatTheCpuRefuses) {
  auto same = [&](const std::function<void(Backend&)>& call, const std::string& what) {
    const std::string onCpu = refusal([&] { call(*cpu); });
    EXPECT_FALSE(onCpu.empty()) << what << ": the CPU accepted it";
    EXPECT_EQ(refusal([&] { call(*cuda); }), onCpu) << what;
  };
  auto t = [](Backend& be, const Shape& s, DType d = DType::F32) {
    return be.zeros(s, d, MemCategory::Workspace);
  };
  same([&](Backend& be) {
    Tensor tok = be.fromHostInt(std::vector<std::int32_t>(10, 1), {10}, MemCategory::Workspace);
    Tensor y = t(be, {10, 4});
    be.embeddingForward(tok, t(be, {5, 4}), t(be, {8, 4}), 4, y);  // 10 tokens, T = 4
  }, "embedding with a partial sequence");
  same([&](Backend& be) {
    Tensor y = t(be, {6, 8}), mean = t(be, {6}), rstd = t(be, {6});
    be.layerNormForward(t(be, {6, 8}), t(be, {7}), t(be, {8}), 1e-5f, y, mean, rstd);
  }, "layer_norm with a short weight");
  same([&](Backend& be) {
    Tensor dx = t(be, {6, 8}), dg = t(be, {8}), db = t(be, {7});
    be.layerNormBackward(t(be, {6, 8}), t(be, {6, 8}), t(be, {8}), t(be, {6}), t(be, {6}), dx, dg, db);
  }, "layer_norm backward with a short bias gradient");
  same([&](Backend& be) {
    Tensor p = t(be, {2, 3, 4});
    be.causalSoftmaxForward(t(be, {2, 3, 4}), 1.f, p);
  }, "softmax of non-square scores");
  same([&](Backend& be) {
    Tensor y = t(be, {4, 5, 2});
    be.splitHeads(t(be, {10, 12}), 2, 3, y);  // 12 columns of C = 4: parts 0..2
  }, "split_heads of a part past the last");
  same([&](Backend& be) {
    Tensor c = t(be, {3, 4, 5}, DType::F16);
    be.gemmBatched(t(be, {3, 4, 6}), false, t(be, {3, 6, 5}), false, c);
  }, "bmm of fp32 into fp16");
}
