// The trainer's side of whole-step CUDA graphs (Backend::beginStepCapture): when a step may be
// recorded or replayed, the input tensors a replay's batch goes into, and the way back to eager
// steps when a graph cannot be made or used.
//
// A step is recorded only when it will look the same every time:
// - one process (no all-reduce between ranks), one micro-batch, no dropout (a new mask every
//   step), no histograms, trace or fault injection this step (they read or write mid-step);
// - the optimizer steady (every state made and stepped: no first-use launches, no allocation);
// - the batch's shape and the post-unscale gate as the graph's key, unchanged since the last
//   eager steps (kWarmSteps of them after the optimizer's first step: the caches, plans and
//   weight copies are made by then).
// Anything else runs eagerly and drops the graph; the next steady steps record a new one.
// A capture or replay that fails before anything ran (StepCaptureFailed, or any error while the
// backend still holds the step) is taken back on the host (scaler, optimizer, the batch) and run
// eagerly, and graphs stay off for the run, with the reason in stepGraphNote().
#include <algorithm>
#include <stdexcept>

#include "engine/train/trainer.h"

namespace amp {

namespace {
// Steady eager steps with the same key before a capture (the optimizer's first step, which makes
// its state, is not steady and comes before them): one, which runs as every later step will.
constexpr int kWarmSteps = 1;
}  // namespace

bool Trainer::recordsHistogramsAt(std::int64_t step) const {
  const auto& tc = m_config.train;
  return tc.histogramEvery > 0 && (step == 1 || step % tc.histogramEvery == 0);
}

bool Trainer::injectsAt(std::int64_t step) const {
  const auto& tc = m_config.train;
  return (m_injectNext || std::find(tc.injectNonFinite.begin(), tc.injectNonFinite.end(), step) !=
                              tc.injectNonFinite.end()) &&
         (m_config.dist.injectRank < 0 || m_config.dist.injectRank == rank());
}

void Trainer::dropStepGraph() {
  if (m_be->hasStepGraph() || m_be->stepGraphPending()) m_be->dropStepGraph();
  m_graph.key.clear();
  m_graph.warmSteps = 0;
  m_graph.x = m_graph.target = Tensor();
}

Trainer::GraphPlan Trainer::planStepGraph() {
  const auto& tc = m_config.train;
  const std::int64_t step = m_step + 1;
  const bool steady = ranks() == 1 && tc.accumulation == 1 && m_config.model.dropout == 0 &&
                      !m_traceNext && !injectsAt(step) &&
                      !(rank() == 0 && recordsHistogramsAt(step)) && m_optimizer->steady();
  // fp8 quantises on the host between the GEMMs: nothing a graph could replay.
  if (m_graph.off || !m_be->capturesSteps() || !steady || m_fp8) {
    dropStepGraph();
    return GraphPlan::Eager;
  }
  const Batch& b = nextBatch();
  m_batchPending = true;  // the step takes this batch
  // What the graph bakes in besides tensors the trainer keeps: the batch's shape and kind, and
  // the post-unscale gate (it depends on the scale).
  std::vector<std::int64_t> key = b.xShape;
  key.push_back(-1);
  key.push_back(static_cast<std::int64_t>(b.labels.size()));
  key.push_back(static_cast<std::int64_t>(b.targets.size()));
  key.push_back(b.tokens.empty() ? 0 : 1);
  key.push_back(tc.postUnscaleCheck == "skip" && m_scaler->scale() < 1.f);
  if (key != m_graph.key) {
    dropStepGraph();
    m_graph.key = std::move(key);
  }
  if (m_be->hasStepGraph()) {
    fillGraphInputs(b);
    return GraphPlan::Replay;
  }
  if (++m_graph.warmSteps <= kWarmSteps) return GraphPlan::Eager;
  fillGraphInputs(b);
  return GraphPlan::Capture;
}

// The batch into the tensors the graph reads: made by the first, rewritten by the others.
void Trainer::fillGraphInputs(const Batch& b) {
  if (m_graph.x.defined()) writeInput(b, m_graph.x);
  else m_graph.x = uploadInput(b);
  if (m_graph.target.defined()) writeTarget(b, m_graph.target);
  else m_graph.target = uploadTarget(b);
}

StepMetrics Trainer::runStep() {
  // The step's time starts before its batch is read and uploaded, whichever way it runs: a graph
  // step uploads in planStepGraph, an eager one in runStepAs, and both must time the same work.
  const auto started = std::chrono::steady_clock::now();
  m_be->beginStepTiming();
  const GraphPlan plan = planStepGraph();
  if (plan == GraphPlan::Eager) return runStepAs(plan, started);
  // A capture runs nothing until its readStepStats, a replay nothing until its launch: what a
  // failure before then changed lives on the host, and is put back here.
  const GradScaler scalerBefore = *m_scaler;
  const Optimizer::HostState optimizerBefore = m_optimizer->hostState();
  try {
    return runStepAs(plan, started);
  } catch (const std::exception& e) {
    const bool nothingRan =
        m_be->stepGraphPending() || dynamic_cast<const StepCaptureFailed*>(&e) != nullptr;
    dropStepGraph();
    if (!nothingRan) throw;
    *m_scaler = scalerBefore;
    m_optimizer->restoreHostState(optimizerBefore);
    // What the abandoned step saved for its backward goes now, not when the rerun replaces it
    // (the rerun's memory peak would count both).
    m_model->releaseSaved();
    m_loss->releaseSaved();
    m_graph.off = true;
    m_graph.note = std::string(plan == GraphPlan::Capture ? "capturing" : "replaying") +
                   " step " + std::to_string(m_step + 1) +
                   " as a CUDA graph failed, so this run's steps are eager from here: " + e.what();
    m_batchPending = true;  // the same batch, eagerly
    return runStepAs(GraphPlan::Eager, started);
  }
}

}  // namespace amp
