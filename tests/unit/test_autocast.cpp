// autocast: the op lists (PyTorch's "CUDA Ops that can autocast to float16" reference), nested
// regions, the weight-cast cache, and the dtypes our layers actually produce.
#include <gtest/gtest.h>

#include "engine/amp/autocast.h"
#include "engine/nn/activation_layer.h"
#include "engine/nn/linear.h"
#include "engine/nn/loss.h"
#include "engine/data/rng.h"

using namespace amp;

namespace {

struct Case {
  const char* op;
  DType expected16;  // output dtype in an fp16 region, given fp32 inputs
};

// From PyTorch's AMP op reference: ops on the lower-precision list run in the region's dtype,
// the fp32 lists in fp32, everything else in its input's dtype.
const Case kCases[] = {
    {"linear", DType::F16},      {"matmul", DType::F16},        {"mm", DType::F16},
    {"addmm", DType::F16},       {"bmm", DType::F16},           {"baddbmm", DType::F16},
    {"conv1d", DType::F16},      {"conv2d", DType::F16},        {"conv3d", DType::F16},
    {"conv_transpose2d", DType::F16}, {"prelu", DType::F16},    {"GRUCell", DType::F16},
    {"LSTMCell", DType::F16},    {"RNNCell", DType::F16},
    {"exp", DType::F32},         {"log", DType::F32},           {"pow", DType::F32},
    {"reciprocal", DType::F32},  {"rsqrt", DType::F32},         {"softplus", DType::F32},
    {"layer_norm", DType::F32},  {"group_norm", DType::F32},    {"norm", DType::F32},
    {"mse_loss", DType::F32},    {"l1_loss", DType::F32},       {"smooth_l1_loss", DType::F32},
    {"huber_loss", DType::F32},  {"nll_loss", DType::F32},      {"cross_entropy", DType::F32},
    {"kl_div", DType::F32},      {"binary_cross_entropy_with_logits", DType::F32},
    {"softmax", DType::F32},     {"log_softmax", DType::F32},   {"sum", DType::F32},
    {"prod", DType::F32},        {"cumsum", DType::F32},
};

}  // namespace

TEST(AutocastPolicy, EveryListedOpRunsInItsListsDtype) {
  const auto policy = AutocastPolicy::pytorchDefault();
  for (const Case& c : kCases) {
    for (DType low : {DType::F16, DType::BF16}) {
      const DType want = c.expected16 == DType::F16 ? low : DType::F32;
      // fp32 inputs, as activations and master weights arrive.
      EXPECT_EQ(policy.computeDtype(c.op, low, {DType::F32, DType::F32}), want) << c.op;
      // 16-bit inputs do not change the answer for these lists.
      EXPECT_EQ(policy.computeDtype(c.op, low, {low}), want) << c.op;
    }
  }
}

TEST(AutocastPolicy, PromoteAndPassThrough) {
  const auto policy = AutocastPolicy::pytorchDefault();
  for (const char* op : {"cat", "stack", "addcmul", "addcdiv", "dot"}) {
    EXPECT_EQ(policy.computeDtype(op, DType::F16, {DType::F16, DType::F32}), DType::F32) << op;
    EXPECT_EQ(policy.computeDtype(op, DType::F16, {DType::F16, DType::F16}), DType::F16) << op;
    // fp16 with bf16 promotes to fp32 (torch.promote_types).
    EXPECT_EQ(policy.computeDtype(op, DType::BF16, {DType::F16, DType::BF16}), DType::F32) << op;
  }
  for (const char* op : {"relu", "max_pool2d", "dropout", "add", "batch_norm", "something_unlisted"}) {
    EXPECT_EQ(policy.computeDtype(op, DType::F16, {DType::F16}), DType::F16) << op;
    EXPECT_EQ(policy.computeDtype(op, DType::F16, {DType::F32}), DType::F32) << op;
  }
}

TEST(AutocastPolicy, BinaryCrossEntropyOnProbabilitiesIsRefused) {
  const auto policy = AutocastPolicy::pytorchDefault();
  EXPECT_THROW(policy.computeDtype("binary_cross_entropy", DType::F16, {DType::F16}),
               std::invalid_argument);
}

TEST(AutocastPolicy, EditsAreReportedAsOverrides) {
  auto policy = AutocastPolicy::pytorchDefault();
  EXPECT_TRUE(policy.overrides().empty());
  policy.setPolicy("softmax", CastPolicy::LowerPrecision);
  ASSERT_EQ(policy.overrides().size(), 1u);
  EXPECT_EQ(policy.computeDtype("softmax", DType::F16, {DType::F32}), DType::F16);
}

TEST(Autocast, RegionsNestAndDisabledSubRegionRunsWidest) {
  Autocast ac;
  EXPECT_FALSE(ac.enabled());
  {
    AutocastRegion outer(ac, true, DType::F16);
    EXPECT_TRUE(ac.enabled());
    EXPECT_EQ(ac.computeDtype("linear", {DType::F32}), DType::F16);
    {
      AutocastRegion inner(ac, false, DType::F16);
      EXPECT_FALSE(ac.enabled());
      // Outside autocast, mixed inputs run in the widest dtype (a user's manual .float()).
      EXPECT_EQ(ac.computeDtype("linear", {DType::F16, DType::F32}), DType::F32);
    }
    {
      AutocastRegion bf(ac, true, DType::BF16);
      EXPECT_EQ(ac.computeDtype("linear", {DType::F32}), DType::BF16);
    }
    EXPECT_EQ(ac.lowDtype(), DType::F16);
  }
  EXPECT_FALSE(ac.enabled());
  EXPECT_EQ(ac.depth(), 0);
}

TEST(Autocast, WeightCastsAreCachedUntilTheOutermostRegionEnds) {
  auto be = makeCpuBackend();
  Autocast ac;
  Tensor w = be->fromHost(std::vector<float>{1.f, 2.f, 3.f, 65520.f}, {2, 2}, DType::F32,
                          MemCategory::MasterWeights);
  bool hit = false, cast = false;
  {
    AutocastRegion r(ac, true, DType::F16);
    Tensor a = ac.castParameter(*be, w, DType::F16, hit, cast);
    EXPECT_FALSE(hit);
    EXPECT_TRUE(cast);
    EXPECT_EQ(a.dtype(), DType::F16);
    EXPECT_EQ(be->toHostFloat(a).back(), INFINITY);  // 65520 rounds to inf in fp16
    {
      AutocastRegion nested(ac, true, DType::F16);
      Tensor b = ac.castParameter(*be, w, DType::F16, hit, cast);
      EXPECT_TRUE(hit);
      EXPECT_EQ(a.id(), b.id());
    }
    EXPECT_EQ(ac.cacheSize(), 1u);  // inner exit keeps the cache
  }
  EXPECT_EQ(ac.cacheSize(), 0u);  // outermost exit clears it
  // Only casts to the region's dtype are cached.
  AutocastRegion r(ac, true, DType::BF16);
  ac.castParameter(*be, w, DType::F16, hit, cast);
  EXPECT_EQ(ac.cacheSize(), 0u);
}

TEST(Autocast, LayersProduceThePolicysDtypesForwardAndBackward) {
  auto be = makeCpuBackend();
  for (DType low : {DType::F16, DType::BF16}) {
    Autocast ac;
    ac.setTracing(true);
    LayerContext ctx{*be, ac};
    Linear fc(4, 3);
    fc.setName("0");
    Rng rng(1);
    fc.initialize(*be, rng, DType::F32, MemCategory::MasterWeights);
    ActivationLayer relu(Activation::ReLU);
    relu.setName("1");
    CrossEntropyLoss loss;
    Tensor x = be->fromHost(std::vector<float>(8, 0.5f), {2, 4}, DType::F32, MemCategory::Activations);
    Tensor y = be->fromHostInt(std::vector<std::int32_t>{0, 2}, {2}, MemCategory::Activations);
    double l;
    Tensor h, a;
    {
      AutocastRegion region(ac, true, low);
      h = fc.forward(ctx, x);
      a = relu.forward(ctx, h);
      l = loss.forward(ctx, a, y);
    }
    EXPECT_EQ(h.dtype(), low);  // linear: lower-precision list
    EXPECT_EQ(a.dtype(), low);  // relu: runs in its input's dtype
    EXPECT_TRUE(std::isfinite(l));
    Tensor g = loss.backward(ctx, 1.f);
    EXPECT_EQ(g.dtype(), low);  // the loss gradient returns in the logits' dtype
    Tensor ga = relu.backward(ctx, g, true);
    EXPECT_EQ(ga.dtype(), low);
    Tensor gx = fc.backward(ctx, ga, true);
    EXPECT_EQ(gx.dtype(), DType::F32);  // back through the input's cast
    for (Parameter* p : fc.parameters()) EXPECT_EQ(p->grad.dtype(), DType::F32) << p->name;
    const auto trace = ac.takeTrace();
    ASSERT_GE(trace.size(), 3u);
    EXPECT_EQ(trace[0].op, "linear");
    EXPECT_EQ(trace[0].policy, CastPolicy::LowerPrecision);
    EXPECT_EQ(trace[0].castsInserted, 3);  // input, weight, bias
    EXPECT_EQ(trace[2].op, "cross_entropy");
    EXPECT_EQ(trace[2].computeDtype, DType::F32);
  }
}
