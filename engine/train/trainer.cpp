#include "engine/train/trainer.h"
#include "kernels/cpu/parallel_grain.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "engine/config/config_schema.h"
#include "engine/data/data_fingerprint.h"
#include "engine/dist/data_parallel.h"
#include "engine/train/histogram_recorder.h"
#include "engine/train/memory_estimate.h"
#include "engine/train/model_factory.h"
#include "kernels/cpu/cpu_budget.h"

namespace amp {

namespace {

ScalerConfig effectiveScaler(const RunConfig& c) {
  ScalerConfig s = c.scaler;
  s.enabled = c.scalerActive();
  // Pure fp16 has no fp32 master gradients to unscale; PyTorch refuses fp16 gradients, Apex's
  // O3 scales them anyway. That lesson needs the latter.
  if (c.mode == PrecisionMode::PureFp16) s.allowFp16Grads = true;
  return s;
}

std::string scaleEventText(ScaleEvent::Kind k) {
  switch (k) {
    case ScaleEvent::Backoff: return "backoff";
    case ScaleEvent::Growth: return "growth";
    case ScaleEvent::GrowthRejected: return "growth_rejected";
    case ScaleEvent::Clamped: return "clamped";
    case ScaleEvent::HysteresisAbsorbed: return "hysteresis";
    case ScaleEvent::Manual: return "manual";
    default: return "";
  }
}

// The backend config.backend names ("auto" takes the GPU when one is usable); a backend that
// cannot be made is a configuration error naming why.
std::unique_ptr<Backend> backendFor(const RunConfig& c) {
  try {
    return makeBackend(c.backend, BackendOptions{c.tf32, c.reducedPrecisionReduction});
  } catch (const std::runtime_error& e) {
    throw ConfigError(std::string("backend: ") + e.what());
  }
}

}  // namespace

Trainer::Trainer(RunConfig config, std::unique_ptr<Backend> backend)
    : m_config(std::move(config)) {
  if (auto e = validateRunConfig(m_config)) throw ConfigError(*e);
  if (m_config.isExternal())
    throw ConfigError(std::string(m_config.model.name == "external" ? "model.name" : "data.name") +
                      "=external: this run was recorded outside AMP Studio (the PyTorch probe or a "
                      "TensorBoard import); it can be shown and compared, not trained here");
  for (const auto& [op, policy] : m_config.autocastOverrides)
    m_autocast.policy().setPolicy(op, *parseCastPolicy(policy));
  m_be = backend ? std::move(backend) : backendFor(m_config);

  DataOptions d = m_config.data;
  if (d.seed == 0) d.seed = m_config.seed;
  d.batchSize = m_config.train.batchSize;  // the recipe's batches are the training batches
  if (m_config.model.name == "recipe_mlp") d.width = m_config.model.width;
  if (m_config.model.name == "gpt") d.sequence = m_config.model.block;  // windows of block + 1 bytes
  refuseDataThatCannotFit(d);  // before generating it: data.samples=1e10 must not fill memory
  // A generated data set's shapes are known from the config: the whole run is estimated before
  // anything is generated (model.width=30000 made 3 GB of recipe batches before being refused).
  if (auto shapes = generatedDataShapes(d)) {
    shapes->emulatedCompute = !m_be->nativeCompute(m_config.computeDtype());
    m_estimate = std::make_unique<MemoryEstimate>(estimateMemory(m_config, *shapes));
    refuseIfItCannotFit(true);
  }
  m_data = loadDataset(d);
  if (m_data.train.count == 0) throw DataError("data: the training set is empty");

  const bool cached = keepTrainingSetOnDevice();
  BatchLoaderOptions lo;
  lo.batchSize = m_config.train.batchSize;
  lo.shuffle = m_config.data.name != "synthetic";  // the recipe cycles its batches in order
  lo.seed = m_config.seed;
  lo.copyData = !cached;
  lo.augmentCrop = m_config.data.augmentCrop;  // the training set only: the test set is never augmented
  lo.augmentFlip = m_config.data.augmentFlip;
  m_loader = std::make_unique<BatchLoader>(m_data.train, lo);

  const bool cls = m_data.train.isClassification();
  std::string lossName = m_config.train.loss;
  if (lossName == "auto") lossName = cls ? "cross_entropy" : "mse";
  if (lossName == "cross_entropy" && !cls)
    throw ConfigError("train.loss: cross_entropy needs class labels; data '" + d.name +
                      "' has regression targets (use mse)");
  if (lossName == "mse" && cls)
    throw ConfigError("train.loss: mse needs regression targets; data '" + d.name +
                      "' has class labels (use cross_entropy)");
  m_loss = makeLoss(lossName);

  const std::int64_t outputs = cls ? m_data.train.numClasses : m_data.train.targetDim;
  m_estimate = std::make_unique<MemoryEstimate>(estimateMemory(
      m_config, {m_data.train.sampleShape, outputs, m_data.train.count, m_data.test.count, cls,
                 !m_be->nativeCompute(m_config.computeDtype())}));
  refuseIfItCannotFit();
  try {
    if (cached) uploadTrainingSet();
    m_model = buildModel(m_config.model, m_data.train.sampleShape, outputs);
    const bool pure = m_config.mode == PrecisionMode::PureFp16;
    m_model->initialize(*m_be, m_config.seed, pure ? DType::F16 : DType::F32,
                        m_config.usesAutocast() ? MemCategory::MasterWeights : MemCategory::Weights);
    m_optimizer = std::make_unique<Optimizer>(*m_be, m_model->parameters(), m_config.optimizer);
    if (m_config.mode == PrecisionMode::Fp8) {
      m_fp8 = std::make_unique<Fp8Context>(m_config.fp8, m_config.seed);
      m_fp8->setModel(*m_model);
    }
  } catch (const std::bad_alloc&) {
    // The estimate fitted but the allocator said no (other programs took the memory since):
    // the same one-line message, never a bare "std::bad_alloc".
    throw ConfigError(outOfMemoryMessage("while starting"));
  }
  m_scaled = std::make_unique<ScaledOptimizer>(*m_be, *m_optimizer);
  m_scaler = std::make_unique<GradScaler>(effectiveScaler(m_config));

  const std::int64_t perEpoch = std::max<std::int64_t>(
      1, m_loader->batchesPerEpoch() / m_config.train.accumulation);
  m_totalSteps = m_config.train.steps > 0 ? m_config.train.steps : perEpoch * m_config.train.epochs;
  m_schedule = std::make_unique<LrSchedule>(m_config.schedule, m_config.optimizer.lr, m_totalSteps);
  if (!m_config.train.injectParam.empty() && !injectionTarget())
    throw ConfigError("train.inject_param: the model has no parameter '" +
                      m_config.train.injectParam + "'");
}

Trainer::~Trainer() = default;

const Batch& Trainer::nextBatch() {
  if (m_batchPending) {  // already taken by planStepGraph
    m_batchPending = false;
    return m_batch;
  }
  if (!m_loader->next(m_batch)) m_loader->next(m_batch);  // epoch ended: start the next one
  return m_batch;
}

// The whole training set on the device, once, when data.device_cache asks for it ("auto": a
// backend with memory of its own, and the set takes at most a quarter of what is free there, up
// to 4 GiB). PyTorch's recipe keeps its batches on the GPU the same way; uploading each batch
// instead would put a host-to-device copy, and a wait for it, into every step.
bool Trainer::keepTrainingSetOnDevice() const {
  const std::string& mode = m_config.data.deviceCache;
  if (mode == "off") return false;
  // Augmented batches are made on the host as the loader copies each row; the device cache
  // gathers rows on the device and would train on the unaugmented images (also with "on").
  if (m_config.data.augmentCrop > 0 || m_config.data.augmentFlip) return false;
  // Token data's windows overlap (every offset of the corpus): its batches are made on the host
  // from the bytes, a few KiB per step.
  if (m_data.train.isTokenData()) return false;
  if (mode == "on") return true;
  const auto device = m_be->deviceMemory();
  if (!device) return false;  // host memory: the data is there already
  const Dataset& t = m_data.train;
  const double bytes = double(t.features.size()) * 4 + double(t.labels.size()) * 4 +
                       double(t.targets.size()) * 4;
  return bytes <= std::min(4.0 * 1024 * 1024 * 1024, 0.25 * double(device->free));
}

DType Trainer::inputDtype() const {
  // Pure fp16 feeds the model fp16 inputs (model.half(); x.half()); otherwise fp32.
  return m_config.mode == PrecisionMode::PureFp16 ? DType::F16 : DType::F32;
}

void Trainer::uploadTrainingSet() {
  // Rounded to the input dtype once, as each batch's upload would round it: the same values.
  const Dataset& t = m_data.train;
  Shape xs{t.count};
  xs.insert(xs.end(), t.sampleShape.begin(), t.sampleShape.end());
  m_deviceData.x = m_be->fromHost(t.features, xs, inputDtype(), MemCategory::Workspace);
  if (!t.labels.empty())
    m_deviceData.labels = m_be->fromHostInt(t.labels, {t.count}, MemCategory::Workspace);
  if (!t.targets.empty())
    m_deviceData.targets = m_be->fromHost(t.targets, {t.count, t.targetDim}, DType::F32,
                                          MemCategory::Workspace);
}

Tensor Trainer::uploadInput(const Batch& b) {
  // Data, not activations; token ids as int32.
  Tensor x = m_be->empty(b.xShape, b.tokens.empty() ? inputDtype() : DType::I32, MemCategory::Workspace);
  writeInput(b, x);
  return x;
}

void Trainer::writeInput(const Batch& b, Tensor& x) {
  if (m_deviceData.x.defined()) m_be->gatherRows(m_deviceData.x, b.rows, x);
  else if (!b.tokens.empty()) m_be->uploadInt(x, b.tokens);
  else m_be->uploadFloat(x, b.x);  // rounded to the input dtype as it goes
}

Tensor Trainer::uploadTarget(const Batch& b) {
  const bool cached = m_deviceData.x.defined();
  // One label per sample, or per position of token data; else a regression target per sample.
  const bool labels = cached ? m_deviceData.labels.defined() : !b.labels.empty();
  Tensor out = labels ? m_be->empty({cached ? b.size : std::int64_t(b.labels.size())}, DType::I32,
                                    MemCategory::Workspace)
                      : m_be->empty({b.size, m_data.train.targetDim}, DType::F32, MemCategory::Workspace);
  writeTarget(b, out);
  return out;
}

void Trainer::writeTarget(const Batch& b, Tensor& target) {
  if (m_deviceData.x.defined())
    m_be->gatherRows(m_deviceData.labels.defined() ? m_deviceData.labels : m_deviceData.targets,
                     b.rows, target);
  else if (!b.labels.empty()) m_be->uploadInt(target, b.labels);
  else m_be->uploadFloat(target, b.targets);
}

Parameter* Trainer::injectionTarget() {
  auto params = m_model->parameters();
  if (m_config.train.injectParam.empty()) {
    for (auto it = params.rbegin(); it != params.rend(); ++it)
      if ((*it)->value.rank() >= 2) return *it;  // the last weight
    return params.empty() ? nullptr : params.back();
  }
  for (Parameter* p : params)
    if (p->name == m_config.train.injectParam) return p;
  return nullptr;
}

const std::string& Trainer::dataFingerprint() const {
  if (m_dataFingerprint.empty()) m_dataFingerprint = amp::dataFingerprint(m_data);
  return m_dataFingerprint;
}

double Trainer::globalGradNorm() {
  double sum = 0;
  m_scaled->settleGrads();
  for (Parameter* p : m_model->parameters())
    if (p->grad.defined()) sum += m_be->sumOfSquares(p->grad);
  return std::sqrt(sum);
}

bool Trainer::weightsNonFinite() {
  for (Parameter* p : m_model->parameters())
    if (m_be->countNonFinite(p->value)) return true;
  return false;
}

// The memory this run needs against what is free where its tensors live (the device's free
// memory, else the host's MemAvailable, the data set being loaded already): refused before
// anything is allocated when it cannot fit.
void Trainer::refuseIfItCannotFit(bool includeData) {
  const auto device = m_be->deviceMemory();
  const std::optional<std::int64_t> available =
      device ? std::optional<std::int64_t>(device->free) : hostMemoryAvailable();
  if (!available) return;
  const std::int64_t needed = m_estimate->tracked() + (includeData && !device ? m_estimate->dataSet : 0);
  if (auto why = memoryRefusal(m_config, *m_estimate, needed, *available,
                               device ? m_be->name() : std::string()))
    throw ConfigError(*why);
}

std::string Trainer::outOfMemoryMessage(const std::string& when) const {
  const auto device = m_be->deviceMemory();
  const std::optional<std::int64_t> available =
      device ? std::optional<std::int64_t>(device->free) : hostMemoryAvailable();
  std::string s = "out of memory " + when + ": " + modelSettingsText(m_config.model) + " (batch " +
                  std::to_string(m_config.train.batchSize) + ", " +
                  std::string(precisionModeName(m_config.mode)) + ") needs " + m_estimate->summary();
  if (available) s += "; " + formatBytes(*available) + " available";
  return s;
}

StepMetrics Trainer::step() {
  if (finished()) throw std::logic_error("step(): the run has finished");
  try {
    return runStep();
  } catch (const std::bad_alloc&) {
    throw std::runtime_error(outOfMemoryMessage("at step " + std::to_string(m_step + 1)));
  }
}

void Trainer::joinRanks(Communicator& comm) {
  m_comm = &comm;
  if (comm.size() <= 1) return;
  // fp8: every rank makes its scales from the amax of all ranks (max), so all use the same one.
  // A max as a sum: each rank puts its amax in its own slot, the sum hands every rank all of them.
  if (m_fp8 && m_config.dist.injectRank >= 0) m_fp8->setSpikeEnabled(comm.rank() == m_config.dist.injectRank);
  if (m_fp8)
    m_fp8->setAmaxReducer([this](float amax) {
      std::vector<float> slots(static_cast<std::size_t>(m_comm->size()), 0.0f);
      slots[static_cast<std::size_t>(m_comm->rank())] = amax;
      m_comm->allReduceSum(slots, "fp8 amax");
      float m = 0;
      for (float v : slots) m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, v);
      return m;
    });
  broadcastModel(*m_be, comm, *m_model);
}

int Trainer::stepThreads() const {
  if (m_config.train.threads > 0) return m_config.train.threads;  // the user's choice wins
  // Ranks on one machine and runs training at once share its cores: each takes its part
  // instead of all of them (two ranks' OpenMP teams on 2 cores took the CPU from each other).
  return cpu::threadsPerRun(cpu::availableCpus(), ranks() * m_concurrentRuns);
}

StepMetrics Trainer::runStepAs(GraphPlan plan, std::chrono::steady_clock::time_point started) {
  const int ranks = this->ranks(), rank = this->rank();
  auto t0 = started;
  m_be->resetGemmCounters();
  m_be->memory().resetPeaks();

  StepMetrics mt;
  mt.step = m_step + 1;
  const auto& tc = m_config.train;
  // Histograms are rank 0's record (after the all-reduce, every rank's gradients are the same).
  const bool recordHist = rank == 0 && recordsHistogramsAt(mt.step);
  // The step's OpenMP threads: the user's train.threads, else the tuner's pick up to this run's
  // share. Plain CPU steps are the ones it times (not the first, which allocates and JITs, nor
  // histogram or trace steps, which do more work).
  const bool tuned = m_config.train.threads <= 0 && m_be->name() == "cpu";
  const bool timedForTuner = tuned && plan == GraphPlan::Eager && m_step >= 1 && !recordHist && !m_traceNext;
  const int share = stepThreads();
  const int threads = tuned ? m_threadTuner.next(share, timedForTuner) : share;
  omp_set_num_threads(share);        // oneDNN's GEMMs: the same count all run (their bits depend on it)
  cpu::t_loopThreadCap = threads;    // our own loops: the tuner's pick (their bits do not)
  mt.scale = m_scaler->scale();
  HistogramRecorder recorder(*m_be, mt.scale, /*measureRounding=*/!replaysInFp32());
  LayerContext ctx{*m_be, m_autocast, true, recordHist ? &recorder : nullptr,
                   m_config.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(mt.step), m_fp8.get()};
  if (m_fp8) m_fp8->beginStep(mt.step, recordHist);
  m_autocast.setTracing(m_traceNext);

  // backward(scaler.scale(loss * weight / accumulation)): the loss gradient seed, in fp32.
  const float seed = static_cast<float>(
      static_cast<float>(m_scaler->scaleLoss(tc.lossWeight)) / float(tc.accumulation));

  // The step's stats start here: the losses go into them too, read back once at the end.
  mt.lr = m_schedule->lrAt(m_schedulerSteps);
  // A graph step's batch is in m_graph's input tensors already (planStepGraph). A replay runs
  // no layer: only the AMP tail below, which hands the graph this step's scalars.
  if (plan == GraphPlan::Capture) m_be->beginStepCapture();
  if (plan == GraphPlan::Replay) m_be->beginStepReplay(seed);
  m_scaled->beginStep(mt.lr, tc.postUnscaleCheck == "skip" && mt.scale < 1.f);
  std::int64_t samples = 0, globalSamples = 0;
  if (plan == GraphPlan::Replay) {
    samples = globalSamples = nextBatch().size;
  } else {
    m_model->zeroGrad();
  }
  std::optional<Fp32Replay> replay;
  Batch shard;
  for (int micro = 0; plan != GraphPlan::Replay && micro < tc.accumulation; ++micro) {
    const Batch& global = nextBatch();
    globalSamples += global.size;
    if (ranks > 1) shard = shardBatch(global, rank, ranks);
    const Batch& b = ranks > 1 ? shard : global;
    if (b.size == 0) continue;  // a last batch with fewer rows than ranks: zeros in the all-reduce
    // This rank's mean loss weighs b.size / global.size in the global batch's mean, and the
    // all-reduce divides by the ranks: the gradient seed carries the rest (1 for equal shards).
    const float microSeed = ranks > 1 && b.size * ranks != global.size
                                ? static_cast<float>(double(seed) * double(b.size * ranks) / double(global.size))
                                : seed;
    Tensor x = plan == GraphPlan::Capture ? m_graph.x : uploadInput(b);
    Tensor target = plan == GraphPlan::Capture ? m_graph.target : uploadTarget(b);
    if (recordHist && micro == 0 && replaysInFp32()) {
      replay = replayInFp32(x, target, seed, ctx.stepSeed);
      // The replay is telemetry, not training: the step's time, GEMM rate and memory peaks
      // start after it (its tensors are freed; the batch's stay counted).
      m_be->resetGemmCounters();
      m_be->memory().resetPeaks();
      t0 = std::chrono::steady_clock::now();
    }
    {
      AutocastRegion region(m_autocast, m_config.usesAutocast(), m_config.lowDtype());
      Tensor out = m_model->forward(ctx, x);
      m_loss->forwardIntoStep(ctx, out, target);
    }
    samples += b.size;
    Tensor dout = m_loss->backward(ctx, microSeed);
    m_model->backward(ctx, dout);
  }
  mt.epoch = static_cast<int>(m_loader->epoch());
  // The gradients' deferred roundings are host state the backward sets and the AMP tail passes
  // to the backend: a replay (no backward) hands over what the captured backward set.
  if (plan == GraphPlan::Capture) {
    m_graph.gradRounds.clear();
    for (Parameter* p : m_model->parameters()) m_graph.gradRounds.push_back(p->gradRoundThrough);
  } else if (plan == GraphPlan::Replay) {
    const auto params = m_model->parameters();
    for (std::size_t i = 0; i < params.size() && i < m_graph.gradRounds.size(); ++i)
      params[i]->gradRoundThrough = m_graph.gradRounds[i];
  }

  // Fault injection: an inf in one gradient, as an fp16 overflow would leave it.
  const bool inject = injectsAt(mt.step);
  m_injectNext = false;
  // Readers of .grad before the fused passes see rounded gradients (Parameter::gradRoundThrough).
  if (inject || recordHist || ranks > 1) m_scaled->settleGrads();
  if (inject) {
    Parameter* p = injectionTarget();
    if (p && p->grad.defined()) {
      m_be->setElement(p->grad, 0, INFINITY);
      mt.injected = true;
    }
  }
  // DDP: the scaled gradients averaged over the ranks, before unscaling, so an inf on any rank
  // is on every rank and all of them find it, skip and back off together.
  if (ranks > 1) {
    const auto a0 = std::chrono::steady_clock::now();
    const auto bucket = static_cast<std::size_t>(m_config.dist.bucketMb * 1024 * 1024 / 4);
    allReduceGradients(*m_be, *m_comm, m_scaled->backwardOrder(), std::max<std::size_t>(1, bucket));
    mt.allreduceMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a0).count();
    mt.ranks = ranks;
  }
  if (recordHist)
    for (Parameter* p : m_model->parameters())
      if (p->grad.defined()) recorder.weightGrad(p->name, p->grad);

  // unscale_ explicitly (as the recipe does before clipping), [clip], step or skip, update: the
  // backend keeps found_inf, the skip decision and the new scale where the gradients live, and
  // the step's figures are read back once (PyTorch's fused AMP path; no per-parameter syncs).
  // Only unscaling by 1/scale > 1 can turn gradients the scaler found finite into inf.
  m_be->beginStepTail();
  m_scaler->unscale(*m_scaled);
  if (tc.clipNorm > 0) m_scaled->clipGradNorm(tc.clipNorm);
  m_scaler->step(*m_scaled);
  if (m_scaler->isEnabled()) {
    m_scaled->updateScale(scaleRuleOf(m_scaler->config()),
                          {m_scaler->scale(), m_scaler->growthTracker(), m_scaler->hysteresisLeft()});
  }
  m_scaler->update();
  const StepStats& st = m_scaled->stats();
  mt.loss = st.lossSum / tc.accumulation;  // the criterion's value; loss_weight scales only the gradient
  if (ranks > 1) {
    // The global batch's loss (each rank's mean weighed by its rows), and a cross-check of the
    // decision, as FSDP's sharded scaler all-reduces found_inf: every rank must have skipped, or
    // none (their gradients are the same after the all-reduce, so a split is a bug to stop for).
    std::vector<double> v{samples ? mt.loss * double(samples) : 0.0, double(samples), st.stepped ? 0.0 : 1.0,
                          mt.injected ? 1.0 : 0.0};
    m_comm->allReduceSum(v, "step loss and skip cross-check");
    mt.loss = v[1] > 0 ? v[0] / v[1] : mt.loss;
    if (v[2] != 0 && v[2] != ranks)
      throw std::logic_error("step " + std::to_string(mt.step) + ": " + std::to_string(int(v[2])) + " of " +
                             std::to_string(ranks) + " ranks skipped the optimizer step; the ranks disagree");
    mt.injected = v[3] > 0;
  }
  // The backend ran the same rule (kernels/common/scale_update.h) as the host GradScaler, whose
  // state machine stays the authority; a difference would be a bug worth stopping for.
  if (st.scaleUpdated && (st.scale.scale != m_scaler->scale() ||
                          st.scale.growthTracker != m_scaler->growthTracker() ||
                          st.scale.hysteresisLeft != m_scaler->hysteresisLeft()))
    throw std::logic_error("scale update: the backend's result (" + std::to_string(st.scale.scale) +
                           ") differs from the host GradScaler's (" +
                           std::to_string(m_scaler->scale()) + ")");
  const bool foundInf = st.unscaled && st.foundInf;
  if (foundInf && st.firstNonFinite >= 0)
    mt.firstNonFinite = m_scaled->backwardOrder()[m_scaled->unscaledIndex(st.firstNonFinite)]->name;
  mt.skipped = !st.stepped;
  // The global gradient norm comes out of a pass that read every gradient anyway: unscaling when
  // the scaler runs, else clipping, else the optimizer step.
  if (st.unscaled) mt.gradNorm = std::sqrt(st.unscaledSumOfSquares);
  else if (st.normTaken) mt.gradNorm = std::sqrt(st.normSumOfSquares);
  else mt.gradNorm = st.stepped ? std::sqrt(st.stepGradSumOfSquares) : globalGradNorm();
  mt.postUnscaleOverflow = st.unscaled && !foundInf && mt.scale < 1.f && !std::isfinite(mt.gradNorm);
  mt.clipped = st.clipped;
  // PyTorch's schedulers step every iteration, also when the scaler skipped the update.
  ++m_schedulerSteps;
  mt.schedulerStepOnSkip = mt.skipped;
  const ScaleEvent& ev = m_scaler->lastEvent();
  mt.scaleEvent = scaleEventText(ev.kind);
  mt.scaleAfter = m_scaler->scale();
  mt.growthTracker = m_scaler->growthTracker();
  const OptimizerStepStats& os = m_scaled->optimizerStats();
  mt.lostUpdateFrac = os.updated ? double(os.lost) / double(os.updated) : 0.0;
  if (recordHist) mt.histograms = recorder.take();
  if (replay) applyFp32Replay(*replay, mt.histograms);

  if (m_traceNext) {
    const char* masters = m_config.hasMasterWeights() ? "fp32 master weights" : "fp16 weights, no masters";
    m_autocast.record([&] {
      return OpTraceEntry{TracePhase::Optimizer, "scaler", "unscale_", CastPolicy::PassThrough, false,
          {m_config.mode == PrecisionMode::PureFp16 ? DType::F16 : DType::F32},
          DType::F32, DType::F32, 0, 0,
          foundInf ? "non-finite gradient found: step will be skipped" : "all gradients finite"};
    });
    m_autocast.record([&] {
      return OpTraceEntry{TracePhase::Optimizer, "optimizer", m_config.optimizer.name + "_step",
          CastPolicy::PassThrough, false, {}, DType::F32,
          m_config.hasMasterWeights() ? DType::F32 : DType::F16, 0, 0,
          mt.skipped ? std::string("skipped") : std::string("updates ") + masters};
    });
    m_lastTrace = m_autocast.takeTrace();
    m_autocast.setTracing(false);
    m_traceNext = false;
  }
  ++m_step;

  // Divergence: a non-finite loss the scaler did not absorb, or weights gone non-finite.
  if (!std::isfinite(mt.loss) || !std::isfinite(mt.gradNorm)) {
    if (!mt.skipped || weightsNonFinite()) {
      mt.diverged = true;
      mt.divergence = "step " + std::to_string(mt.step) + ": non-finite " +
                      (std::isfinite(mt.loss) ? std::string("gradients") : std::string("loss")) +
                      "; first non-finite tensor: " + diagnoseNonFinite();
    }
  }
  if (!mt.diverged) diagnoseScalerCannotRecover(mt);
  if (mt.diverged && tc.onDivergence == "stop") m_stopped = true;

  // On a GPU the step's time is the device's (CUDA events from the step's first to its last
  // queued op), as PyTorch's benchmarks time it; on the CPU, wall time.
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double secs = m_be->deviceStepSeconds().value_or(wall);
  mt.stepMs = secs * 1e3;
  if (tuned) m_threadTuner.record(threads, wall, timedForTuner);
  if (!m_be->deviceStepSeconds()) mt.threads = threads;
  mt.samplesPerS = secs > 0 ? double(ranks > 1 ? globalSamples : samples) / secs : 0.0;
  if (ranks > 1) {
    const double own = secs > 0 ? double(samples) / secs : 0.0;
    mt.rankSamplesPerS = m_comm->gatherToRoot(std::span<const double>(&own, 1), "per-rank throughput");
  }
  const GemmCounters gc = m_be->gemmCounters();
  mt.gemmGflops = gc.seconds > 0 ? gc.flops / gc.seconds / 1e9 : 0.0;
  // Memory and time are the training step's own; evaluation comes after them.
  // A replay allocates nothing: its memory is the captured step's, which it reuses.
  mt.memory = plan == GraphPlan::Replay ? m_graph.memory : m_be->memory().snapshot();
  if (m_fp8) mt.fp8 = m_fp8->takeRecords();
  if (plan == GraphPlan::Capture) m_graph.memory = mt.memory;
  m_lastStepGraph = plan == GraphPlan::Capture ? "captured" : plan == GraphPlan::Replay ? "replayed" : "eager";
  if (const auto device = m_be->deviceMemory()) {
    mt.memory.deviceTotal = device->total;
    mt.memory.deviceFree = device->free;
  }
  const bool epochDone = m_loader->position() == m_loader->batchesPerEpoch();
  mt.epochEnd = epochDone;
  const bool evalNow = tc.evalEvery > 0 ? mt.step % tc.evalEvery == 0 : epochDone;
  if (rank == 0 && hasTestSet() && !mt.diverged && (evalNow || finished())) {  // rank 0's record
    const EvalResult r = evaluate();
    mt.testLoss = r.loss;
    mt.testAcc = r.accuracy;
  }

  return mt;
}

// Our diagnosis beside the scaler (which keeps PyTorch's semantics: skip and back off). The
// scaler absorbs overflowing *gradients*; it cannot fix a *loss* that is non-finite, because the
// loss is computed before it is scaled: backing the scale off changes nothing about it, and the
// skipped steps leave the weights that produced it in place, so such a streak never ends on its
// own (lr=1e9: every step skipped, the scale halved 149 times). Nor is a scale below 2^-24 of
// any use: every fp16 gradient scaled by it would be flushed to zero.
void Trainer::diagnoseScalerCannotRecover(StepMetrics& mt) {
  constexpr int kNonFiniteLossSteps = 8;
  const float kScaleFloor = std::ldexp(1.f, -24);
  if (std::isfinite(mt.loss)) {
    m_nonFiniteLossStreak = 0;
  } else if (m_nonFiniteLossStreak++ == 0) {
    m_streakStart = mt.step;
    m_streakTensor = diagnoseNonFinite();  // once per streak: it replays a forward pass
  }
  if (m_nonFiniteLossStreak == kNonFiniteLossSteps) {
    mt.diverged = true;
    mt.divergence = "step " + std::to_string(m_streakStart) + ": non-finite loss for " +
                    std::to_string(kNonFiniteLossSteps) +
                    " steps in a row (loss scaling cannot fix a loss that is non-finite before "
                    "scaling); first non-finite tensor: " + m_streakTensor;
  } else if (m_scaler->isEnabled() && mt.scaleAfter < kScaleFloor && mt.scale >= kScaleFloor) {
    mt.diverged = true;
    mt.divergence = "step " + std::to_string(mt.step) + ": the loss scale fell to 2^" +
                    std::to_string(std::ilogb(mt.scaleAfter)) +
                    ", below 2^-24 (every fp16 gradient would flush to zero)";
    if (!mt.firstNonFinite.empty()) mt.divergence += "; first non-finite tensor: " + mt.firstNonFinite;
  }
}

TrainerProgress Trainer::progress() const {
  return {m_step, m_schedulerSteps, m_loader->state(), m_stopped};
}

void Trainer::restoreProgress(const TrainerProgress& p) {
  dropStepGraph();  // the weights and optimizer state were just replaced
  m_loader->restore(p.loader);
  m_step = p.step;
  m_schedulerSteps = p.schedulerSteps;
  m_stopped = p.stopped;
}

}  // namespace amp
