// Every Backend method run on the CPU backend (the reference) and the CUDA backend with the same
// inputs, in the style of ggml's test-backend-ops. Bit for bit: casts, fills, accumulate, scale,
// ReLU, dropout masks and outputs, bias gradients, loss gradients, unscale-and-check, non-finite
// counts, histograms, optimizer steps, the multi-tensor step and the scale update. Within stated
// bounds: GEMMs (against a double reference), transcendental activations (libdevice vs glibc),
// and sums taken in a different order (double precision, relative 1e-12). Skips without a GPU.
#include <algorithm>

#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {
const DType kFloats[] = {DType::F32, DType::F16, DType::BF16};
std::string name(DType d) { return std::string(dtypeName(d)); }
}  // namespace

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

// Bound for tanh, sigmoid and GELU: CUDA's tanhf/expf/erff are within 2 ulp of the exact result
// and glibc's within 1, so the fp32 results differ by a few ulp of the terms they are made of:
// relative 4 ulp, or absolute 1e-5 where GELU's 1 + erf(x) and its derivative's cdf + x pdf
// cancel (|x| < 16 here). 16-bit outputs may then round one ulp apart (relative 2^-10, 2^-7).
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
      if (a == Activation::ReLU) {
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

TEST_F(CpuAndCuda, BiasGradIsBitExact) {
  for (DType d : kFloats) {
    Pair dy = both(finiteValues(64 * 33, 10), {64, 33}, d), db = emptyBoth({33}, d);
    cpu->biasGrad(dy.c, db.c);
    cuda->biasGrad(dy.g, db.g);
    expectSameBits(db, "bias grad " + name(d));
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

TEST_F(CpuAndCuda, OptimizerStepsAreBitExact) {
  for (DType pd : {DType::F32, DType::F16}) {
    for (int variant = 0; variant < 5; ++variant) {
      Pair w = both(finiteValues(5000, 40), {5000}, pd, MemCategory::Weights);
      Pair g = both(finiteValues(5000, 41, 6.f), {5000}, pd == DType::F16 ? DType::F16 : DType::F32);
      Pair a = both(std::vector<float>(5000, 0.f), {5000}, DType::F32);
      Pair b = both(std::vector<float>(5000, 0.f), {5000}, DType::F32);
      UpdateResult rc, rg;
      for (int step = 1; step <= 3; ++step) {
        if (variant < 3) {
          SgdParams p;
          p.lr = 0.01f;
          p.momentum = variant >= 1 ? 0.9f : 0.f;
          p.weightDecay = variant == 2 ? 1e-4f : 0.f;
          p.nesterov = variant == 2;
          p.firstStep = step == 1;
          rc = cpu->sgdStep(w.c, g.c, p.momentum ? &a.c : nullptr, p);
          rg = cuda->sgdStep(w.g, g.g, p.momentum ? &a.g : nullptr, p);
        } else {
          AdamParams p;
          p.weightDecay = 0.01f;
          p.decoupled = variant == 4;
          p.step = step;
          rc = cpu->adamStep(w.c, g.c, a.c, b.c, p);
          rg = cuda->adamStep(w.g, g.g, a.g, b.g, p);
        }
        const std::string what = "variant " + std::to_string(variant) + " " + name(pd) + " step " + std::to_string(step);
        expectSameBits(w, what);
        expectSameBits(a, what + " state a");
        expectSameBits(b, what + " state b");
        EXPECT_EQ(rc.lost, rg.lost) << what;
        EXPECT_NEAR(rc.gradSumOfSquares, rg.gradSumOfSquares, 1e-12 * rc.gradSumOfSquares);
      }
    }
  }
}

// The multi-tensor step as the trainer drives it: unscale, clip, gate, SGD, scale update, one
// read. Run with and without an overflow; every figure and every tensor must agree.
TEST_F(CpuAndCuda, MultiTensorStepMatches) {
  for (bool overflow : {false, true}) {
    std::vector<Pair> w, g, mom;
    for (int i = 0; i < 3; ++i) {
      w.push_back(both(finiteValues(700 * (i + 1), 50 + i), {700 * (i + 1)}, DType::F32, MemCategory::MasterWeights));
      g.push_back(both(finiteValues(700 * (i + 1), 60 + i, 8.f), {700 * (i + 1)}, DType::F32));
      mom.push_back(both(std::vector<float>(700 * (i + 1), 0.f), {700 * (i + 1)}, DType::F32));
    }
    if (overflow) {
      cpu->setElement(g[1].c, 3, kInf);
      cuda->setElement(g[1].g, 3, kInf);
    }
    StepStats s[2];
    int idx = 0;
    for (Backend* be : {cpu.get(), cuda.get()}) {
      std::vector<Tensor*> ws, gs, ms;
      for (int i = 0; i < 3; ++i) {
        ws.push_back(idx ? &w[i].g : &w[i].c);
        gs.push_back(idx ? &g[i].g : &g[i].c);
        ms.push_back(idx ? &mom[i].g : &mom[i].c);
      }
      be->beginStep();
      be->foreachUnscaleAndCheck(gs, 1.f / 256.f);
      be->foreachClipGradNorm(gs, 1.0);
      be->gateStep({true, false});
      SgdParams p;
      p.lr = 0.1f;
      p.momentum = 0.9f;
      p.firstStep = true;
      be->foreachSgdStep(ws, gs, ms, p);
      ScaleRule rule;
      rule.growthInterval = 1;
      be->updateScale(rule, {256.f, 0, 2});
      s[idx++] = be->readStepStats();
    }
    EXPECT_EQ(s[0].foundInf, s[1].foundInf);
    EXPECT_EQ(s[0].firstNonFinite, s[1].firstNonFinite);
    EXPECT_EQ(s[0].stepped, s[1].stepped);
    EXPECT_EQ(s[1].stepped, !overflow);
    EXPECT_EQ(s[0].clipped, s[1].clipped);
    EXPECT_EQ(s[0].lost, s[1].lost);
    EXPECT_EQ(s[0].scale.scale, s[1].scale.scale);
    EXPECT_EQ(s[0].scale.growthTracker, s[1].scale.growthTracker);
    EXPECT_EQ(s[0].scaleEvent, s[1].scaleEvent);
    EXPECT_NEAR(s[0].stepGradSumOfSquares, s[1].stepGradSumOfSquares, 1e-12 * s[0].stepGradSumOfSquares);
    if (!overflow) {
      EXPECT_NEAR(s[0].unscaledSumOfSquares, s[1].unscaledSumOfSquares, 1e-12 * s[0].unscaledSumOfSquares);
    }
    // Clipping multiplies by a coefficient computed from the (order-dependent) norm: the
    // coefficient may differ in its last bit, so gradients and weights are compared closely.
    for (int i = 0; i < 3; ++i) {
      expectClose(g[i], 0, 2.4e-7, "clipped grad");
      expectClose(w[i], 1e-9, 2.4e-7, "weight");
      expectClose(mom[i], 1e-9, 2.4e-7, "momentum buffer");
    }
    if (overflow) {
      // Skipped on the device: weights and momentum buffers untouched, on both backends.
      for (int i = 0; i < 3; ++i) {
        expectSameBits(w[i], "weight after a skipped step");
        expectSameBits(mom[i], "momentum after a skipped step");
        for (float x : cuda->toHostFloat(mom[i].g)) ASSERT_EQ(x, 0.f) << "momentum written by a skipped step";
        EXPECT_EQ(cuda->toHostFloat(w[i].g), finiteValues(700 * (i + 1), 50 + i)) << "weight " << i;
      }
    }
  }
}

namespace {
enum class Opt { Sgd, Adam, AdamW };
const char* optName(Opt o) { return o == Opt::Sgd ? "sgd" : o == Opt::Adam ? "adam" : "adamw"; }

// One step as the trainer drives it (no clipping, so every figure is bit-exact): unscale by
// 1/scale, gate on found_inf, the optimizer (SGD with momentum 0.9 and dampening 0.25, or
// Adam/AdamW with weight decay), the dynamic scale update, one read.
StepStats trainerStyleStep(Backend& be, std::vector<Tensor*> w, std::vector<Tensor*> g,
                           std::vector<Tensor*> a, std::vector<Tensor*> b, Opt opt, bool firstStep,
                           std::int64_t adamStep, float scale) {
  be.beginStep();
  be.foreachUnscaleAndCheck(g, 1.f / scale);
  be.gateStep({true, false});
  if (opt == Opt::Sgd) {
    SgdParams p;
    p.lr = 0.05f;
    p.momentum = 0.9f;
    p.dampening = 0.25f;
    p.firstStep = firstStep;
    be.foreachSgdStep(w, g, a, p);
  } else {
    AdamParams p;
    p.lr = 1e-2f;
    p.weightDecay = 0.01f;
    p.decoupled = opt == Opt::AdamW;
    p.step = adamStep;
    be.foreachAdamStep(w, g, a, b, p);
  }
  ScaleRule rule;
  rule.growthInterval = 2;
  be.updateScale(rule, {scale, 1, 1});
  return be.readStepStats();
}
}  // namespace

// The skip path for optimizer state. Step 1 overflows and is skipped on the device; the host
// then rolls back as engine/optim/optimizer.cpp does (the step count and the first-use flag), so
// step 2 is again SGD's first step (the momentum buffer is seeded with the gradient, without
// dampening) and Adam's step 1; step 3 is a plain step with dampening / bias correction 2.
// Gradients in fp32, fp16 and bf16 onto fp32 master weights. Everything bit for bit.
TEST_F(CpuAndCuda, SkippedStepThenCleanStepsKeepOptimizerStateExact) {
  const std::int64_t sizes[] = {513, 1000, 77};
  for (Opt opt : {Opt::Sgd, Opt::Adam, Opt::AdamW})
    for (DType gd : kFloats) {
      std::vector<Pair> w, g, a, b;
      for (int i = 0; i < 3; ++i) {
        w.push_back(both(finiteValues(sizes[i], 80 + i), {sizes[i]}, DType::F32, MemCategory::MasterWeights));
        a.push_back(both(std::vector<float>(sizes[i], 0.f), {sizes[i]}, DType::F32, MemCategory::OptimizerState));
        b.push_back(both(std::vector<float>(sizes[i], 0.f), {sizes[i]}, DType::F32, MemCategory::OptimizerState));
        g.push_back(emptyBoth({sizes[i]}, gd));
      }
      const float scale = 256.f;
      struct Plan { bool overflow, firstStep; std::int64_t adamStep; };
      const Plan plan[] = {{true, true, 1}, {false, true, 1}, {false, false, 2}};
      for (int step = 0; step < 3; ++step) {
        const std::string what = std::string(optName(opt)) + " grads " + name(gd) + " step " + std::to_string(step + 1);
        for (int i = 0; i < 3; ++i) {
          // Gradients as the backward leaves them: scaled, within fp16's range.
          auto v = finiteValues(sizes[i], 90 + 10 * step + i, 3.f);
          for (float& x : v) x *= scale;
          g[i] = both(v, {sizes[i]}, gd);
        }
        if (plan[step].overflow) {
          cpu->setElement(g[1].c, 7, kInf);
          cuda->setElement(g[1].g, 7, kInf);
        }
        StepStats s[2];
        for (int side = 0; side < 2; ++side) {
          std::vector<Tensor*> ws, gs, as, bs;
          for (int i = 0; i < 3; ++i) {
            ws.push_back(side ? &w[i].g : &w[i].c);
            gs.push_back(side ? &g[i].g : &g[i].c);
            as.push_back(side ? &a[i].g : &a[i].c);
            bs.push_back(side ? &b[i].g : &b[i].c);
          }
          s[side] = trainerStyleStep(side ? *cuda : *cpu, ws, gs, as, bs, opt, plan[step].firstStep,
                                     plan[step].adamStep, scale);
        }
        EXPECT_EQ(s[1].stepped, !plan[step].overflow) << what;
        EXPECT_EQ(s[0].stepped, s[1].stepped) << what;
        EXPECT_EQ(s[0].foundInf, s[1].foundInf) << what;
        EXPECT_EQ(s[0].firstNonFinite, s[1].firstNonFinite) << what;
        EXPECT_EQ(s[0].lost, s[1].lost) << what;
        EXPECT_EQ(s[0].scale.scale, s[1].scale.scale) << what;
        EXPECT_EQ(s[0].scale.growthTracker, s[1].scale.growthTracker) << what;
        EXPECT_EQ(s[0].scaleEvent, s[1].scaleEvent) << what;
        for (int i = 0; i < 3; ++i) {
          expectSameBits(g[i], what + " unscaled grad " + std::to_string(i));
          expectSameBits(w[i], what + " weight " + std::to_string(i));
          expectSameBits(a[i], what + (opt == Opt::Sgd ? " momentum " : " exp_avg ") + std::to_string(i));
          if (opt != Opt::Sgd) {
            expectSameBits(b[i], what + " exp_avg_sq " + std::to_string(i));
          }
          const auto ag = cuda->toHostFloat(a[i].g), bg = cuda->toHostFloat(b[i].g);
          if (plan[step].overflow) {
            // Skipped: the state is still all zeros and the weights as initialised.
            EXPECT_EQ(ag, std::vector<float>(sizes[i], 0.f)) << what;
            EXPECT_EQ(bg, std::vector<float>(sizes[i], 0.f)) << what;
            EXPECT_EQ(cuda->toHostFloat(w[i].g), cpu->toHostFloat(cpu->fromHost(
                          finiteValues(sizes[i], 80 + i), {sizes[i]}, DType::F32, MemCategory::Workspace)))
                << what;
          } else if (opt == Opt::Sgd && plan[step].firstStep) {
            // The first step taken seeds the buffer with the (unscaled, undecayed) gradient.
            EXPECT_EQ(ag, cuda->toHostFloat(g[i].g)) << what << ": momentum not seeded";
          }
        }
      }
    }
}

// Grid-stride wrap: a tensor of 300,001 elements (more than the 1024 x 256 threads a row gets)
// beside small odd ones, through unscale, clip, SGD with momentum and the scale update.
TEST_F(CpuAndCuda, MultiTensorStepCoversLargeOddTensors) {
  const std::int64_t sizes[] = {300001, 7, 1025};
  std::vector<Pair> w, g, m;
  for (int i = 0; i < 3; ++i) {
    w.push_back(both(finiteValues(sizes[i], 100 + i), {sizes[i]}, DType::F32, MemCategory::MasterWeights));
    g.push_back(both(finiteValues(sizes[i], 110 + i, 6.f), {sizes[i]}, DType::F16));
    m.push_back(both(std::vector<float>(sizes[i], 0.f), {sizes[i]}, DType::F32));
  }
  // The last element of the large tensor is the one a missed wrap would leave alone.
  cpu->setElement(g[0].c, sizes[0] - 1, 1000.f);
  cuda->setElement(g[0].g, sizes[0] - 1, 1000.f);
  StepStats s[2];
  for (int side = 0; side < 2; ++side) {
    Backend& be = side ? *cuda : *cpu;
    std::vector<Tensor*> ws, gs, ms;
    for (int i = 0; i < 3; ++i) {
      ws.push_back(side ? &w[i].g : &w[i].c);
      gs.push_back(side ? &g[i].g : &g[i].c);
      ms.push_back(side ? &m[i].g : &m[i].c);
    }
    be.beginStep();
    be.foreachUnscaleAndCheck(gs, 1.f / 64.f);
    be.gateStep({true, false});
    SgdParams p;
    p.lr = 0.01f;
    p.momentum = 0.9f;
    be.foreachSgdStep(ws, gs, ms, p);
    be.updateScale(ScaleRule{}, {64.f, 0, 1});
    s[side] = be.readStepStats();
  }
  EXPECT_TRUE(s[1].stepped);
  EXPECT_EQ(s[0].lost, s[1].lost);
  EXPECT_NEAR(s[0].unscaledSumOfSquares, s[1].unscaledSumOfSquares, 1e-12 * s[0].unscaledSumOfSquares);
  EXPECT_NEAR(s[0].stepGradSumOfSquares, s[1].stepGradSumOfSquares, 1e-12 * s[0].stepGradSumOfSquares);
  for (int i = 0; i < 3; ++i) {
    expectSameBits(g[i], "unscaled grad " + std::to_string(i));
    expectSameBits(w[i], "weight " + std::to_string(i));
    expectSameBits(m[i], "momentum " + std::to_string(i));
  }
  EXPECT_EQ(cuda->toHostFloat(m[0].g).back(), 1000.f / 64.f);
}

// More tensors than a grid has rows (65535): the launches go in chunks, each row still finding
// its own tensor. 70,000 one- and two-element tensors; the non-finite one sits past the first
// chunk, so firstNonFinite must come out as its list index.
TEST_F(CpuAndCuda, MultiTensorLaunchesCoverMoreTensorsThanGridRows) {
  const int count = 70000;
  std::vector<Pair> w, g;
  w.reserve(count);
  g.reserve(count);
  for (int i = 0; i < count; ++i) {
    const std::int64_t n = 1 + i % 2;
    w.push_back(both(std::vector<float>(n, 1.f + float(i % 97)), {n}, DType::F32, MemCategory::MasterWeights));
    g.push_back(both(std::vector<float>(n, float(1 + i % 13) * 64.f), {n}, DType::F32));
  }
  for (bool overflow : {false, true}) {
    if (overflow) {
      cpu->setElement(g[66000].c, 0, kNaN);
      cuda->setElement(g[66000].g, 0, kNaN);
    }
    StepStats s[2];
    for (int side = 0; side < 2; ++side) {
      Backend& be = side ? *cuda : *cpu;
      std::vector<Tensor*> ws, gs, ms(count, nullptr);
      for (int i = 0; i < count; ++i) {
        ws.push_back(side ? &w[i].g : &w[i].c);
        gs.push_back(side ? &g[i].g : &g[i].c);
      }
      be.beginStep();
      be.foreachUnscaleAndCheck(gs, 1.f / 64.f);
      be.foreachClipGradNorm(gs, 1e9);  // measured, not clipped: exercises the norm launch
      be.gateStep({true, false});
      SgdParams p;
      p.lr = 0.5f;
      be.foreachSgdStep(ws, gs, ms, p);
      be.updateScale(ScaleRule{}, {64.f, 0, 1});
      s[side] = be.readStepStats();
    }
    EXPECT_EQ(s[1].stepped, !overflow);
    EXPECT_EQ(s[0].foundInf, s[1].foundInf);
    EXPECT_EQ(s[1].firstNonFinite, overflow ? 66000 : -1);
    EXPECT_EQ(s[0].firstNonFinite, s[1].firstNonFinite);
    EXPECT_EQ(s[0].lost, s[1].lost);
    // Small integers times powers of two: every sum is exact, in any order.
    EXPECT_EQ(s[0].unscaledSumOfSquares, s[1].unscaledSumOfSquares);
    if (!overflow) {
      EXPECT_EQ(s[0].stepGradSumOfSquares, s[1].stepGradSumOfSquares);
    }
    for (int i : {0, 65534, 65535, 65536, 69999}) {
      expectSameBits(w[i], "weight " + std::to_string(i));
      expectSameBits(g[i], "grad " + std::to_string(i));
    }
  }
}

TEST_F(CpuAndCuda, ScaleRulesAgreeOnTheDevice) {
  for (int kind = 0; kind < 5; ++kind)
    for (bool inf : {false, true}) {
      ScaleRule rule;
      rule.kind = static_cast<ScaleRuleKind>(kind);
      rule.growthInterval = 2;
      rule.minScale = 1.f;
      rule.maxScale = 1024.f;
      const ScaleCounters start{1024.f, 1, 2};
      StepStats s[2];
      int idx = 0;
      for (Backend* be : {cpu.get(), cuda.get()}) {
        be->beginStep();
        Tensor t = be->fromHost(std::vector<float>{1.f, inf ? kInf : 2.f}, {2}, DType::F32, MemCategory::Gradients);
        Tensor* list[] = {&t};
        be->foreachUnscaleAndCheck(list, 1.f / 1024.f);
        be->updateScale(rule, start);
        s[idx++] = be->readStepStats();
      }
      EXPECT_EQ(s[0].scale.scale, s[1].scale.scale) << kind << inf;
      EXPECT_EQ(s[0].scale.growthTracker, s[1].scale.growthTracker);
      EXPECT_EQ(s[0].scale.hysteresisLeft, s[1].scale.hysteresisLeft);
      EXPECT_EQ(s[0].scaleEvent, s[1].scaleEvent);
    }
}

TEST_F(CpuAndCuda, UnportedOpsAndBadShapesThrowClearly) {
  Pair x = both(finiteValues(2 * 3 * 8 * 8, 70), {2, 3, 8, 8}, DType::F32);
  Pair w = both(finiteValues(4 * 3 * 3 * 3, 71), {4, 3, 3, 3}, DType::F32);
  Pair y = emptyBoth({2, 4, 6, 6}, DType::F32);
  ConvGeometry geo;
  geo.n = 2; geo.c = 3; geo.h = 8; geo.w = 8; geo.k = 4; geo.r = 3; geo.s = 3;
  try {
    cuda->conv2dForward(x.g, w.g, nullptr, y.g, geo);
    ADD_FAILURE() << "conv2d ran on the CUDA backend";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("issue 11"), std::string::npos) << e.what();
  }
  Pair a = emptyBoth({3, 4}, DType::F32), b = emptyBoth({5, 6}, DType::F32), c = emptyBoth({3, 6}, DType::F32);
  EXPECT_THROW(cuda->gemm(a.g, false, b.g, false, c.g), std::invalid_argument);
}
