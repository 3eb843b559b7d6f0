// One training run: model, data, autocast, loss scaler, optimizer, schedule, on one backend.
// step() = forward under autocast -> scaled backward -> unscale -> [clip] -> step or skip ->
// update, as PyTorch's AMP recipe, and reports everything the charts show.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "engine/amp/autocast.h"
#include "engine/amp/fp8_context.h"
#include "engine/amp/grad_scaler.h"
#include "engine/backend/backend.h"
#include "engine/backend/backend_registry.h"  // makeBackend, gpuInventory
#include "engine/config/run_config.h"
#include "engine/data/batch_loader.h"
#include "engine/dist/communicator.h"
#include "engine/nn/loss.h"
#include "engine/nn/sequential.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optimizer.h"
#include "engine/train/decision_map.h"
#include "engine/train/scaled_optimizer.h"
#include "engine/train/step_metrics.h"
#include "engine/train/step_thread_tuner.h"

namespace amp {

struct MemoryEstimate;

// Counters a checkpoint must restore to continue a run exactly.
struct TrainerProgress {
  std::int64_t step = 0;
  std::int64_t schedulerSteps = 0;
  BatchLoaderState loader;
  bool stopped = false;  // diverged and stopped: a resumed run must not train on
};

class Trainer {
 public:
  // Validates the config and loads the data; throws ConfigError / DataError with one-line
  // messages, also when the run would not fit in the memory available (see memory_estimate.h). backend: nullptr = the one config.backend names (see backend_registry.h).
  explicit Trainer(RunConfig config, std::unique_ptr<Backend> backend = nullptr);
  ~Trainer();

  StepMetrics step();  // one optimizer step (config.train.accumulation micro-batches)
  bool finished() const { return m_step >= m_totalSteps || m_stopped; }
  std::int64_t stepsDone() const { return m_step; }
  std::int64_t totalSteps() const { return m_totalSteps; }
  bool diverged() const { return m_stopped; }

  EvalResult evaluate();  // test set, under autocast like PyTorch inference
  bool hasTestSet() const { return m_data.test.count > 0; }
  // The model's decision regions on a resolution x resolution grid over the training points'
  // plane (decision_map.h), evaluated like evaluate(): under autocast, no dropout. Only where
  // hasDecisionPlane(data().train); an empty map (width 0) elsewhere.
  DecisionMap decisionMap(int resolution);
  // A language model's logits for the byte after `context` (at most model.block tokens),
  // evaluated like evaluate(): under autocast, no dropout (text_sample.h generates with it).
  std::vector<float> nextTokenLogits(const std::vector<std::int32_t>& context);

  // The next step records a per-op dtype trace (forward, backward, scaler, optimizer).
  void requestTrace() { m_traceNext = true; }
  const std::vector<OpTraceEntry>& lastTrace() const { return m_lastTrace; }
  // Wall time of the latest evaluate() (a step that evaluated minus this = its training time).
  double lastEvaluationSeconds() const { return m_lastEvalSeconds; }
  // Forces a non-finite gradient in the next step ("inject overflow now").
  void injectNonFiniteNextStep() { m_injectNext = true; }

  const RunConfig& config() const { return m_config; }
  // What this run was estimated to need before it allocated anything.
  const MemoryEstimate& memoryEstimate() const { return *m_estimate; }

  // Zeros and infs in one tensor (trainer_rounding.cpp).
  struct ZeroInf {
    std::int64_t zeros = 0, infs = 0;
  };
  // Whether this run keeps its training set on the device (see data.device_cache).
  bool trainingSetOnDevice() const { return m_deviceData.x.defined(); }
  Backend& backend() { return *m_be; }
  Sequential& model() { return *m_model; }
  Fp8Context* fp8() { return m_fp8.get(); }
  Optimizer& optimizer() { return *m_optimizer; }
  GradScaler& scaler() { return *m_scaler; }
  const DataSplit& data() const { return m_data; }
  // dataFingerprint(data()), computed on first use (checkpoints store it; resume compares).
  const std::string& dataFingerprint() const;
  Shape sampleShape() const { return m_data.train.sampleShape; }
  std::vector<std::string> modelSummary() { return m_model->summary(sampleShape()); }
  std::int64_t batchesPerEpoch() const { return m_loader->batchesPerEpoch(); }

  // Makes this trainer one rank of a data-parallel run (engine/dist/data_parallel.h): rank 0's
  // weights are broadcast now; every step then trains on this rank's shard of the global batch
  // and averages the gradients over the ranks before the scaler sees them. Only rank 0 records
  // histograms and evaluates. `comm` must outlive the trainer.
  void joinRanks(Communicator& comm);
  int rank() const { return m_comm ? m_comm->rank() : 0; }
  int ranks() const { return m_comm ? m_comm->size() : 1; }
  // How many runs (this one included) train at once in this process, sharing its CPUs (the
  // app's "Max concurrent", a lesson's side-by-side variants). May change between steps.
  void setConcurrentRuns(int runs) { m_concurrentRuns = runs < 1 ? 1 : runs; }
  // The most OpenMP threads a step uses: train.threads when set, else this run's share of the
  // CPUs the process can use (kernels/cpu/cpu_budget.h), split between the ranks on this
  // machine and the runs training at once. Without train.threads a CPU step may use fewer: the
  // thread tuner times the steps on each count and keeps the fastest (step_thread_tuner.h).
  int stepThreads() const;
  const StepThreadTuner& threadTuner() const { return m_threadTuner; }
  StepThreadTuner& threadTuner() { return m_threadTuner; }

  TrainerProgress progress() const;
  // Why a saved loader state does not fit this run, or nothing (asked before anything changes).
  std::optional<std::string> loaderStateProblem(const BatchLoaderState& s) const {
    return m_loader->problemWith(s);
  }
  void restoreProgress(const TrainerProgress& p);
  // How the last step ran on a backend with step graphs ("eager", "captured", "replayed"), and
  // why graphs were turned off for this run when a capture or replay failed (empty otherwise).
  const std::string& lastStepGraph() const { return m_lastStepGraph; }
  const std::string& stepGraphNote() const { return m_graph.note; }

 private:
  // Whole-step CUDA graphs (trainer_graph.cpp): how this step runs.
  enum class GraphPlan : std::uint8_t { Eager, Capture, Replay };
  StepMetrics runStep();  // plans the step, runs it, and runs it eagerly if a graph failed
  // started: where the step's time began (runStep, before the batch is read and uploaded).
  StepMetrics runStepAs(GraphPlan plan, std::chrono::steady_clock::time_point started);
  GraphPlan planStepGraph();
  void fillGraphInputs(const Batch& b);
  void dropStepGraph();
  bool recordsHistogramsAt(std::int64_t step) const;
  bool injectsAt(std::int64_t step) const;
  // includeData: the data set is not loaded yet, so its host bytes count too.
  void refuseIfItCannotFit(bool includeData = false);
  std::string outOfMemoryMessage(const std::string& when) const;
  const Batch& nextBatch();
  bool keepTrainingSetOnDevice() const;
  void uploadTrainingSet();
  DType inputDtype() const;
  // A batch's input and target as new tensors, or written into ones of their shape (a step
  // graph's, which every replay reads).
  Tensor uploadInput(const Batch& b);
  Tensor uploadTarget(const Batch& b);
  void writeInput(const Batch& b, Tensor& x);
  void writeTarget(const Batch& b, Tensor& target);
  double globalGradNorm();
  bool weightsNonFinite();
  std::string diagnoseNonFinite();
  // Marks mt diverged where the scaler cannot recover: a persistent non-finite loss, or a scale
  // gone below 2^-24.
  void diagnoseScalerCannotRecover(StepMetrics& mt);
  Parameter* injectionTarget();
  // The flushed/inf counts of histogram steps, against an fp32 replay of the batch
  // (trainer_rounding.cpp).
  struct Fp32Replay {
    std::map<std::string, ZeroInf> weightGrads, activationGrads;
  };
  bool replaysInFp32() const;
  Fp32Replay replayInFp32(const Tensor& x, const Tensor& target, float seed, std::uint64_t stepSeed);
  void applyFp32Replay(const Fp32Replay& replay, std::vector<HistogramRecord>& records);

  RunConfig m_config;
  std::unique_ptr<MemoryEstimate> m_estimate;
  std::unique_ptr<Backend> m_be;
  DataSplit m_data;
  mutable std::string m_dataFingerprint;
  std::unique_ptr<BatchLoader> m_loader;
  std::unique_ptr<Sequential> m_model;
  std::unique_ptr<Fp8Context> m_fp8;  // amp.mode=fp8
  std::unique_ptr<Loss> m_loss;
  std::unique_ptr<Optimizer> m_optimizer;
  std::unique_ptr<ScaledOptimizer> m_scaled;
  std::unique_ptr<GradScaler> m_scaler;
  std::unique_ptr<LrSchedule> m_schedule;
  Autocast m_autocast;
  Batch m_batch;
  std::int64_t m_step = 0, m_schedulerSteps = 0, m_totalSteps = 0;
  bool m_traceNext = false, m_injectNext = false, m_stopped = false;
  std::vector<OpTraceEntry> m_lastTrace;
  // The current run of steps with a non-finite loss: its length, first step and first
  // non-finite tensor (diagnosed at that step).
  int m_nonFiniteLossStreak = 0;
  std::int64_t m_streakStart = 0;
  std::string m_streakTensor;
  double m_lastEvalSeconds = 0;
  Communicator* m_comm = nullptr;  // a data-parallel run's ranks; nullptr: one process
  int m_concurrentRuns = 1;         // runs sharing the CPUs with this one (setConcurrentRuns)
  StepThreadTuner m_threadTuner;
  // The training set on the device (data.device_cache); undefined tensors when batches are
  // uploaded from the host instead.
  struct DeviceData {
    Tensor x, labels, targets;
  } m_deviceData;
  // The next nextBatch() returns m_batch again: planStepGraph looked at it first.
  bool m_batchPending = false;
  std::string m_lastStepGraph = "eager";
  // The step graph's side (trainer_graph.cpp): the batch shape and gate it was captured for,
  // the eager steps seen with that key, the input tensors every replay's batch is copied into,
  // the captured step's memory figures (a replay allocates nothing), and why graphs stopped.
  struct StepGraphState {
    std::vector<std::int64_t> key;
    int warmSteps = 0;
    Tensor x, target;
    MemorySnapshot memory;
    std::vector<DType> gradRounds;  // each parameter's gradRoundThrough after the backward
    bool off = false;
    std::string note;
  } m_graph;
};

}  // namespace amp
