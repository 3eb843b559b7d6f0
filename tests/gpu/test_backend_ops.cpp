// Every Backend method run on the CPU backend (the reference) and the CUDA backend with the same
// inputs, in the style of ggml's test-backend-ops. Bit for bit: casts, fills, accumulate, scale,
// ReLU and GELU, dropout masks and outputs, bias gradients, loss gradients, unscale-and-check, non-finite
// counts and histograms (the AMP step's ops are in test_backend_ops_step.cpp). Within stated
// bounds: GEMMs (against a double reference), transcendental activations (tanh and sigmoid: libdevice vs glibc),
// and sums taken in a different order (double precision, relative 1e-12). Skips without a GPU.
#include <algorithm>

#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

TEST_F(CpuAndCuda, CastsAndRoundTripsAreBitExact) {
  const auto v = testValues(5000, 1, 30.f);
  for (DType from : kFloats)
    for (DType to : kFloats) {
      Pair src = both(v, {5000}, from);
      Pair dst = emptyBoth({5000}, to);
      cpu->castInto(src.c, dst.c);
      cuda->castInto(src.g, dst.g);
      expectSameBits(dst, "cast " + name(from) + " -> " + name(to));
    }
  for (DType through : {DType::F16, DType::BF16}) {
    Pair t = both(v, {5000}, DType::F32);
    cpu->roundThrough(t.c, through);
    cuda->roundThrough(t.g, through);
    expectSameBits(t, "round through " + name(through));
  }
}

TEST_F(CpuAndCuda, UploadFillSetElementAccumulateAndScaleAreBitExact) {
  const auto v = testValues(3000, 2);
  for (DType d : kFloats) {
    Pair t = both(v, {3000}, d);
    expectSameBits(t, "upload " + name(d));
    cpu->setElement(t.c, 17, 1e5f);
    cuda->setElement(t.g, 17, 1e5f);
    expectSameBits(t, "setElement " + name(d));
    cpu->scaleInPlace(t.c, 1.f / 3.f);
    cuda->scaleInPlace(t.g, 1.f / 3.f);
    expectSameBits(t, "scale " + name(d));
    for (DType s : kFloats) {
      Pair acc = both(v, {3000}, d);
      Pair add = both(testValues(3000, 3), {3000}, s);
      cpu->accumulate(acc.c, add.c);
      cuda->accumulate(acc.g, add.g);
      expectSameBits(acc, "accumulate " + name(d) + " += " + name(s));
    }
    Pair f = emptyBoth({100}, d);
    cpu->fill(f.c, 0.1f);
    cuda->fill(f.g, 0.1f);
    expectSameBits(f, "fill " + name(d));
  }
}

// ReLU, and GELU since its erf and exp are activation_math.h's own (plain multiplies, adds and
// bit selects; the device code is built with --fmad=false), are the same bits on both backends.
// Bound for tanh and sigmoid: CUDA's tanhf/expf are within 2 ulp of the exact result and glibc's
// within 1, so the fp32 results differ by a few ulp of the terms they are made of: relative 4
// ulp, or absolute 1e-5. 16-bit outputs may then round one ulp apart (relative 2^-10, 2^-7).
TEST_F(CpuAndCuda, ActivationsMatchWithinLibmBounds) {
  const auto v = finiteValues(4096, 4, 2.f);
  for (DType d : kFloats)
    for (Activation a : {Activation::ReLU, Activation::Tanh, Activation::Sigmoid, Activation::GELU}) {
      Pair x = both(v, {64, 64}, d), y = emptyBoth({64, 64}, d);
      cpu->activationForward(a, x.c, y.c);
      cuda->activationForward(a, x.g, y.g);
      Pair dy = both(finiteValues(4096, 5, 1.f), {64, 64}, d), dx = emptyBoth({64, 64}, d);
      // The backward runs on identical inputs: the CPU's forward result on both.
      Pair yc{y.c, cuda->fromHost(cpu->toHostFloat(y.c), {64, 64}, d, MemCategory::Workspace)};
      cpu->activationBackward(a, x.c, yc.c, dy.c, dx.c);
      cuda->activationBackward(a, x.g, yc.g, dy.g, dx.g);
      const std::string what = "activation " + std::to_string(int(a)) + " " + name(d);
      if (a == Activation::ReLU || a == Activation::GELU) {
        expectSameBits(y, what);
        expectSameBits(dx, what + " backward");
        continue;
      }
      const double rel = d == DType::F32 ? 4.8e-7 : d == DType::F16 ? 9.8e-4 : 7.9e-3;
      expectClose(y, 1e-5, rel, what);
      expectClose(dx, 1e-5, rel, what + " backward");
    }
}

TEST_F(CpuAndCuda, DropoutMasksAndOutputsAreBitExact) {
  const auto v = finiteValues(10000, 6);
  for (DType d : kFloats)
    for (float p : {0.f, 0.1f, 0.5f}) {
      Pair x = both(v, {100, 100}, d), y = emptyBoth({100, 100}, d);
      Pair mask = emptyBoth({100, 100}, DType::U8);
      cpu->dropoutForward(x.c, mask.c, y.c, p, 0x1234567ull);
      cuda->dropoutForward(x.g, mask.g, y.g, p, 0x1234567ull);
      expectSameBits(mask, "dropout mask");
      expectSameBits(y, "dropout forward " + name(d));
      Pair dx = emptyBoth({100, 100}, d);
      cpu->dropoutBackward(x.c, mask.c, dx.c, p);
      cuda->dropoutBackward(x.g, mask.g, dx.g, p);
      expectSameBits(dx, "dropout backward " + name(d));
    }
}

// c = op(a) op(b) + bias against a double reference. Bound: k * u * sum |a_ik b_kj| (+ the
// output's half ulp for 16-bit outputs), u = 2^-23 for fp32 accumulation (TF32 is off).
TEST_F(CpuAndCuda, GemmsMatchADoubleReferenceWithinTheAccumulationBound) {
  const std::int64_t m = 37, k = 129, n = 65;
  for (DType in : kFloats)
    for (DType out : {DType::F32, in})
      for (int trans = 0; trans < 4; ++trans) {
        const bool ta = trans & 1, tb = trans & 2;
        const Shape as = ta ? Shape{k, m} : Shape{m, k}, bs = tb ? Shape{n, k} : Shape{k, n};
        Pair a = both(finiteValues(m * k, 7, 2.f), as, in), b = both(finiteValues(k * n, 8, 2.f), bs, in);
        Pair bias = both(finiteValues(n, 9), {n}, in);
        Pair c = emptyBoth({m, n}, out);
        cuda->gemm(a.g, ta, b.g, tb, c.g, &bias.g);
        const auto A = cpu->toHostFloat(a.c), B = cpu->toHostFloat(b.c), Bi = cpu->toHostFloat(bias.c);
        const auto C = cuda->toHostFloat(c.g);
        const double u = std::ldexp(1.0, -23), outUlp = out == DType::F16 ? std::ldexp(1.0, -11)
                                                      : out == DType::BF16 ? std::ldexp(1.0, -8) : 0;
        int bad = 0;
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            double ref = Bi[j], mag = std::fabs(Bi[j]);
            for (std::int64_t p = 0; p < k; ++p) {
              const double x = A[ta ? p * m + i : i * k + p], y = B[tb ? j * k + p : p * n + j];
              ref += x * y;
              mag += std::fabs(x * y);
            }
            const double bound = (k + 2) * u * mag + outUlp * std::fabs(ref) + 1e-30;
            if (std::fabs(C[i * n + j] - ref) > bound && bad++ < 5)
              ADD_FAILURE() << name(in) << "->" << name(out) << " trans " << trans << " [" << i
                            << "," << j << "]: " << C[i * n + j] << " vs " << ref;
          }
      }
}

// fp16 -> fp16 GEMMs whose fp32 results pass fp16's range must store ±inf, as on the CPU (the
// overflow lesson depends on it): 65520 is the rounding boundary (65512 rounds down to 65504).
// With a bias (fused in the epilogue) the sums move by ±16 before the one rounding.
TEST_F(CpuAndCuda, Fp16GemmOverflowStoresInfinityAsOnTheCpu) {
  // a (3, 2) x b (2, 2) = [[65520, -65520], [65504, -65504], [65512, -65512]], every product exact.
  const std::vector<float> av{32752.f, 32768.f, 32752.f, 32752.f, 65504.f, 8.f};
  const std::vector<float> bv{1.f, -1.f, 1.f, -1.f};
  for (bool withBias : {false, true}) {
    Pair a = both(av, {3, 2}, DType::F16), b = both(bv, {2, 2}, DType::F16);
    Pair bias = both({16.f, -16.f}, {2}, DType::F16);
    Pair c = emptyBoth({3, 2}, DType::F16);
    cpu->gemm(a.c, false, b.c, false, c.c, withBias ? &bias.c : nullptr);
    cuda->gemm(a.g, false, b.g, false, c.g, withBias ? &bias.g : nullptr);
    const std::vector<float> expected =
        withBias ? std::vector<float>{kInf, -kInf, kInf, -kInf, kInf, -kInf}      // 65536, 65520, 65528
                 : std::vector<float>{kInf, -kInf, 65504.f, -65504.f, 65504.f, -65504.f};
    const std::string what = std::string("fp16 gemm overflow") + (withBias ? " with bias" : "");
    EXPECT_EQ(cuda->toHostFloat(c.g), expected) << what;
    EXPECT_EQ(cpu->toHostFloat(c.c), expected) << what << " (CPU)";
    expectSameBits(c, what);
  }
}

// k == 0 (and any empty dimension): the CPU's oneDNN matmul refuses it, so the CUDA backend
// refuses it the same way (std::invalid_argument) rather than fill zeros and drop the bias.
TEST_F(CpuAndCuda, EmptyGemmsAreRefusedByBoth) {
  for (DType d : kFloats) {
    Pair a = emptyBoth({3, 0}, d), b = emptyBoth({0, 4}, d), bias = both({1.f, 2.f, 3.f, 4.f}, {4}, d);
    for (DType out : {DType::F32, d}) {
      Pair c = emptyBoth({3, 4}, out);
      EXPECT_THROW(cpu->gemm(a.c, false, b.c, false, c.c, &bias.c), std::invalid_argument) << name(d);
      EXPECT_THROW(cuda->gemm(a.g, false, b.g, false, c.g, &bias.g), std::invalid_argument) << name(d);
      EXPECT_THROW(cuda->gemm(a.g, false, b.g, false, c.g, nullptr), std::invalid_argument) << name(d);
    }
  }
}

// Both backends sum in the blocked order of bias_grad_order.h. Shapes: a partial column tile
// (33), rows that end inside a row block (1, 64, 70), more row blocks than one pass of the
// kernel's 8 warps takes (300: 10 blocks; 1000: 32), and the recipe's 512 x 4096; the GPT's
// 32768 rows of 768 and 3072 columns (the two-pass form of bias_grad.cu, and the one-pass
// kernel with AMP_CUDA_DISABLE=wide-bias-grad).
TEST_F(CpuAndCuda, BiasGradIsBitExact) {
  for (DType d : kFloats)
    for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{64, 33}, {1, 5}, {70, 97},
                                {300, 40}, {1000, 65}, {512, 4096}, {32768, 768}, {32768, 3072}}) {
      Pair dy = both(finiteValues(m * n, 10), {m, n}, d), db = emptyBoth({n}, d);
      cpu->biasGrad(dy.c, db.c);
      cuda->biasGrad(dy.g, db.g);
      expectSameBits(db, "bias grad " + name(d) + " " + std::to_string(m) + "x" + std::to_string(n));
    }
}

TEST_F(CpuAndCuda, LossesAndAccuracy) {
  const std::int64_t m = 50, c = 10;
  std::vector<std::int32_t> labels(m);
  for (std::int64_t i = 0; i < m; ++i) labels[i] = static_cast<std::int32_t>((i * 7) % c);
  const Tensor lc = cpu->fromHostInt(labels, {m}, MemCategory::Workspace);
  const Tensor lg = cuda->fromHostInt(labels, {m}, MemCategory::Workspace);
  for (DType d : kFloats) {
    Pair z = both(finiteValues(m * c, 11, 2.f), {m, c}, d), probs = emptyBoth({m, c}, DType::F32);
    const double a = cpu->crossEntropyForward(z.c, lc, probs.c);
    const double b = cuda->crossEntropyForward(z.g, lg, probs.g);
    EXPECT_NEAR(a, b, 1e-12 * std::fabs(a)) << "cross-entropy " << name(d);
    expectClose(probs, 0, 2.4e-7, "softmax " + name(d));  // float(exp(double)): 1 ulp
    Pair p{probs.c, cuda->fromHost(cpu->toHostFloat(probs.c), {m, c}, DType::F32, MemCategory::Workspace)};
    Pair g = emptyBoth({m, c}, d);
    cpu->crossEntropyBackward(p.c, lc, 1024.f, g.c);
    cuda->crossEntropyBackward(p.g, lg, 1024.f, g.g);
    expectSameBits(g, "cross-entropy backward " + name(d));
    EXPECT_EQ(cpu->countCorrect(z.c, lc), cuda->countCorrect(z.g, lg)) << name(d);

    Pair pred = both(finiteValues(m * c, 12), {m, c}, d), target = both(finiteValues(m * c, 13), {m, c}, DType::F32);
    const double ma = cpu->mseForward(pred.c, target.c), mb = cuda->mseForward(pred.g, target.g);
    EXPECT_NEAR(ma, mb, 1e-12 * ma) << "mse " << name(d);
    Pair dp = emptyBoth({m, c}, d);
    cpu->mseBackward(pred.c, target.c, 8.f, dp.c);
    cuda->mseBackward(pred.g, target.g, 8.f, dp.g);
    expectSameBits(dp, "mse backward " + name(d));
  }
  labels[3] = 99;  // out of range: the same refusal on both
  const Tensor badG = cuda->fromHostInt(labels, {m}, MemCategory::Workspace);
  Pair z = both(finiteValues(m * c, 11), {m, c}, DType::F32), probs = emptyBoth({m, c}, DType::F32);
  EXPECT_THROW(cuda->crossEntropyForward(z.g, badG, probs.g), std::invalid_argument);
}

TEST_F(CpuAndCuda, UnscaleAndCheckCountsAndNormsMatch) {
  for (DType d : {DType::F32, DType::F16}) {
    std::vector<Pair> grads;
    for (int i = 0; i < 4; ++i) grads.push_back(both(finiteValues(1000 + 300 * i, 20 + i, 10.f), {1000 + 300 * i}, d));
    cpu->setElement(grads[2].c, 5, kInf);
    cuda->setElement(grads[2].g, 5, kInf);
    cpu->setElement(grads[3].c, 9, kNaN);
    cuda->setElement(grads[3].g, 9, kNaN);
    std::vector<Tensor*> gc, gg;
    for (auto& p : grads) {
      gc.push_back(&p.c);
      gg.push_back(&p.g);
    }
    const UnscaleResult rc = cpu->unscaleAndCheck(gc, 1.f / 1024.f);
    const UnscaleResult rg = cuda->unscaleAndCheck(gg, 1.f / 1024.f);
    EXPECT_EQ(rc.foundInf, rg.foundInf);
    EXPECT_EQ(rc.firstNonFinite, rg.firstNonFinite);
    EXPECT_EQ(rg.firstNonFinite, 2);
    for (auto& p : grads) expectSameBits(p, "unscaled " + name(d));
    EXPECT_EQ(cpu->countNonFinite(grads[3].c), cuda->countNonFinite(grads[3].g));
    EXPECT_NEAR(cpu->sumOfSquares(grads[0].c), cuda->sumOfSquares(grads[0].g),
                1e-12 * cpu->sumOfSquares(grads[0].c));
  }
}

TEST_F(CpuAndCuda, HistogramsAreExact) {
  const auto v = testValues(20000, 30, 40.f);
  for (DType d : kFloats)
    for (double mult : {1.0, 1.0 / 65536.0, 1.0 / 3.0}) {
      Pair t = both(v, {20000}, d);
      const ExponentHistogram a = cpu->histogram(t.c, mult), b = cuda->histogram(t.g, mult);
      EXPECT_EQ(a.counts, b.counts) << name(d) << " x" << mult;
      EXPECT_EQ(a.total, b.total);
      EXPECT_EQ(a.underflow, b.underflow);
      EXPECT_EQ(a.subnormal, b.subnormal);
      EXPECT_EQ(a.overflow, b.overflow);
      EXPECT_EQ(a.nonFinite, b.nonFinite);
    }
}

// (Convolutions' refusals are in test_backend_ops_conv.cpp.)
TEST_F(CpuAndCuda, BadGemmShapesThrowClearly) {
  Pair a = emptyBoth({3, 4}, DType::F32), b = emptyBoth({5, 6}, DType::F32), c = emptyBoth({3, 6}, DType::F32);
  EXPECT_THROW(cuda->gemm(a.g, false, b.g, false, c.g), std::invalid_argument);
}

// A batch gathered from a data set kept on the device: the same bytes as the CPU's gather, for
// rows in order (one device copy), shuffled with repeats (the gather kernel) and row sizes that
// take each word width (16-byte, 4-byte, 2-byte: 4 fp32, 3 fp32, 3 fp16 values per row), and
// int32 labels.
TEST_F(CpuAndCuda, GatherRowsIsBitExact) {
  const std::vector<std::vector<std::int64_t>> orders = {{3, 4, 5, 6}, {9, 0, 4, 4, 1, 7}};
  for (const auto& [cols, dtype] : {std::pair{4, DType::F32}, std::pair{3, DType::F32},
                                    std::pair{3, DType::F16}, std::pair{1024, DType::BF16}}) {
    const Pair src = both(finiteValues(std::size_t(10 * cols), 5), {10, cols}, dtype);
    for (const auto& rows : orders) {
      Pair dst = emptyBoth({std::int64_t(rows.size()), cols}, dtype);
      cpu->gatherRows(src.c, rows, dst.c);
      cuda->gatherRows(src.g, rows, dst.g);
      expectSameBits(dst, "gather " + std::to_string(cols) + " " + name(dtype));
    }
  }
  std::vector<std::int32_t> labels(10);
  for (int i = 0; i < 10; ++i) labels[std::size_t(i)] = 100 + i;
  Tensor lc = cpu->fromHostInt(labels, {10}, MemCategory::Workspace);
  Tensor lg = cuda->fromHostInt(labels, {10}, MemCategory::Workspace);
  Tensor oc = cpu->empty({6}, DType::I32, MemCategory::Workspace);
  Tensor og = cuda->empty({6}, DType::I32, MemCategory::Workspace);
  cpu->gatherRows(lc, orders[1], oc);
  cuda->gatherRows(lg, orders[1], og);
  EXPECT_EQ(cuda->toHostInt(og), cpu->toHostInt(oc));
  EXPECT_THROW(cuda->gatherRows(lg, std::vector<std::int64_t>{0, 10, 1, 2, 3, 4}, og), std::invalid_argument);
}
