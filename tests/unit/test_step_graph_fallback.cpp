// The trainer's side of whole-step graphs (engine/train/trainer_graph.cpp), on the CPU: a backend
// that stands in for the CUDA one's protocol (CpuBackend, which computes every op at once, with
// the capture/replay calls of Backend). Its "capture" computes the step as an eager one would,
// so a run whose graphs never replay is the eager run; what it checks is the way back: a capture
// refused at once, or a replay refused partway through its AMP tail (after the scaler and the
// optimizer changed their host state), must leave a run bit for bit identical to one that never
// tried, with graphs off afterwards and the reason on record. Also the planning: which steps are
// recorded, and which stay eager (warm-up, histograms, dropout, injection, accumulation).
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend/cpu_backend.h"
#include "engine/config/config_schema.h"
#include "engine/optim/optimizer.h"
#include "engine/train/trainer.h"

using namespace amp;

namespace {

// What the stand-in refuses, and where.
enum class Refuse { Nothing, Capture, ReplayUnscale, ReplayAdam, ReplayRead };

// What the stand-in saw, kept by the test (the trainer owns and destroys the backend).
struct Seen {
  int captures = 0, drops = 0;
  std::vector<float> seeds;
};

class GraphStandIn final : public CpuBackend {
 public:
  GraphStandIn(Refuse refuse, Seen& seen) : m_refuse(refuse), m_seen(seen) {}

  bool capturesSteps() const override { return true; }
  void beginStepCapture() override {
    if (m_refuse == Refuse::Capture) throw StepCaptureFailed("the stand-in refuses to record");
    m_pending = true;
    ++m_seen.captures;
  }
  void beginStepReplay(float lossSeed) override {
    if (!m_graph) throw std::logic_error("no graph");
    m_pending = m_replaying = true;
    m_seen.seeds.push_back(lossSeed);
  }
  bool hasStepGraph() const override { return m_graph; }
  bool stepGraphPending() const override { return m_pending; }
  void dropStepGraph() override {
    m_graph = m_pending = m_replaying = false;
    ++m_seen.drops;
  }
  void foreachUnscaleAndCheck(std::span<Tensor* const> grads, float invScale,
                              std::span<const DType> roundFirst) override {
    if (m_replaying && m_refuse == Refuse::ReplayUnscale) throw std::logic_error("replay: unscale differs");
    if (m_replaying) return;
    CpuBackend::foreachUnscaleAndCheck(grads, invScale, roundFirst);
  }
  void foreachAdamStep(std::span<Tensor* const> params, std::span<Tensor* const> grads,
                       std::span<Tensor* const> expAvg, std::span<Tensor* const> expAvgSq,
                       const AdamParams& p, std::span<const DType> roundFirst,
                       std::span<Tensor* const> lowCopies) override {
    if (m_replaying && m_refuse == Refuse::ReplayAdam) throw std::logic_error("replay: adam differs");
    if (m_replaying) return;
    CpuBackend::foreachAdamStep(params, grads, expAvg, expAvgSq, p, roundFirst, lowCopies);
  }
  void gateStep(const StepGate& gate) override {
    if (!m_replaying) CpuBackend::gateStep(gate);
  }
  void updateScale(const ScaleRule& rule, const ScaleCounters& current) override {
    if (!m_replaying) CpuBackend::updateScale(rule, current);
  }
  StepStats readStepStats() override {
    if (m_replaying) {
      // Every refusal above comes before this point; a stand-in that gets here has no way to
      // replay, so it refuses too (the trainer must then run the step eagerly).
      throw std::logic_error("replay: the stand-in cannot launch a graph");
    }
    if (m_pending) {
      m_pending = false;
      m_graph = m_refuse != Refuse::Nothing;  // Nothing: the graph is never kept, so no replay
    }
    return CpuBackend::readStepStats();
  }


 private:
  Refuse m_refuse;
  Seen& m_seen;
  bool m_graph = false, m_pending = false, m_replaying = false;
};

RunConfig recipe(const std::vector<std::pair<std::string, std::string>>& o) {
  RunConfig c;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model.name", "recipe_mlp"}, {"model.width", "64"}, {"model.layers", "3"},
           {"data.name", "synthetic"}, {"data.batches", "4"}, {"train.batch_size", "32"},
           {"optimizer.name", "adam"}, {"optimizer.lr", "0.01"}, {"train.steps", "8"},
           {"train.histogram_every", "0"}, {"train.eval_every", "0"}, {"seed", "11"},
           {"amp.mode", "fp16"}})
    setConfigValue(c, k, v);
  for (const auto& [k, v] : o) setConfigValue(c, k, v);
  return c;
}

struct Outcome {
  std::vector<StepMetrics> steps;
  std::vector<std::string> how;
  std::vector<std::vector<float>> weights;
  std::string note;
};

Outcome run(const RunConfig& c, std::unique_ptr<Backend> be) {
  Trainer t(c, std::move(be));
  Outcome o;
  while (!t.finished()) {
    o.steps.push_back(t.step());
    o.how.push_back(t.lastStepGraph());
  }
  for (Parameter* p : t.model().parameters()) o.weights.push_back(t.backend().toHostFloat(p->value));
  o.note = t.stepGraphNote();
  return o;
}

void expectSameRun(const Outcome& a, const Outcome& b, const std::string& what) {
  ASSERT_EQ(a.steps.size(), b.steps.size()) << what;
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].loss, b.steps[i].loss) << what << " step " << i + 1;
    EXPECT_EQ(a.steps[i].gradNorm, b.steps[i].gradNorm) << what << " step " << i + 1;
    EXPECT_EQ(a.steps[i].scaleAfter, b.steps[i].scaleAfter) << what << " step " << i + 1;
    EXPECT_EQ(a.steps[i].skipped, b.steps[i].skipped) << what << " step " << i + 1;
  }
  ASSERT_EQ(a.weights.size(), b.weights.size()) << what;
  for (std::size_t i = 0; i < a.weights.size(); ++i)
    EXPECT_EQ(0, std::memcmp(a.weights[i].data(), b.weights[i].data(), a.weights[i].size() * 4))
        << what << ": parameter " << i;
}

}  // namespace

// The CPU backend records nothing: every step is eager.
TEST(StepGraphFallback, TheCpuBackendRunsEveryStepEagerly) {
  const Outcome o = run(recipe({}), std::make_unique<CpuBackend>());
  for (const auto& h : o.how) EXPECT_EQ(h, "eager");
  EXPECT_EQ(o.note, "");
}

// Step 1 is the optimizer's first (not steady), step 2 the warm-up, step 3 the capture.
TEST(StepGraphFallback, StepsAreRecordedOnceTheRunIsSteady) {
  Seen seen;
  auto be = std::make_unique<GraphStandIn>(Refuse::Nothing, seen);
  const Outcome eager = run(recipe({}), std::make_unique<CpuBackend>());
  const Outcome o = run(recipe({}), std::move(be));
  expectSameRun(eager, o, "never replayed");
  ASSERT_EQ(o.how.size(), 8u);
  EXPECT_EQ(o.how[0], "eager");
  EXPECT_EQ(o.how[1], "eager");
  EXPECT_EQ(o.how[2], "captured");
  // Nothing keeps no graph, so every later steady step records again.
  EXPECT_EQ(seen.captures, 6);
  EXPECT_EQ(o.note, "");
}

TEST(StepGraphFallback, ARefusedCaptureLeavesTheEagerRun) {
  const Outcome eager = run(recipe({}), std::make_unique<CpuBackend>());
  Seen seen;
  const Outcome o = run(recipe({}), std::make_unique<GraphStandIn>(Refuse::Capture, seen));
  expectSameRun(eager, o, "capture refused");
  for (const auto& h : o.how) EXPECT_EQ(h, "eager");
  EXPECT_NE(o.note.find("capturing step 3"), std::string::npos) << o.note;
  EXPECT_NE(o.note.find("the stand-in refuses to record"), std::string::npos) << o.note;
}

// A replay refused partway through the tail: the scaler had unscaled (its stage), the optimizer
// had counted the step (Adam's bias correction): both are put back before the eager rerun, or
// the rerun would throw ("unscale_() has already been called") or step with the wrong t.
TEST(StepGraphFallback, ARefusedReplayIsTakenBackAndRunEagerly) {
  const Outcome eager = run(recipe({}), std::make_unique<CpuBackend>());
  for (Refuse r : {Refuse::ReplayUnscale, Refuse::ReplayAdam, Refuse::ReplayRead}) {
    Seen seen;
    const Outcome o = run(recipe({}), std::make_unique<GraphStandIn>(r, seen));
    const std::string what = "refused at " + std::to_string(int(r));
    expectSameRun(eager, o, what);
    EXPECT_EQ(o.how[2], "captured") << what;
    EXPECT_EQ(o.how[3], "eager") << what;
    EXPECT_NE(o.note.find("replaying step 4"), std::string::npos) << o.note;
    EXPECT_EQ(seen.captures, 1) << what << ": graphs stay off once one failed";
    // The replay was handed the loss seed the eager step uses: the scale (fp16's 65536).
    ASSERT_EQ(seen.seeds.size(), 1u) << what;
    EXPECT_EQ(seen.seeds[0], eager.steps[3].scale) << what;
  }
}

// Steps that read or change the step's inside stay eager and drop any graph.
TEST(StepGraphFallback, TelemetryDropoutAndAccumulationStayEager) {
  const std::vector<std::vector<std::pair<std::string, std::string>>> eagerOnly{
      {{"train.accumulation", "2"}},
      {{"model.name", "mlp"}, {"model.hidden", "32,32"}, {"model.dropout", "0.1"}},
  };
  for (const auto& o : eagerOnly) {
    Seen seen;
    const Outcome out = run(recipe(o), std::make_unique<GraphStandIn>(Refuse::ReplayRead, seen));
    for (const auto& h : out.how) EXPECT_EQ(h, "eager") << o.front().first;
    EXPECT_EQ(seen.captures, 0) << o.front().first;
  }
  // Histograms at steps 1, 4 and 8, an injected overflow at step 6: those steps are eager, and a
  // capture needs a warm-up step after each.
  Seen seen;
  const Outcome out = run(recipe({{"train.histogram_every", "4"}, {"train.inject_nonfinite", "6"}}),
                          std::make_unique<GraphStandIn>(Refuse::Nothing, seen));
  const std::vector<std::string> expected{"eager", "eager", "captured", "eager",
                                          "eager", "eager", "eager",    "eager"};
  EXPECT_EQ(out.how, expected);
}

// What the planner asks of the optimizer: steady once every parameter's state exists and has
// stepped; a skipped first step (a gate that skips) leaves it unsteady, as the rollback frees
// the state; hostState/restoreHostState take a launched step back.
TEST(StepGraphFallback, OptimizerSteadinessAndHostState) {
  CpuBackend be;
  Parameter w;
  w.name = "w";
  w.value = be.fromHost(std::vector<float>(8, 1.f), {8}, DType::F32, MemCategory::Weights);
  w.grad = be.fromHost(std::vector<float>(8, 0.5f), {8}, DType::F32, MemCategory::Gradients);
  OptimizerConfig c;
  c.name = "adam";
  Optimizer opt(be, {&w}, c);
  EXPECT_FALSE(opt.steady());

  // A launch the device reported skipped (finishStep's stats say so): taken back on the host.
  be.beginStep();
  be.gateStep({});
  opt.launchStep(0.01);
  StepStats skipped;
  skipped.stepped = false;
  opt.finishStep(skipped);
  EXPECT_FALSE(opt.steady()) << "a skipped first step makes no state";
  EXPECT_EQ(opt.stepCount(), 0);

  be.uploadFloat(w.grad, std::vector<float>(8, 0.5f));
  opt.step(0.01);
  EXPECT_TRUE(opt.steady());
  EXPECT_EQ(opt.stepCount(), 1);

  const Optimizer::HostState before = opt.hostState();
  opt.launchStep(0.01);  // recorded, never finished: taken back
  EXPECT_EQ(opt.stepCount(), 2);
  opt.restoreHostState(before);
  EXPECT_EQ(opt.stepCount(), 1);
  EXPECT_TRUE(opt.steady());
}

// The base class's counter (the CPU's) and its refusal of anything but a one-element int32.
TEST(StepGraphFallback, IncrementIntOnTheCpu) {
  CpuBackend be;
  Tensor n = be.zeros({}, DType::I32, MemCategory::Workspace);
  for (int i = 0; i < 3; ++i) be.incrementInt(n);
  EXPECT_EQ(be.toHostInt(n), std::vector<std::int32_t>{3});
  Tensor f = be.zeros({1}, DType::F32, MemCategory::Workspace);
  EXPECT_THROW(be.incrementInt(f), std::invalid_argument);
}
