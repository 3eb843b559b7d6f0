// The AMP step's ops on the CPU backend (the reference) and the CUDA backend with the same
// inputs: single-tensor optimizer steps, the multi-tensor step (unscale-and-check, gate, SGD /
// Adam / AdamW that skip themselves on the device), its optimizer state across skipped and
// clean steps, large and many tensors, and the scale-update rules. Bit for bit where the
// arithmetic is the same; sums taken in another order within relative 1e-12. Skips without a GPU.
#include <algorithm>

#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

// Gradients over 2^-6 .. 2^6, and (fp32) over 2^-60 .. 2^60 with zeros among them: there Adam's
// second moment (0.001 g^2) falls into fp32's subnormals, which neither side may flush.
TEST_F(CpuAndCuda, OptimizerStepsAreBitExact) {
  for (float spread : {6.f, 60.f})
  for (DType pd : {DType::F32, DType::F16}) {
    if (spread > 6.f && pd == DType::F16) continue;
    for (int variant = 0; variant < 5; ++variant) {
      Pair w = both(finiteValues(5000, 40), {5000}, pd, MemCategory::Weights);
      std::vector<float> gv = finiteValues(5000, 41, spread);
      if (spread > 6.f)
        for (std::size_t i = 0; i < gv.size(); i += 11) gv[i] = 0.f;
      Pair g = both(gv, {5000}, pd == DType::F16 ? DType::F16 : DType::F32);
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
        const std::string what = "variant " + std::to_string(variant) + " " + name(pd) + " step " +
                                 std::to_string(step) + " spread 2^" + std::to_string(int(spread));
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
    // With the NaN both sums are NaN, which must count as agreeing.
    expectSameOrBothNaN(s[0].unscaledSumOfSquares, s[1].unscaledSumOfSquares, "unscaled sum of squares");
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
