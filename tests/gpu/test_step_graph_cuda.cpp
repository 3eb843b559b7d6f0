// Whole-step CUDA graphs (engine/backend/cuda_step_graph.cpp, engine/train/trainer_graph.cpp)
// against the eager step on the same GPU. The reference is exact: a replay launches the kernels
// the eager step launches, with this step's scalars through the slots, so every scale decision
// and every final weight must be bit for bit the eager run's. The loss and the gradient norm are
// sums of block partials added with double atomics, whose order varies from run to run (eager
// or not): those agree within 1e-12 relative (the weights, which a clip would feed that norm
// into, stay exact). Runs cover what a replay must hand over: a schedule's lr, Adam's bias
// corrections, the scale's growth and backoff (skipped steps), clipping, a bf16 run without a
// scaler (deferred roundings), BatchNorm's counters (a ResNet), and the eager steps between
// replays (injected overflows, histogram steps) that drop and re-record the graph. Then the
// backend's protocol on its own: slots, refusals, and a replay that differs from its capture.
// Skips without a GPU.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/backend/cuda_backend.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/gpu/step_graph_support.h"

using namespace amp;
using namespace amp::gpu_test;
using namespace amp::step_graph_test;

TEST(StepGraphCuda, TwoEagerRunsAreIdentical) {
  // The control: without it, a difference below could be the GPU's, not the graph's.
  AMP_SKIP_WITHOUT_GPU();
  const RunConfig c = recipe({{"amp.mode", "fp16"}, {"optimizer.momentum", "0.9"}});
  const GraphRun a = run(c, 20, false), b = run(c, 20, false);
  expectSameRun(a, b, "eager twice");
  EXPECT_EQ(count(b.how, "eager"), 20);
}

TEST(StepGraphCuda, RecipeReplaysGiveTheEagerRunBitForBit) {
  AMP_SKIP_WITHOUT_GPU();
  const std::vector<std::pair<std::string, Overrides>> variants{
      {"fp32 sgd momentum", {{"amp.mode", "fp32"}, {"optimizer.momentum", "0.9"}}},
      {"fp16 sgd cosine schedule", {{"amp.mode", "fp16"}, {"optimizer.momentum", "0.9"},
                                    {"schedule.name", "cosine"}, {"train.steps", "40"}}},
      {"fp16 adamw clip", {{"amp.mode", "fp16"}, {"optimizer.name", "adamw"},
                           {"optimizer.lr", "0.001"}, {"optimizer.weight_decay", "0.01"},
                           {"train.clip_norm", "0.5"}}},
      {"bf16 adam no scaler", {{"amp.mode", "bf16"}, {"optimizer.name", "adam"},
                               {"optimizer.lr", "0.001"}}},
      // No scaler and a clip: the deferred roundings are settled in the step's tail, before the
      // clip reads the gradients, so the replay hands those calls over too.
      {"bf16 sgd clip no scaler", {{"amp.mode", "bf16"}, {"optimizer.momentum", "0.9"},
                                   {"train.clip_norm", "0.5"}}},
  };
  for (const auto& [what, o] : variants) {
    const RunConfig c = recipe(o);
    const GraphRun eager = run(c, 40, false), graph = run(c, 40, true);
    expectSameRun(eager, graph, what);
    // Steps 1 and 2 eager (the optimizer's first step, then one steady step), 3 captured, the
    // rest replayed, unless an early overflow skipped a step and delayed the first.
    EXPECT_EQ(count(graph.how, "captured"), 1) << what;
    EXPECT_GE(count(graph.how, "replayed"), 30) << what;
    EXPECT_EQ(count(eager.how, "eager"), 40) << what;
  }
}

// The scale grows inside replays (growth interval 5, from 2^20) and backs off on the injected
// overflows (and on its own, should it grow far enough), whose eager steps drop the graph; the steps
// after them warm up and record it again. Adam's step count must roll back on every skipped
// step, replayed or not. Replays: at most 60 - 3 (before the first capture) - 3 x 3 (each
// injected step, then its warm-up and its capture) = 48, fewer when an early step skips.
TEST(StepGraphCuda, OverflowsAndScaleGrowthAcrossReplays) {
  AMP_SKIP_WITHOUT_GPU();
  for (const char* optimizer : {"sgd", "adam"}) {
    const RunConfig c = recipe({{"amp.mode", "fp16"}, {"optimizer.name", optimizer},
                                {"scaler.growth_interval", "5"},
                                {"scaler.init_scale", "1048576"},  // 2^20
                                {"train.inject_nonfinite", "20,21,45"}});
    const GraphRun eager = run(c, 60, false), graph = run(c, 60, true);
    expectSameRun(eager, graph, optimizer);
    int skipped = 0;
    for (const auto& m : graph.steps) skipped += m.skipped;
    EXPECT_GE(skipped, 3) << optimizer << ": the three injected steps";
    int grown = 0;
    for (const auto& m : graph.steps) grown += m.scaleAfter > m.scale;
    EXPECT_GE(grown, 4) << optimizer << ": growth every 5 clean steps, inside replays too";
    EXPECT_GE(count(graph.how, "captured"), 3) << optimizer;
    EXPECT_GE(count(graph.how, "replayed"), 30) << optimizer;
  }
}

// Histogram steps run eagerly (they read gradients mid-step) between replays.
TEST(StepGraphCuda, HistogramStepsRunEagerlyBetweenReplays) {
  AMP_SKIP_WITHOUT_GPU();
  const RunConfig c = recipe({{"amp.mode", "fp16"}, {"train.histogram_every", "10"}});
  const GraphRun eager = run(c, 35, false), graph = run(c, 35, true);
  expectSameRun(eager, graph, "histograms every 10");
  for (std::size_t i = 0; i < graph.how.size(); ++i)
    if ((i + 1) % 10 == 0 || i == 0) {
      EXPECT_EQ(graph.how[i], "eager") << "step " << i + 1;
    }
  for (std::size_t i = 0; i < graph.steps.size(); ++i)
    EXPECT_EQ(eager.steps[i].histograms.size(), graph.steps[i].histograms.size()) << "step " << i + 1;
}

// A ResNet: convolutions (cuDNN, their workspaces from the graph's memory), BatchNorm (its
// running statistics and num_batches_tracked, now counted on the device), residual adds.
TEST(StepGraphCuda, ResNetReplaysGiveTheEagerRunBitForBit) {
  AMP_SKIP_WITHOUT_GPU();
  const char* dir = std::getenv("AMP_FASHION_MNIST_DIR");
  const std::string data = dir ? dir : kFashionMnistDir;
  if (!std::filesystem::exists(data)) GTEST_SKIP() << "Fashion-MNIST is not here (set AMP_FASHION_MNIST_DIR)";
  for (const char* mode : {"fp32", "bf16"}) {
    RunConfig c;
    for (const auto& [k, v] : Overrides{
             {"backend", "cuda"}, {"model.name", "resnet"}, {"model.depth", "8"},
             {"model.base_width", "8"}, {"data.name", "fmnist"}, {"data.path", data},
             {"data.subset", "1024"}, {"data.test_subset", "256"}, {"data.normalize", "standard"},
             {"train.batch_size", "64"}, {"train.steps", "25"}, {"train.histogram_every", "0"},
             {"train.eval_every", "0"}, {"optimizer.name", "sgd"}, {"optimizer.lr", "0.1"},
             {"optimizer.momentum", "0.9"}, {"amp.mode", mode}})
      setConfigValue(c, k, v);
    const GraphRun eager = run(c, 25, false), graph = run(c, 25, true);
    expectSameRun(eager, graph, std::string("resnet ") + mode);
    EXPECT_GE(count(graph.how, "replayed"), 20) << mode;
  }
}

// ---- the backend's protocol ----------------------------------------------------------------

namespace {
// One AMP tail on three fp32 gradients: unscale, gate, SGD with momentum, scale update.
struct Tail {
  CudaBackend& be;
  std::vector<Tensor> w, g, m;
  std::vector<Tensor*> wp, gp, mp;
  Tail(CudaBackend& b, std::uint32_t seed) : be(b) {
    for (int i = 0; i < 3; ++i) {
      const std::int64_t n = 1000 * (i + 1);
      w.push_back(be.fromHost(finiteValues(std::size_t(n), seed + i), {n}, DType::F32, MemCategory::Weights));
      g.push_back(be.fromHost(finiteValues(std::size_t(n), seed + 10 + i), {n}, DType::F32, MemCategory::Gradients));
      m.push_back(be.zeros({n}, DType::F32, MemCategory::OptimizerState));
    }
    for (int i = 0; i < 3; ++i) {
      wp.push_back(&w[i]);
      gp.push_back(&g[i]);
      mp.push_back(&m[i]);
    }
  }
  StepStats step(float invScale, float lr, const ScaleCounters& current) {
    be.beginStep();
    be.foreachUnscaleAndCheck(gp, invScale);
    be.gateStep({true, false});
    SgdParams p;
    p.lr = lr;
    p.momentum = 0.9f;
    p.firstStep = false;
    be.foreachSgdStep(wp, gp, mp, p);
    be.updateScale(ScaleRule{}, current);
    return be.readStepStats();
  }
};
}  // namespace

// Capture with one set of scalars, replay with others: the replay must compute what an eager
// step with the replay's scalars computes (the slots), not what the capture was given.
TEST(StepGraphCuda, ReplaysUseTheirOwnScalars) {
  AMP_SKIP_WITHOUT_GPU();
  CudaBackend graphBe(0, false), eagerBe(0, false);
  Tail graph(graphBe, 1), eager(eagerBe, 1);
  const float inv[] = {1.f / 1024, 1.f / 2048, 1.f / 512};
  const float lr[] = {0.1f, 0.05f, 0.025f};
  const ScaleCounters counters[] = {{1024.f, 3, 1}, {2048.f, 0, 1}, {512.f, 1999, 1}};
  for (int s = 0; s < 3; ++s) {
    if (s == 0) graphBe.beginStepCapture();
    else graphBe.beginStepReplay(1.f);
    const StepStats a = graph.step(inv[s], lr[s], counters[s]);
    const StepStats b = eager.step(inv[s], lr[s], counters[s]);
    EXPECT_FALSE(graphBe.stepGraphPending());
    EXPECT_TRUE(graphBe.hasStepGraph());
    expectNearOrBothNonFinite(a.unscaledSumOfSquares, b.unscaledSumOfSquares, "step " + std::to_string(s));
    expectNearOrBothNonFinite(a.stepGradSumOfSquares, b.stepGradSumOfSquares, "step " + std::to_string(s));
    EXPECT_EQ(a.scale.scale, b.scale.scale) << "step " << s;
    EXPECT_EQ(a.scale.growthTracker, b.scale.growthTracker) << "step " << s;
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(graphBe.toHostBytes(graph.w[i]), eagerBe.toHostBytes(eager.w[i])) << "step " << s;
      EXPECT_EQ(graphBe.toHostBytes(graph.m[i]), eagerBe.toHostBytes(eager.m[i])) << "step " << s;
    }
    // The gradients were unscaled in place: give both the same fresh ones for the next step.
    for (int i = 0; i < 3; ++i) {
      const auto v = finiteValues(std::size_t(graph.g[i].numel()), 100 + 10 * s + i);
      graphBe.uploadFloat(graph.g[i], v);
      eagerBe.uploadFloat(eager.g[i], v);
    }
  }
}

// What a graph cannot record refuses while capturing, and leaves the backend usable.
TEST(StepGraphCuda, CaptureRefusesHostCopiesAndReadsAndRecovers) {
  AMP_SKIP_WITHOUT_GPU();
  CudaBackend be(0, false);
  Tensor t = be.zeros({16}, DType::F32, MemCategory::Workspace);
  const std::vector<float> ones(16, 1.f);
  be.beginStepCapture();
  EXPECT_THROW(be.uploadFloat(t, ones), StepCaptureFailed);
  EXPECT_THROW(be.toHostFloat(t), StepCaptureFailed);
  EXPECT_THROW(be.sumOfSquares(t), StepCaptureFailed);
  EXPECT_TRUE(be.stepGraphPending());
  be.dropStepGraph();
  EXPECT_FALSE(be.stepGraphPending());
  EXPECT_FALSE(be.hasStepGraph());
  be.uploadFloat(t, ones);
  EXPECT_EQ(be.sumOfSquares(t), 16.0);
}

// A replay whose tail differs from the captured one (another gate, a missing call, an op that
// is not in the tail) is refused before anything runs.
TEST(StepGraphCuda, ReplayRefusesAStepThatDiffers) {
  AMP_SKIP_WITHOUT_GPU();
  CudaBackend be(0, false);
  Tail tail(be, 7);
  be.beginStepCapture();
  tail.step(1.f / 8, 0.1f, {8.f, 0, 1});
  ASSERT_TRUE(be.hasStepGraph());

  be.beginStepReplay(1.f);
  be.beginStep();
  be.foreachUnscaleAndCheck(tail.gp, 1.f / 8);
  EXPECT_THROW(be.gateStep({false, false}), std::logic_error);  // captured with skipIfFoundInf
  EXPECT_TRUE(be.stepGraphPending());
  be.dropStepGraph();

  be.beginStepCapture();
  tail.step(1.f / 8, 0.1f, {8.f, 0, 1});
  be.beginStepReplay(1.f);
  be.beginStep();
  EXPECT_THROW(be.fill(tail.w[0], 0.f), std::logic_error);  // not part of a replayed step
  be.foreachUnscaleAndCheck(tail.gp, 1.f / 8);
  be.gateStep({true, false});
  EXPECT_THROW(be.readStepStats(), std::logic_error);  // the SGD step and the update are missing
  be.dropStepGraph();
  EXPECT_NO_THROW(tail.step(1.f / 8, 0.1f, {8.f, 0, 1}));  // eager again
}

// BatchNorm's counter on the device: the base class's host round trip gives the same count.
TEST(StepGraphCuda, IncrementIntCountsOnTheDevice) {
  AMP_SKIP_WITHOUT_GPU();
  CudaBackend be(0, false);
  Tensor n = be.zeros({}, DType::I32, MemCategory::Workspace);
  for (int i = 0; i < 5; ++i) be.incrementInt(n);
  EXPECT_EQ(be.toHostInt(n), std::vector<std::int32_t>{5});
  Tensor wrong = be.zeros({2}, DType::I32, MemCategory::Workspace);
  EXPECT_THROW(be.incrementInt(wrong), std::invalid_argument);
}
