// The CNN layers (Conv2d, MaxPool2d, BatchNorm, Dropout): shapes, PyTorch initialisation,
// dtypes under autocast (conv2d lower precision; the others pass through), gradients landing
// in fp32 .grad, trace rows, saved tensors released, dropout masks.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_support.h"
#include "engine/nn/activation_layer.h"
#include "engine/nn/batch_norm.h"
#include "engine/nn/conv2d.h"
#include "engine/nn/dropout.h"
#include "engine/nn/linear.h"
#include "engine/nn/max_pool2d.h"
#include "engine/nn/sequential.h"

namespace amp {
namespace {

using test::randomVec;

class LayerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> be = makeCpuBackend();
  Autocast ac;
  LayerContext ctx{*be, ac};
  Tensor make(const std::vector<float>& v, const Shape& s, DType d = DType::F32) {
    return be->fromHost(v, s, d, MemCategory::Activations);
  }
  Tensor random(const Shape& s, std::uint64_t seed, DType d = DType::F32) {
    return make(randomVec(shapeNumel(s), seed), s, d);
  }
};

// ---- Conv2d ----------------------------------------------------------------------------------

TEST_F(LayerTest, Conv2dOutputShapeValidatesTheSample) {
  Conv2d conv(1, 32, 3, 1);
  EXPECT_EQ(conv.outputShape({1, 28, 28}), (Shape{32, 28, 28}));
  EXPECT_EQ(Conv2d(3, 8, 3, 1, 2).outputShape({3, 9, 9}), (Shape{8, 5, 5}));
  EXPECT_EQ(Conv2d(3, 8, 5, 0).outputShape({3, 9, 7}), (Shape{8, 5, 3}));
  EXPECT_THROW(conv.outputShape({3, 28, 28}), std::invalid_argument);  // wrong channels
  EXPECT_THROW(conv.outputShape({28, 28}), std::invalid_argument);     // not (C, H, W)
  EXPECT_THROW(Conv2d(1, 4, 5, 0).outputShape({1, 3, 3}), std::invalid_argument);
  EXPECT_THROW(Conv2d(0, 4), std::invalid_argument);
  EXPECT_EQ(conv.describe(), "Conv2d(1 -> 32, k3, p1)");
}

TEST_F(LayerTest, Conv2dInitialisesLikePyTorch) {
  Conv2d conv(3, 4, 3, 1);
  conv.setName("0");
  Rng rng(7);
  conv.initialize(*be, rng, DType::F32, MemCategory::Weights);
  const auto params = conv.parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0]->name, "0.weight");
  EXPECT_EQ(params[0]->value.shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(params[1]->name, "0.bias");
  EXPECT_EQ(params[1]->value.shape(), (Shape{4}));
  // kaiming_uniform(a = sqrt(5)): bound 1/sqrt(fan_in), fan_in = 3*3*3; weights drawn first.
  const double bound = 1.0 / std::sqrt(27.0);
  Rng replay(7);
  for (float w : be->toHostFloat(params[0]->value))
    EXPECT_EQ(w, float(replay.uniform(-bound, bound)));
  for (float b : be->toHostFloat(params[1]->value))
    EXPECT_EQ(b, float(replay.uniform(-bound, bound)));
  EXPECT_EQ(Conv2d(3, 4, 3, 1, 1, false).parameters().size(), 1u);
}

class Conv2dAutocast : public LayerTest, public ::testing::WithParamInterface<DType> {};

TEST_P(Conv2dAutocast, ComputesInTheLowDtypeAndReturnsFp32Gradients) {
  const DType low = GetParam();
  Conv2d conv(3, 8, 3, 1);
  conv.setName("0");
  Rng rng(1);
  conv.initialize(*be, rng, DType::F32, MemCategory::Weights);
  Tensor x = random({4, 3, 10, 10}, 2);
  ac.setTracing(true);

  Tensor y32 = conv.forward(ctx, x);  // fp32 reference outside autocast
  conv.releaseSaved();
  Tensor y;
  {
    AutocastRegion region(ac, true, low);
    y = conv.forward(ctx, x);
  }
  EXPECT_EQ(y.dtype(), low);
  EXPECT_EQ(y.shape(), (Shape{4, 8, 10, 10}));
  const auto a = be->toHostFloat(y), r = be->toHostFloat(y32);
  const double tol = low == DType::BF16 ? 0.05 : 0.01;  // 16-bit inputs and output
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], r[i], tol * (1 + std::fabs(r[i])));

  Tensor dy = random(y.shape(), 3, low);
  Tensor dx = conv.backward(ctx, dy, true);
  EXPECT_EQ(dx.dtype(), DType::F32);  // the input's dtype
  EXPECT_EQ(dx.shape(), x.shape());
  for (Parameter* p : conv.parameters()) {
    ASSERT_TRUE(p->grad.defined()) << p->name;
    EXPECT_EQ(p->grad.dtype(), DType::F32) << p->name;
  }
  // The gradients are the 16-bit ones widened (as PyTorch's cast backward gives), whichever
  // way the layer produced them.
  Conv2dGeometry g;
  g.n = 4, g.c = 3, g.h = g.w = 10, g.k = 8, g.r = g.s = 3, g.padH = g.padW = 1;
  Tensor dw16 = be->empty({8, 3, 3, 3}, low, MemCategory::Workspace);
  Tensor db16 = be->empty({8}, low, MemCategory::Workspace);
  be->conv2dBackwardWeights(dy, be->cast(x, low, MemCategory::Workspace), dw16, &db16, g);
  EXPECT_EQ(be->toHostFloat(conv.parameters()[0]->grad), be->toHostFloat(dw16));
  EXPECT_EQ(be->toHostFloat(conv.parameters()[1]->grad), be->toHostFloat(db16));

  const auto trace = ac.takeTrace();
  ASSERT_EQ(trace.size(), 3u);
  EXPECT_EQ(trace[1].op, "conv2d");
  EXPECT_EQ(trace[1].policy, CastPolicy::LowerPrecision);
  EXPECT_EQ(trace[1].computeDtype, low);
  EXPECT_EQ(trace[1].castsInserted, 3);  // x, weight, bias
  EXPECT_EQ(trace[2].op, "conv2d_backward");
  EXPECT_EQ(trace[2].phase, TracePhase::Backward);
  EXPECT_EQ(trace[2].outputDtype, DType::F32);
  // Saved tensors are gone: a second backward is refused.
  EXPECT_THROW(conv.backward(ctx, random(y.shape(), 3, low), true), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(LowDtypes, Conv2dAutocast, ::testing::Values(DType::F16, DType::BF16));

TEST_F(LayerTest, Conv2dGradientsAccumulateAcrossBackwardPasses) {
  for (bool amp : {false, true}) {  // under autocast the first pass writes fp32 .grad directly
    Conv2d conv(2, 3, 3, 1);
    Rng rng(4);
    conv.initialize(*be, rng, DType::F32, MemCategory::Weights);
    Tensor x = random({2, 2, 6, 6}, 5),
           dy = random({2, 3, 6, 6}, 6, amp ? DType::BF16 : DType::F32);
    auto pass = [&] {
      AutocastRegion region(ac, amp, DType::BF16);
      conv.forward(ctx, x);
      return conv.backward(ctx, dy, false);
    };
    pass();
    const auto once = be->toHostFloat(conv.parameters()[0]->grad);
    const auto onceBias = be->toHostFloat(conv.parameters()[1]->grad);
    EXPECT_FALSE(pass().defined());  // no input gradient asked for
    const auto twice = be->toHostFloat(conv.parameters()[0]->grad);
    const auto twiceBias = be->toHostFloat(conv.parameters()[1]->grad);
    for (std::size_t i = 0; i < once.size(); ++i) EXPECT_EQ(twice[i], 2 * once[i]);
    for (std::size_t i = 0; i < onceBias.size(); ++i) EXPECT_EQ(twiceBias[i], 2 * onceBias[i]);
  }
}

// ---- MaxPool2d -------------------------------------------------------------------------------

TEST_F(LayerTest, MaxPool2dPassesTheDtypeThrough) {
  MaxPool2d pool(2, 2);
  EXPECT_EQ(pool.outputShape({32, 28, 28}), (Shape{32, 14, 14}));
  EXPECT_EQ(pool.outputShape({4, 7, 7}), (Shape{4, 3, 3}));
  EXPECT_THROW(pool.outputShape({784}), std::invalid_argument);
  EXPECT_THROW(pool.outputShape({4, 1, 1}), std::invalid_argument);
  Tensor x = random({2, 3, 8, 8}, 7, DType::F16);
  Tensor y;
  {
    AutocastRegion region(ac, true, DType::F16);
    y = pool.forward(ctx, x);
  }
  EXPECT_EQ(y.dtype(), DType::F16);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4, 4}));
  Tensor dx = pool.backward(ctx, random(y.shape(), 8, DType::F16), true);
  EXPECT_EQ(dx.dtype(), DType::F16);
  EXPECT_EQ(dx.shape(), x.shape());
  // Each 2x2 window routes its gradient to exactly one input.
  std::int64_t nonZero = 0;
  for (float v : be->toHostFloat(dx)) nonZero += v != 0.f;
  EXPECT_EQ(nonZero, y.numel());
}

// ---- BatchNorm -------------------------------------------------------------------------------

TEST_F(LayerTest, BatchNormKeepsFp32ParametersUnderAutocast) {
  BatchNorm bn(4);
  bn.setName("1");
  EXPECT_EQ(bn.outputShape({4, 5, 5}), (Shape{4, 5, 5}));
  EXPECT_EQ(bn.outputShape({4}), (Shape{4}));
  EXPECT_THROW(bn.outputShape({3, 5, 5}), std::invalid_argument);
  Rng rng(1);
  bn.initialize(*be, rng, DType::F32, MemCategory::Weights);
  const auto bufs = bn.buffers();
  ASSERT_EQ(bufs.size(), 3u);
  EXPECT_EQ(bufs[0].first, "1.running_mean");
  EXPECT_EQ(bufs[1].first, "1.running_var");
  EXPECT_EQ(bufs[2].first, "1.num_batches_tracked");
  EXPECT_EQ(bufs[2].second->dtype(), DType::I32);
  EXPECT_EQ(be->toHostFloat(*bufs[1].second), std::vector<float>(4, 1.f));
  EXPECT_EQ(be->toHostFloat(bn.parameters()[0]->value), std::vector<float>(4, 1.f));

  Tensor x = make(randomVec(6 * 4 * 5 * 5, 9, 1, 3), {6, 4, 5, 5}, DType::F16);
  Tensor y;
  for (int step = 0; step < 2; ++step) {
    AutocastRegion region(ac, true, DType::F16);
    y = bn.forward(ctx, x);
  }
  EXPECT_EQ(y.dtype(), DType::F16);
  EXPECT_EQ(bn.parameters()[0]->value.dtype(), DType::F32);
  EXPECT_EQ(be->toHostInt(*bufs[2].second)[0], 2);
  // The running mean moved toward the batch mean (about 2) twice: 0 -> 0.2 -> 0.38.
  for (float m : be->toHostFloat(*bufs[0].second)) EXPECT_NEAR(m, 0.19 * 2, 0.05);
  Tensor dx = bn.backward(ctx, random(y.shape(), 10, DType::F16), true);
  EXPECT_EQ(dx.dtype(), DType::F16);
  for (Parameter* p : bn.parameters()) EXPECT_EQ(p->grad.dtype(), DType::F32) << p->name;
}

TEST_F(LayerTest, BatchNormEvalUsesRunningStatistics) {
  BatchNorm bn(3);
  Rng rng(1);
  bn.initialize(*be, rng, DType::F32, MemCategory::Weights);
  Tensor x = make(randomVec(8 * 3, 11, -1, 5), {8, 3});  // (N, C) as BatchNorm1d
  bn.forward(ctx, x);
  bn.releaseSaved();
  const auto bufs = bn.buffers();
  const auto rm = be->toHostFloat(*bufs[0].second), rv = be->toHostFloat(*bufs[1].second);
  ctx.training = false;
  Tensor y = bn.forward(ctx, x);
  EXPECT_EQ(be->toHostFloat(*bufs[0].second), rm);  // eval leaves the statistics alone
  EXPECT_EQ(be->toHostInt(*bufs[2].second)[0], 1);
  const auto xv = be->toHostFloat(x), yv = be->toHostFloat(y);
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const std::size_t c = i % 3;
    EXPECT_NEAR(yv[i], (xv[i] - rm[c]) / std::sqrt(rv[c] + 1e-5), 1e-5);
  }
  EXPECT_THROW(bn.backward(ctx, y, true), std::logic_error);
}

TEST_F(LayerTest, BatchNormInPureFp16KeepsEverythingFp16) {
  BatchNorm bn(2);
  Rng rng(1);
  bn.initialize(*be, rng, DType::F16, MemCategory::Weights);
  EXPECT_EQ(bn.parameters()[0]->value.dtype(), DType::F16);
  EXPECT_EQ(bn.buffers()[0].second->dtype(), DType::F16);
  Tensor x = random({4, 2, 3, 3}, 12, DType::F16);
  Tensor y = bn.forward(ctx, x);
  EXPECT_EQ(y.dtype(), DType::F16);
  bn.backward(ctx, random(y.shape(), 13, DType::F16), true);
  for (Parameter* p : bn.parameters()) EXPECT_EQ(p->grad.dtype(), DType::F16);
}

// ---- Dropout ---------------------------------------------------------------------------------

TEST_F(LayerTest, DropoutKeepsOneMinusPAndScalesTheSurvivors) {
  const double p = 0.3;
  Dropout drop(p);
  drop.setName("2");
  const std::int64_t n = 200000;
  Tensor x = make(std::vector<float>(n, 1.f), {n / 100, 100});
  ctx.stepSeed = 42;
  Tensor y = drop.forward(ctx, x);
  const auto yv = be->toHostFloat(y);
  const float kept = 1.f * (1.f / (1.f - float(p)));
  std::int64_t survivors = 0;
  for (float v : yv) {
    ASSERT_TRUE(v == 0.f || v == kept) << v;
    survivors += v != 0.f;
  }
  const double sigma = std::sqrt(p * (1 - p) / double(n));
  EXPECT_NEAR(double(survivors) / double(n), 1 - p, 5 * sigma);

  // Backward reuses the forward's mask and scale.
  Tensor dy = random(x.shape(), 14);
  Tensor dx = drop.backward(ctx, dy, true);
  const auto dyv = be->toHostFloat(dy), dxv = be->toHostFloat(dx);
  for (std::size_t i = 0; i < dxv.size(); ++i)
    ASSERT_EQ(dxv[i], yv[i] == 0.f ? 0.f : dyv[i] * (1.f / (1.f - float(p)))) << i;
}

TEST_F(LayerTest, DropoutMasksAreReproduciblePerStepAndLayer) {
  Dropout a(0.5), b(0.5);
  a.setName("2");
  b.setName("5");
  Tensor x = make(std::vector<float>(4096, 1.f), {4096});
  auto run = [&](Dropout& d, std::uint64_t seed) {
    ctx.stepSeed = seed;
    auto bytes = be->toHostBytes(d.forward(ctx, x));
    d.releaseSaved();
    return bytes;
  };
  EXPECT_EQ(run(a, 1), run(a, 1));  // same step, same mask
  EXPECT_NE(run(a, 1), run(a, 2));  // each step draws anew
  EXPECT_NE(run(a, 1), run(b, 1));  // each layer draws its own
  EXPECT_NE(a.maskSeed(1), b.maskSeed(1));
}

TEST_F(LayerTest, DropoutIsTheIdentityInEvalOrWithPZero) {
  Tensor x = random({8, 16}, 15, DType::BF16);
  Dropout drop(0.4), none(0.0);
  ctx.training = false;
  Tensor y = drop.forward(ctx, x);
  EXPECT_EQ(y.id(), x.id());
  EXPECT_EQ(drop.backward(ctx, x, true).id(), x.id());
  ctx.training = true;
  EXPECT_EQ(none.forward(ctx, x).id(), x.id());
  {
    AutocastRegion region(ac, true, DType::BF16);
    EXPECT_EQ(drop.forward(ctx, x).dtype(), DType::BF16);  // passes through autocast
  }
  EXPECT_THROW(Dropout(1.0), std::invalid_argument);
  EXPECT_THROW(Dropout(-0.1), std::invalid_argument);
}

// ---- a small CNN end to end ----------------------------------------------------------------

TEST_F(LayerTest, SmallCnnRunsForwardAndBackwardUnderBf16Autocast) {
  Sequential net;
  net.add(std::make_unique<Conv2d>(1, 4, 3, 1));
  net.add(std::make_unique<BatchNorm>(4));
  net.add(std::make_unique<ActivationLayer>(Activation::ReLU));
  net.add(std::make_unique<MaxPool2d>(2, 2));
  net.add(std::make_unique<Conv2d>(4, 8, 3, 1));
  net.add(std::make_unique<ActivationLayer>(Activation::ReLU));
  net.add(std::make_unique<MaxPool2d>(2, 2));
  net.add(std::make_unique<Flatten>());
  net.add(std::make_unique<Dropout>(0.25));
  net.add(std::make_unique<Linear>(8 * 3 * 3, 10));
  EXPECT_EQ(net.outputShape({1, 12, 12}), (Shape{10}));
  EXPECT_THROW(net.outputShape({2, 12, 12}), std::invalid_argument);
  net.initialize(*be, 3, DType::F32, MemCategory::MasterWeights);
  Tensor x = random({6, 1, 12, 12}, 16);
  Tensor y;
  {
    AutocastRegion region(ac, true, DType::BF16);
    y = net.forward(ctx, x);
  }
  EXPECT_EQ(y.dtype(), DType::BF16);
  net.backward(ctx, random(y.shape(), 17, DType::BF16));
  for (Parameter* p : net.parameters()) {
    ASSERT_TRUE(p->grad.defined()) << p->name;
    EXPECT_EQ(p->grad.dtype(), DType::F32) << p->name;
    EXPECT_EQ(be->countNonFinite(p->grad), 0) << p->name;
    EXPECT_GT(be->sumOfSquares(p->grad), 0.0) << p->name;
  }
}

}  // namespace
}  // namespace amp
