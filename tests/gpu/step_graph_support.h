// Eager runs beside step-graph runs on the same GPU, for the step-graph tests
// (test_step_graph_cuda*.cpp): a trainer per run, what each step did, the final weights.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend/cuda_backend.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/train/trainer.h"

namespace amp::step_graph_test {

using Overrides = std::vector<std::pair<std::string, std::string>>;

inline RunConfig recipe(const Overrides& o) {
  RunConfig c = presetConfig(*findPreset("recipe"));
  setConfigValue(c, "backend", "cuda");
  setConfigValue(c, "model.width", "256");
  setConfigValue(c, "train.batch_size", "128");
  setConfigValue(c, "train.histogram_every", "0");
  setConfigValue(c, "train.eval_every", "0");
  for (const auto& [k, v] : o) setConfigValue(c, k, v);
  return c;
}

struct GraphRun {
  std::vector<StepMetrics> steps;
  std::vector<std::string> how;  // Trainer::lastStepGraph() after each step
  std::vector<std::vector<std::uint8_t>> weights, buffers;
  std::string note;
};

// channelsLast: -1 keeps the backend's default, 0 / 1 turn channels-last off / on.
inline GraphRun run(const RunConfig& c, int n, bool graphs, int channelsLast = -1) {
  auto backend = std::make_unique<CudaBackend>(0, false);
  backend->setStepGraphs(graphs);
  if (channelsLast >= 0) backend->setChannelsLast(channelsLast == 1);
  Trainer t(c, std::move(backend));
  GraphRun r;
  while (!t.finished() && static_cast<int>(r.steps.size()) < n) {
    r.steps.push_back(t.step());
    r.how.push_back(t.lastStepGraph());
  }
  for (Parameter* p : t.model().parameters()) r.weights.push_back(t.backend().toHostBytes(p->value));
  for (const auto& [name, tensor] : t.model().buffers())
    r.buffers.push_back(t.backend().toHostBytes(*tensor));
  r.note = t.stepGraphNote();
  return r;
}

inline int count(const std::vector<std::string>& how, const std::string& what) {
  int n = 0;
  for (const auto& h : how) n += h == what;
  return n;
}

// Sums of double atomics (see the top): within 1e-12 relative; non-finite only with non-finite.
inline void expectNearOrBothNonFinite(double a, double b, const std::string& what) {
  if (!std::isfinite(a) || !std::isfinite(b)) {
    EXPECT_EQ(std::isfinite(a), std::isfinite(b)) << what << ": " << a << " vs " << b;
    return;
  }
  EXPECT_NEAR(b, a, 1e-12 * std::fabs(a)) << what;
}

inline void expectSameRun(const GraphRun& eager, const GraphRun& graph, const std::string& what) {
  EXPECT_EQ(graph.note, "") << what;
  ASSERT_EQ(eager.steps.size(), graph.steps.size()) << what;
  for (std::size_t i = 0; i < eager.steps.size(); ++i) {
    const StepMetrics &a = eager.steps[i], &b = graph.steps[i];
    const std::string at = what + " step " + std::to_string(i + 1) + " (" + graph.how[i] + ")";
    expectNearOrBothNonFinite(a.loss, b.loss, at + " loss");
    expectNearOrBothNonFinite(a.gradNorm, b.gradNorm, at + " grad norm");
    EXPECT_EQ(a.skipped, b.skipped) << at;
    EXPECT_EQ(a.scale, b.scale) << at;
    EXPECT_EQ(a.scaleAfter, b.scaleAfter) << at;
    EXPECT_EQ(a.growthTracker, b.growthTracker) << at;
    EXPECT_EQ(a.lr, b.lr) << at;
    EXPECT_EQ(a.lostUpdateFrac, b.lostUpdateFrac) << at;
    EXPECT_EQ(a.clipped, b.clipped) << at;
    EXPECT_EQ(a.firstNonFinite, b.firstNonFinite) << at;
    // An evaluation runs eagerly after the step, on the same weights, graph or not.
    EXPECT_EQ(a.testLoss.has_value(), b.testLoss.has_value()) << at << " evaluated";
    if (a.testLoss && b.testLoss) {
      expectNearOrBothNonFinite(*a.testLoss, *b.testLoss, at + " test loss");
    }
    if (a.testAcc && b.testAcc) {
      EXPECT_EQ(*a.testAcc, *b.testAcc) << at << " test accuracy";
    }
    // A replay reports the captured step's memory; the eager step of the same shapes peaks the
    // same (the graph's input tensors stand in for the batch the eager step uploads).
    EXPECT_EQ(a.memory.totalPeak, b.memory.totalPeak) << at << " peak memory";
    EXPECT_GT(b.stepMs, 0) << at;
    if (a.gemmGflops > 0) {
      EXPECT_GT(b.gemmGflops, 0) << at << ": a replay times its GEMMs";
    }
  }
  ASSERT_EQ(eager.weights.size(), graph.weights.size()) << what;
  for (std::size_t i = 0; i < eager.weights.size(); ++i)
    EXPECT_EQ(eager.weights[i], graph.weights[i]) << what << ": parameter " << i;
  for (std::size_t i = 0; i < eager.buffers.size() && i < graph.buffers.size(); ++i)
    EXPECT_EQ(eager.buffers[i], graph.buffers[i]) << what << ": buffer " << i;
}

}  // namespace amp::step_graph_test
