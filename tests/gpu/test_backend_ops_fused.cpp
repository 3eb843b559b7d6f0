// The CUDA backend's fused forms of the AMP step against the CPU backend's plain ones, bit for
// bit: a weight gradient's deferred rounding through fp16/bf16 (Parameter::gradRoundThrough)
// folded into the unscale's read and write, and into the SGD / Adam read when nothing unscales.
// The CPU backend runs the reference order: roundThrough, then the op (Backend::roundDeferred).
// The gradients are fp32 GEMM-like results: values with bits below fp16/bf16's precision,
// values past fp16's range (65520 and up round to inf there, so the unscale must find them),
// tiny values that flush, and a NaN. Also the 16-bit weight copies the optimizer kernels write
// beside the masters (Parameter::lowCopy). Skips without a GPU.
#include <span>

#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

// fp32 gradients that rounding through 16 bits changes, including fp16 overflows (when asked).
std::vector<float> unroundedGrads(std::size_t n, std::uint32_t seed, bool overflow) {
  std::vector<float> v = finiteValues(n, seed, 10.f);
  for (std::size_t i = 0; i < n; i += 97) v[i] *= 1.f + 1.f / 3000.f;  // below 16-bit precision
  if (overflow) {
    v[n / 2] = 65520.f;      // fp16: rounds to inf
    v[n / 3] = -70000.f;     // fp16: -inf
  }
  v[n / 5] = 1e-9f;          // fp16: flushes to 0
  return v;
}


// A first optimizer step over the lists: SGD (variant 0), SGD with momentum (1) or Adam (2),
// with the deferred roundings and weight copies the test passes.
void firstOptimizerStep(Backend& be, int variant, const std::vector<Tensor*>& ws, const std::vector<Tensor*>& gs,
                        const std::vector<Tensor*>& as, const std::vector<Tensor*>& bs,
                        std::span<const DType> rounds, std::span<Tensor* const> copies) {
  if (variant < 2) {
    SgdParams p;
    p.lr = 0.01f;
    p.momentum = variant ? 0.9f : 0.f;
    p.firstStep = true;
    const std::vector<Tensor*> mom = variant ? as : std::vector<Tensor*>(ws.size(), nullptr);
    be.foreachSgdStep(ws, gs, mom, p, rounds, copies);
  } else {
    AdamParams p;
    p.step = 1;
    be.foreachAdamStep(ws, gs, as, bs, p, rounds, copies);
  }
}

}  // namespace

TEST_F(CpuAndCuda, DeferredRoundingFoldsIntoTheUnscaleExactly) {
  for (DType through : {DType::F16, DType::BF16})
    for (bool overflow : {false, true})
      for (float invScale : {1.f / 1024.f, 1.f}) {
        std::vector<Pair> g;
        for (int i = 0; i < 3; ++i)
          g.push_back(both(unroundedGrads(3000 + 517 * i, 70 + i, overflow && i == 1), {3000 + 517 * i},
                           DType::F32, MemCategory::Gradients));
        // The middle gradient was rounded already (F32: nothing pending), as a second
        // micro-batch's would be.
        const std::vector<DType> rounds{through, DType::F32, through};
        StepStats s[2];
        for (int side = 0; side < 2; ++side) {
          Backend& be = side ? *cuda : *cpu;
          std::vector<Tensor*> gs;
          for (Pair& p : g) gs.push_back(side ? &p.g : &p.c);
          be.beginStep();
          be.foreachUnscaleAndCheck(gs, invScale, rounds);
          s[side] = be.readStepStats();
        }
        const std::string what = std::string(dtypeName(through)) + (overflow ? " overflow" : "") +
                                 " invScale " + std::to_string(invScale);
        EXPECT_EQ(s[0].foundInf, s[1].foundInf) << what;
        // 65520 and -70000 sit in the gradient whose rounding is not deferred: finite in fp32.
        EXPECT_FALSE(s[1].foundInf) << what;
        EXPECT_EQ(s[0].firstNonFinite, s[1].firstNonFinite) << what;
        expectSameOrBothNaN(s[0].unscaledSumOfSquares, s[1].unscaledSumOfSquares, what);
        for (int i = 0; i < 3; ++i) expectSameBits(g[i], what + " grad " + std::to_string(i));
      }
}

// The overflow in a gradient whose rounding is deferred: fp16 rounding makes it inf, and the
// fused unscale must find it (found_inf, the first non-finite tensor) as a separate pass would.
TEST_F(CpuAndCuda, DeferredFp16RoundingOverflowIsFoundByTheUnscale) {
  Pair g0 = both(unroundedGrads(4096, 80, false), {4096}, DType::F32, MemCategory::Gradients);
  Pair g1 = both(unroundedGrads(4096, 81, true), {4096}, DType::F32, MemCategory::Gradients);
  const std::vector<DType> rounds{DType::F16, DType::F16};
  StepStats s[2];
  for (int side = 0; side < 2; ++side) {
    Backend& be = side ? *cuda : *cpu;
    std::vector<Tensor*> gs{side ? &g0.g : &g0.c, side ? &g1.g : &g1.c};
    be.beginStep();
    be.foreachUnscaleAndCheck(gs, 1.f / 65536.f, rounds);
    s[side] = be.readStepStats();
  }
  EXPECT_TRUE(s[0].foundInf);
  EXPECT_TRUE(s[1].foundInf);
  EXPECT_EQ(s[1].firstNonFinite, 1);
  expectSameBits(g0, "grad 0");
  expectSameBits(g1, "grad 1");
}

// No scaler (bf16's recipe, or fp16 without one): the optimizer's read applies the rounding.
// The weights, the state and the step's gradient sum of squares must be the rounded gradients';
// the CPU's gradients are rounded in memory, the GPU's are not (so they are not compared).
TEST_F(CpuAndCuda, DeferredRoundingFoldsIntoTheOptimizerRead) {
  for (DType through : {DType::F16, DType::BF16})
    for (int variant = 0; variant < 3; ++variant) {  // SGD, SGD with momentum, Adam
      std::vector<Pair> w, g, a, b;
      for (int i = 0; i < 2; ++i) {
        const std::int64_t n = 2500 + 1000 * i;
        w.push_back(both(finiteValues(n, 90 + i), {n}, DType::F32, MemCategory::MasterWeights));
        g.push_back(both(unroundedGrads(n, 92 + i, false), {n}, DType::F32, MemCategory::Gradients));
        a.push_back(both(std::vector<float>(n, 0.f), {n}, DType::F32));
        b.push_back(both(std::vector<float>(n, 0.f), {n}, DType::F32));
      }
      const std::vector<DType> rounds{through, through};
      StepStats s[2];
      for (int side = 0; side < 2; ++side) {
        Backend& be = side ? *cuda : *cpu;
        std::vector<Tensor*> ws, gs, as, bs;
        for (int i = 0; i < 2; ++i) {
          ws.push_back(side ? &w[i].g : &w[i].c);
          gs.push_back(side ? &g[i].g : &g[i].c);
          as.push_back(side ? &a[i].g : &a[i].c);
          bs.push_back(side ? &b[i].g : &b[i].c);
        }
        be.beginStep();
        be.gateStep({});
        firstOptimizerStep(be, variant, ws, gs, as, bs, rounds, {});
        s[side] = be.readStepStats();
      }
      const std::string what = std::string(dtypeName(through)) + " variant " + std::to_string(variant);
      EXPECT_EQ(s[0].lost, s[1].lost) << what;
      EXPECT_NEAR(s[0].stepGradSumOfSquares, s[1].stepGradSumOfSquares,
                  1e-12 * s[0].stepGradSumOfSquares) << what;
      for (int i = 0; i < 2; ++i) {
        expectSameBits(w[i], what + " weight " + std::to_string(i));
        expectSameBits(a[i], what + " state a " + std::to_string(i));
        expectSameBits(b[i], what + " state b " + std::to_string(i));
      }
    }
}

// A rounding list that does not fit is refused by both, with the same kind of error.
TEST_F(CpuAndCuda, DeferredRoundingListsMustFit) {
  Pair g = both(finiteValues(10, 95), {10}, DType::F32, MemCategory::Gradients);
  Pair h = both(finiteValues(10, 96), {10}, DType::F16, MemCategory::Gradients);
  for (Backend* be : {cpu.get(), cuda.get()}) {
    const bool onCpu = be == cpu.get();
    std::vector<Tensor*> gs{onCpu ? &g.c : &g.g};
    const std::vector<DType> two{DType::F16, DType::F16};
    be->beginStep();
    EXPECT_THROW(be->foreachUnscaleAndCheck(gs, 0.5f, two), std::invalid_argument) << be->name();
  }
  std::vector<Tensor*> hs{&h.g};
  const std::vector<DType> one{DType::BF16};
  cuda->beginStep();
  EXPECT_THROW(cuda->foreachUnscaleAndCheck(hs, 0.5f, one), std::invalid_argument)
      << "a 16-bit gradient cannot have a deferred rounding";
}

// The 16-bit weight copies the SGD and Adam kernels write beside the fp32 masters
// (Backend::keepsWeightCopies, Parameter::lowCopy): after a step each copy must be the new
// master's rounding, bit for bit what the CPU's castInto writes, for lengths that are and are
// not multiples of the kernels' four-element accesses; a step the gate skips writes neither.
TEST_F(CpuAndCuda, OptimizerStepsWriteTheWeightCopiesAsACastWould) {
  for (DType low : {DType::F16, DType::BF16})
    for (int variant = 0; variant < 3; ++variant)  // SGD, SGD with momentum, Adam
      for (bool skip : {false, true}) {
        std::vector<Pair> w, g, a, b, copy;
        for (int i = 0; i < 2; ++i) {
          const std::int64_t n = 2501 + 1000 * i;
          w.push_back(both(finiteValues(n, 110 + i), {n}, DType::F32, MemCategory::MasterWeights));
          std::vector<float> grads = finiteValues(n, 112 + i, 0.5f);
          if (skip && i == 1) grads[7] = std::numeric_limits<float>::infinity();
          g.push_back(both(grads, {n}, DType::F32, MemCategory::Gradients));
          a.push_back(both(std::vector<float>(n, 0.f), {n}, DType::F32));
          b.push_back(both(std::vector<float>(n, 0.f), {n}, DType::F32));
          copy.push_back(both(finiteValues(n, 114 + i), {n}, low, MemCategory::Weights));  // stale
        }
        const std::vector<float> staleCopy = cpu->toHostFloat(copy[0].c);
        for (int side = 0; side < 2; ++side) {
          Backend& be = side ? *cuda : *cpu;
          std::vector<Tensor*> ws, gs, as, bs, cs;
          for (int i = 0; i < 2; ++i) {
            ws.push_back(side ? &w[i].g : &w[i].c);
            gs.push_back(side ? &g[i].g : &g[i].c);
            as.push_back(side ? &a[i].g : &a[i].c);
            bs.push_back(side ? &b[i].g : &b[i].c);
            cs.push_back(side ? &copy[i].g : &copy[i].c);
          }
          be.beginStep();
          be.foreachUnscaleAndCheck(gs, 1.f);
          be.gateStep({.skipIfFoundInf = true});
          firstOptimizerStep(be, variant, ws, gs, as, bs, {}, cs);
          EXPECT_EQ(be.readStepStats().stepped, !skip);
        }
        const std::string what = std::string(dtypeName(low)) + " variant " + std::to_string(variant) +
                                 (skip ? " skipped" : "");
        for (int i = 0; i < 2; ++i) {
          expectSameBits(w[i], what + " weight " + std::to_string(i));
          expectSameBits(copy[i], what + " copy " + std::to_string(i));
          if (skip) continue;
          // The copy is the master's rounding (the CPU's side is castInto's, by construction).
          const Tensor cast = cuda->cast(w[i].g, low, MemCategory::Weights);
          EXPECT_EQ(cuda->toHostBytes(cast), cuda->toHostBytes(copy[i].g)) << what << " copy " << i;
        }
        if (skip) {
          EXPECT_EQ(cuda->toHostFloat(copy[0].g), staleCopy) << what << ": a skipped step wrote the copy";
        }
      }
}
