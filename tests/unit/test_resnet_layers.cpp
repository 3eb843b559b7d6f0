// The parts residual networks add: the residual add and global average pooling on the backend
// (against hand-computed values and IEEE bit patterns), padded max pooling (PyTorch's rule),
// the ResidualBlock and GlobalAvgPool layers' gradients against finite differences, and their
// autocast semantics as PyTorch's (the add runs in its inputs' dtype and promotes mixed inputs;
// adaptive_avg_pool2d passes through), as the per-op trace reports them.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <array>
#include <limits>

#include "engine/amp/autocast.h"
#include "engine/nn/global_avg_pool.h"
#include "engine/nn/max_pool2d.h"
#include "engine/nn/residual_block.h"
#include "gradcheck_support.h"
#include "kernels/common/float16.h"
#include "test_support.h"

using namespace amp;
using namespace amp::test;

namespace {

std::vector<std::uint16_t> bits16(Backend& be, const Tensor& t) {
  const auto bytes = be.toHostBytes(t);
  std::vector<std::uint16_t> out(bytes.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::uint16_t(bytes[2 * i] | bytes[2 * i + 1] << 8);
  return out;
}

}  // namespace

TEST(ResidualOps, AddRoundsTheFp32SumOnceToTheOutputDtype) {
  auto be = makeCpuBackend();
  // fp16 holds every integer to 2048, then even ones to 4096: 2048 + 1 is a tie that rounds to
  // even (2048), 2048 + 3 = 2051 rounds up to 2052; 0.1 + 0.2 rounds once from the fp32 sum.
  Tensor a = be->fromHost(std::vector<float>{2048, 2048, 0.1f, -65504}, {4}, DType::F16, MemCategory::Activations);
  Tensor b = be->fromHost(std::vector<float>{1, 3, 0.2f, -65504}, {4}, DType::F16, MemCategory::Activations);
  Tensor y = be->empty({4}, DType::F16, MemCategory::Activations);
  be->add(a, b, y);
  const auto got = bits16(*be, y);
  const float sum01 = halfBitsToFloat(floatToHalfBits(0.1f)) + halfBitsToFloat(floatToHalfBits(0.2f));
  EXPECT_EQ(got[0], floatToHalfBits(2048.f));
  EXPECT_EQ(got[1], floatToHalfBits(2052.f));
  EXPECT_EQ(got[2], floatToHalfBits(sum01));
  EXPECT_EQ(got[3], 0xFC00u) << "-65504 + -65504 overflows fp16 to -inf";
}

TEST(ResidualOps, AddOfMixedDtypesWritesThePromotedSumExactly) {
  auto be = makeCpuBackend();
  // An fp16 branch plus an fp32 shortcut: the fp32 output holds the exact sum of the widened
  // fp16 value and the fp32 value (both representable), nothing rounded to 16 bits.
  Tensor h = be->fromHost(std::vector<float>{1.5f, -0.25f}, {2}, DType::F16, MemCategory::Activations);
  Tensor s = be->fromHost(std::vector<float>{1e-6f, 3.0000002f}, {2}, DType::F32, MemCategory::Activations);
  Tensor y = be->empty({2}, DType::F32, MemCategory::Activations);
  be->add(h, s, y);
  const auto v = be->toHostFloat(y);
  EXPECT_EQ(v[0], 1.5f + 1e-6f);
  EXPECT_EQ(v[1], -0.25f + 3.0000002f);
  Tensor wrong = be->empty({3}, DType::F32, MemCategory::Activations);
  EXPECT_HAS(messageOf<std::invalid_argument>([&] { be->add(h, s, wrong); }), "add: shapes");
}

TEST(ResidualOps, GlobalAveragePoolingIsThePlaneMean) {
  auto be = makeCpuBackend();
  const auto xv = randomVec(2 * 3 * 5 * 7, 41, -4, 4);
  for (DType d : {DType::F32, DType::F16, DType::BF16}) {
    Tensor x = be->fromHost(xv, {2, 3, 5, 7}, d, MemCategory::Activations);
    const auto stored = be->toHostFloat(x);  // the values as rounded to d
    Tensor y = be->empty({2, 3}, d, MemCategory::Activations);
    be->globalAvgPoolForward(x, y);
    const auto got = be->toHostFloat(y);
    for (int p = 0; p < 6; ++p) {
      float sum = 0.f;  // the documented order: one fp32 sum in row-major order
      for (int i = 0; i < 35; ++i) sum += stored[p * 35 + i];
      const float mean = sum / 35.f;
      const float expected = d == DType::F32   ? mean
                             : d == DType::F16 ? halfBitsToFloat(floatToHalfBits(mean))
                                               : bf16BitsToFloat(floatToBf16Bits(mean));
      EXPECT_EQ(got[p], expected) << dtypeName(d) << " plane " << p;
      double exact = 0;
      for (int i = 0; i < 35; ++i) exact += stored[p * 35 + i];
      EXPECT_NEAR(got[p], exact / 35, d == DType::F32 ? 1e-6 : 2e-2) << "near the exact mean";
    }
  }
}

TEST(ResidualOps, GlobalAveragePoolingBackwardSpreadsTheGradient) {
  auto be = makeCpuBackend();
  Tensor dy = be->fromHost(std::vector<float>{6.f, -1.f}, {1, 2}, DType::F32, MemCategory::Activations);
  Tensor dx = be->empty({1, 2, 2, 3}, DType::F16, MemCategory::Activations);
  be->globalAvgPoolBackward(dy, dx);
  const auto v = be->toHostFloat(dx);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], 1.f);
  // -1/6 rounded once to fp16.
  for (int i = 6; i < 12; ++i) EXPECT_EQ(v[i], halfBitsToFloat(floatToHalfBits(-1.f / 6.f)));
  Tensor bad = be->empty({2, 2}, DType::F32, MemCategory::Activations);
  EXPECT_HAS(messageOf<std::invalid_argument>([&] { be->globalAvgPoolBackward(bad, dx); }),
             "adaptive_avg_pool2d backward");
}

TEST(ResidualOps, PaddedMaxPoolingNeverChoosesThePadding) {
  // torch.nn.MaxPool2d(3, stride=2, padding=1) on a 4x4 plane: output 2x2; window (i, j) covers
  // rows and columns 2i-1 .. 2i+1 and 2j-1 .. 2j+1, the -1st being padding (-inf, never chosen).
  auto be = makeCpuBackend();
  const float ninf = -std::numeric_limits<float>::infinity();
  Pool2dGeometry g;
  g.n = 1, g.c = 1, g.h = 4, g.w = 4, g.kernel = 3, g.stride = 2, g.padding = 1;
  ASSERT_EQ(g.outH(), 2);
  Tensor y = be->empty({1, 1, 2, 2}, DType::F32, MemCategory::Activations);
  Tensor idx = be->empty({1, 1, 2, 2}, DType::I32, MemCategory::Activations);
  Tensor dy = be->fromHost(std::vector<float>{1, 2, 4, 8}, {1, 1, 2, 2}, DType::F32, MemCategory::Activations);
  Tensor dx = be->empty({1, 1, 4, 4}, DType::F32, MemCategory::Activations);
  auto pool = [&](const std::vector<float>& x) {
    Tensor xt = be->fromHost(x, {1, 1, 4, 4}, DType::F32, MemCategory::Activations);
    be->maxPool2dForward(xt, y, idx, g);
    be->maxPool2dBackward(dy, idx, dx, g);
    return be->toHostFloat(y);
  };
  // 60 at (0, 0) is in window (0, 0) only; the others find 8 at (1, 3), 14 at (3, 1), 16 at (3, 3).
  EXPECT_EQ(pool({60, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}),
            (std::vector<float>{60, 8, 14, 16}));
  EXPECT_EQ(be->toHostInt(idx), (std::vector<std::int32_t>{0, 7, 13, 15}));
  auto d = be->toHostFloat(dx);
  EXPECT_EQ(d[0] + d[7] + d[13] + d[15], 15.f);
  EXPECT_EQ(d[7], 2.f);
  EXPECT_EQ(d[13], 4.f);
  // 60 at (1, 1) lies in all four windows: it wins each, and its gradient sums all four.
  EXPECT_EQ(pool({1, 2, 3, 4, 5, 60, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}),
            (std::vector<float>{60, 60, 60, 60}));
  EXPECT_EQ(be->toHostFloat(dx)[5], 15.f);
  // Windows over -inf inputs take their first inside position (PyTorch's initial index).
  pool(std::vector<float>(16, ninf));
  EXPECT_EQ(be->toHostInt(idx), (std::vector<std::int32_t>{0, 1, 4, 5}));
  // Padding beyond half the window is refused, as PyTorch refuses it.
  g.padding = 2;
  EXPECT_HAS(messageOf<std::invalid_argument>([&] { pool(std::vector<float>(16, 0.f)); }),
             "max_pool2d: invalid geometry");
}

TEST(ResNetGradCheck, GlobalAvgPool) {
  checkLayer([] { return std::make_unique<GlobalAvgPool>(); }, {2, 3, 3, 4}, 0, "GlobalAvgPool");
}

TEST(ResNetGradCheck, PaddedMaxPool) {
  checkLayer([] { return std::make_unique<MaxPool2d>(3, 2, 1); }, {2, 2, 5, 5}, 0,
             "MaxPool2d(3, 2, 1)", 1e-3, 5e-3);
}

// The block's input and every parameter (convolutions, batch norms, the projection) against
// central differences. Batch norm in training mode normalises with the batch's statistics, so
// the objective is a smooth function of everything but the ReLU kinks; a small step keeps the
// differences off them.
TEST(ResNetGradCheck, IdentityBlock) {
  checkLayer([] { return std::make_unique<ResidualBlock>(3, 3, 1); }, {2, 3, 4, 4}, 0,
             "ResidualBlock(identity)", 1e-3, 1e-2);
}

TEST(ResNetGradCheck, ProjectionBlock) {
  checkLayer([] { return std::make_unique<ResidualBlock>(2, 4, 2); }, {2, 2, 5, 5}, 0,
             "ResidualBlock(projection)", 1e-3, 1e-2);
}

TEST(ResidualBlockLayer, NamesItsPartsLikeThePeerModule) {
  auto be = makeCpuBackend();
  ResidualBlock block(16, 32, 2);
  block.setName("layers.3");
  Rng rng(1);
  block.initialize(*be, rng, DType::F32, MemCategory::Weights);
  std::vector<std::string> names;
  for (Parameter* p : block.parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "layers.3.c1.weight", "layers.3.b1.weight", "layers.3.b1.bias",
                       "layers.3.c2.weight", "layers.3.b2.weight", "layers.3.b2.bias",
                       "layers.3.short.0.weight", "layers.3.short.1.weight",
                       "layers.3.short.1.bias"}));
  bool runningMean = false;
  for (auto& [name, t] : block.buffers()) runningMean |= name == "layers.3.short.1.running_mean";
  EXPECT_TRUE(runningMean);
  EXPECT_EQ(block.outputShape({16, 32, 32}), (Shape{32, 16, 16}));
  EXPECT_EQ(block.outputShape({16, 7, 7}), (Shape{32, 4, 4})) << "odd sizes: floor((7-1)/2)+1";
  EXPECT_EQ(block.describe(), "ResidualBlock(16 -> 32, s2, 1x1 projection)");
  EXPECT_EQ(ResidualBlock(8, 8, 1).describe(), "ResidualBlock(8 -> 8, identity)");
  EXPECT_THROW(block.outputShape({8, 32, 32}), std::invalid_argument);
}

// Under fp16 autocast the convolutions run in fp16 and batch norm and ReLU pass fp16 through;
// fed an fp32 input (as no block inside a ResNet is: the stem's output is already 16-bit), the
// identity shortcut brings fp32 to the add, which then promotes, as torch.add does.
TEST(ResidualBlockLayer, RunsInFp16UnderAutocastAndTracesTheAdd) {
  auto be = makeCpuBackend();
  Autocast ac;
  ac.setTracing(true);
  LayerContext ctx{*be, ac};
  ResidualBlock block(2, 2, 1);
  block.setName("layers.0");
  Rng rng(2);
  block.initialize(*be, rng, DType::F32, MemCategory::MasterWeights);
  Tensor x = be->fromHost(randomVec(2 * 2 * 4 * 4, 3), {2, 2, 4, 4}, DType::F32, MemCategory::Activations);
  Tensor y;
  {
    AutocastRegion region(ac, true, DType::F16);
    y = block.forward(ctx, x);
  }
  EXPECT_EQ(y.dtype(), DType::F32) << "fp16 branch + fp32 input: the sum and its ReLU are fp32";
  const auto trace = ac.takeTrace();
  const OpTraceEntry* add = nullptr;
  int convs = 0;
  for (const auto& e : trace) {
    if (e.op == "add") add = &e;
    if (e.op == "conv2d") {
      ++convs;
      EXPECT_EQ(e.computeDtype, DType::F16) << e.layer;
    }
  }
  EXPECT_EQ(convs, 2);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->layer, "layers.0.add");
  EXPECT_EQ(add->policy, CastPolicy::PassThrough);
  EXPECT_EQ(add->inputDtypes, (std::vector<DType>{DType::F16, DType::F32}))
      << "the identity shortcut brings the block's fp32 input";
  EXPECT_EQ(add->outputDtype, DType::F32) << "fp16 + fp32 promotes to fp32, as torch.add";
  EXPECT_EQ(add->castsInserted, 0);
  Tensor dy = be->fromHost(randomVec(y.numel(), 4), y.shape(), DType::F16, MemCategory::Activations);
  Tensor dx = block.backward(ctx, dy, true);
  EXPECT_EQ(dx.dtype(), DType::F32) << "the input's gradient comes back in the input's dtype";
  for (Parameter* p : block.parameters()) EXPECT_EQ(p->grad.dtype(), DType::F32) << p->name;
}

TEST(ResidualBlockLayer, AddOfTwo16BitBranchesStays16Bit) {
  auto be = makeCpuBackend();
  Autocast ac;
  ac.setTracing(true);
  LayerContext ctx{*be, ac};
  ResidualBlock block(2, 2, 1);
  block.setName("b");
  Rng rng(2);
  block.initialize(*be, rng, DType::F32, MemCategory::MasterWeights);
  // A 16-bit input (the output of an earlier block under autocast): both add inputs are bf16.
  Tensor x = be->fromHost(randomVec(2 * 2 * 3 * 3, 5), {2, 2, 3, 3}, DType::BF16, MemCategory::Activations);
  AutocastRegion region(ac, true, DType::BF16);
  Tensor y = block.forward(ctx, x);
  EXPECT_EQ(y.dtype(), DType::BF16);
  for (const auto& e : ac.takeTrace())
    if (e.op == "add") {
      EXPECT_EQ(e.inputDtypes, (std::vector<DType>{DType::BF16, DType::BF16}));
      EXPECT_EQ(e.outputDtype, DType::BF16);
    }
}

TEST(ResidualBlockLayer, ForwardEqualsItsPartsComposedByHand) {
  // The block against the same computation written out with separate layers and backend ops:
  // relu(bn2(conv2(relu(bn1(conv1(x))))) + bn_s(conv_s(x))), fp32, training mode.
  auto be = makeCpuBackend();
  Autocast ac;
  LayerContext ctx{*be, ac};
  ResidualBlock block(3, 4, 2);
  block.setName("b");
  Rng rng(7);
  block.initialize(*be, rng, DType::F32, MemCategory::Weights);
  Conv2d c1(3, 4, 3, 1, 2, false), c2(4, 4, 3, 1, 1, false), cs(3, 4, 1, 0, 2, false);
  BatchNorm b1(4), b2(4), bs(4);
  ActivationLayer r1(Activation::ReLU), r2(Activation::ReLU);
  Rng same(7);
  for (Layer* l : std::initializer_list<Layer*>{&c1, &b1, &c2, &b2, &cs, &bs})
    l->initialize(*be, same, DType::F32, MemCategory::Weights);
  Tensor x = be->fromHost(randomVec(2 * 3 * 6 * 6, 8), {2, 3, 6, 6}, DType::F32, MemCategory::Activations);
  const auto got = be->toHostFloat(block.forward(ctx, x));
  Tensor h = r1.forward(ctx, b1.forward(ctx, c1.forward(ctx, x)));
  h = b2.forward(ctx, c2.forward(ctx, h));
  Tensor s = bs.forward(ctx, cs.forward(ctx, x));
  Tensor sum = be->empty(h.shape(), DType::F32, MemCategory::Activations);
  be->add(h, s, sum);
  EXPECT_EQ(got, be->toHostFloat(r2.forward(ctx, sum)));
}

namespace {
// An observer that only watches: with it set, a block runs its parts one by one.
class NullObserver final : public TensorObserver {
 public:
  void activation(const std::string&, const Tensor&) override {}
  void activationGrad(const std::string&, const Tensor&) override {}
  bool wantsRoundingCounts() const override { return false; }
};
}  // namespace

// Batch norm + ReLU (+ the residual) in one pass gives the separate ops' values bit for bit, in
// every dtype: each intermediate is rounded as the separate ops round it.
TEST(ResidualOps, FusedBatchNormReluEqualsTheSeparateOps) {
  auto be = makeCpuBackend();
  const Shape s{4, 3, 5, 6};
  for (DType d : {DType::F32, DType::F16, DType::BF16})
    for (bool withResidual : {false, true}) {
      Tensor x = be->fromHost(randomVec(shapeNumel(s), 51, -3, 3), s, d, MemCategory::Activations);
      Tensor r = be->fromHost(randomVec(shapeNumel(s), 52, -3, 3), s, d, MemCategory::Activations);
      Tensor g = be->fromHost(randomVec(3, 53, 0.5, 2), {3}, DType::F32, MemCategory::Weights);
      Tensor b = be->fromHost(randomVec(3, 54), {3}, DType::F32, MemCategory::Weights);
      auto stats = [&] {
        return std::array<Tensor, 4>{be->zeros({3}, DType::F32, MemCategory::Weights),
                                     be->fromHost(std::vector<float>(3, 1.f), {3}, DType::F32, MemCategory::Weights),
                                     be->empty({3}, DType::F32, MemCategory::Activations),
                                     be->empty({3}, DType::F32, MemCategory::Activations)};
      };
      auto fused = stats(), separate = stats();
      Tensor y1 = be->empty(s, d, MemCategory::Activations), y2 = be->empty(s, d, MemCategory::Activations);
      be->batchNormReluForwardTrain(x, g, b, fused[0], fused[1], 0.1f, 1e-5f, withResidual ? &r : nullptr,
                                    y1, fused[2], fused[3]);
      // The base class's way: the three calls (Backend's default implementation).
      be->Backend::batchNormReluForwardTrain(x, g, b, separate[0], separate[1], 0.1f, 1e-5f,
                                             withResidual ? &r : nullptr, y2, separate[2], separate[3]);
      const std::string what = std::string(dtypeName(d)) + (withResidual ? " with residual" : "");
      EXPECT_EQ(be->toHostBytes(y1), be->toHostBytes(y2)) << what;
      for (int k = 0; k < 4; ++k) EXPECT_EQ(be->toHostBytes(fused[k]), be->toHostBytes(separate[k])) << what;
      const auto v = be->toHostFloat(y1);
      EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float f) { return f >= 0.f; })) << what;
    }
}

// The block's fused training forward (every step without histograms) and its part-by-part one
// (histogram steps) give the same output and the same gradients.
TEST(ResidualBlockLayer, FusedAndPartByPartStepsAgreeBitForBit) {
  for (DType d : {DType::F32, DType::F16, DType::BF16}) {
    std::vector<std::vector<std::uint8_t>> results[2];
    for (int observed = 0; observed < 2; ++observed) {
      auto be = makeCpuBackend();
      Autocast ac;
      NullObserver watch;
      LayerContext ctx{*be, ac, true, observed ? &watch : nullptr};
      ResidualBlock block(3, 6, 2);
      block.setName("b");
      Rng rng(9);
      block.initialize(*be, rng, DType::F32, MemCategory::MasterWeights);
      Tensor x = be->fromHost(randomVec(2 * 3 * 7 * 7, 10), {2, 3, 7, 7}, d, MemCategory::Activations);
      Tensor y, dx;
      {
        AutocastRegion region(ac, d != DType::F32, d == DType::F32 ? DType::F16 : d);
        y = block.forward(ctx, x);
      }
      Tensor dy = be->fromHost(randomVec(y.numel(), 11), y.shape(), y.dtype(), MemCategory::Activations);
      dx = block.backward(ctx, dy, true);
      auto& out = results[observed];
      out.push_back(be->toHostBytes(y));
      out.push_back(be->toHostBytes(dx));
      for (Parameter* p : block.parameters()) out.push_back(be->toHostBytes(p->grad));
      for (auto& [name, t] : block.buffers()) out.push_back(be->toHostBytes(*t));
    }
    ASSERT_EQ(results[0].size(), results[1].size());
    for (std::size_t i = 0; i < results[0].size(); ++i)
      EXPECT_EQ(results[0][i], results[1][i]) << dtypeName(d) << " tensor " << i;
  }
}
