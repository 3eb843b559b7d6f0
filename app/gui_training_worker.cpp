#include "app/gui_training_worker.h"

#include <algorithm>
#include <exception>

#include <QDir>
#include <QFileInfo>

#include "engine/dist/rank_keys.h"
#include "engine/io/checkpoint.h"
#include "engine/io/model_files.h"
#include "engine/io/metrics_json.h"
#include "engine/train/speed_turns.h"
#include "engine/train/text_sample.h"
#include "engine/train/trainer.h"

namespace amp::gui {

TrainingWorker::TrainingWorker(RunConfig config, bool startPaused, QObject* parent)
    : QThread(parent), m_config(std::move(config)), m_paused(startPaused) {}

TrainingWorker::~TrainingWorker() {
  cancel();
  wait();
  std::lock_guard lock(m_mutex);  // after run()'s last act (m_runReturned): see the header
}

void TrainingWorker::pause() {
  {
    std::lock_guard lock(m_mutex);
    m_paused = true;
  }
  m_wake.notify_all();  // a worker waiting for its pace pauses now, not after the wait
}

void TrainingWorker::resume() {
  {
    std::lock_guard lock(m_mutex);
    m_paused = false;
    m_stepBudget = 0;
  }
  m_wake.notify_all();
}

void TrainingWorker::stepOnce() {
  {
    std::lock_guard lock(m_mutex);
    if (!m_paused) return;  // running anyway: a "single step" means nothing
    ++m_stepBudget;
  }
  m_wake.notify_all();
}

void TrainingWorker::cancel() {
  {
    std::lock_guard lock(m_mutex);
    m_cancel = true;
  }
  m_wake.notify_all();
}

void TrainingWorker::injectOverflow() {
  std::lock_guard lock(m_mutex);
  m_inject = true;
}

void TrainingWorker::requestTrace() {
  std::lock_guard lock(m_mutex);
  m_trace = true;
}

void TrainingWorker::requestCheckpoint(const QString& zipPath) {
  {
    std::lock_guard lock(m_mutex);
    m_checkpointRequest = zipPath;
  }
  m_wake.notify_all();  // a paused worker wakes, saves and goes back to waiting
}

void TrainingWorker::writeCheckpoint(Trainer& trainer, const QString& path, bool periodic) {
  try {
    saveCheckpoint(trainer, path, m_metricsJsonl);
    m_lastCheckpoint = {trainer.stepsDone(), path};
    emit checkpointWritten(trainer.stepsDone(), path, true, {}, periodic);
  } catch (const std::exception& e) {
    emit checkpointWritten(trainer.stepsDone(), path, false, QString::fromUtf8(e.what()), periodic);
  }
}

void TrainingWorker::serveCheckpointRequest(Trainer& trainer, std::unique_lock<std::mutex>& lock) {
  while (!m_checkpointRequest.isEmpty()) {
    const QString path = std::exchange(m_checkpointRequest, QString());
    lock.unlock();  // saving takes a while: the GUI must not block on the mutex meanwhile
    writeCheckpoint(trainer, path, false);
    lock.lock();
  }
}

void TrainingWorker::setStepsPerSecond(double stepsPerSecond) {
  {
    std::lock_guard lock(m_mutex);
    m_stepsPerSecond = std::max(0.0, stepsPerSecond);
  }
  m_wake.notify_all();
}

double TrainingWorker::stepsPerSecond() const {
  std::lock_guard lock(m_mutex);
  return m_stepsPerSecond;
}

void TrainingWorker::keepPace(std::chrono::steady_clock::time_point stepStarted) {
  std::unique_lock lock(m_mutex);
  for (;;) {
    // Paused: waitForNextStep waits instead (and a single step must not wait for the pace).
    if (m_cancel || m_paused || m_stepsPerSecond <= 0) return;
    const double pace = m_stepsPerSecond;
    const auto deadline =
        stepStarted + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(1.0 / pace));
    if (std::chrono::steady_clock::now() >= deadline) return;
    // Loop on a new pace: the deadline moves (earlier or later) from the same step start.
    m_wake.wait_until(lock, deadline,
                      [&] { return m_cancel || m_paused || m_stepsPerSecond != pace; });
  }
}

bool TrainingWorker::cancelled() const {
  std::lock_guard lock(m_mutex);
  return m_cancel;
}

bool TrainingWorker::awaitTurn() {
  return m_turns->waitTurn(m_turnIndex, [this] { return cancelled() || pauseRequested(); });
}

bool TrainingWorker::pauseRequested() const {
  std::lock_guard lock(m_mutex);
  return m_paused;
}

bool TrainingWorker::waitForNextStep(Trainer& trainer, bool& inject, bool& trace) {
  std::unique_lock lock(m_mutex);
  serveCheckpointRequest(trainer, lock);
  if (!m_cancel && m_paused && m_stepBudget == 0) {
    // Announce the pause outside the lock (a queued signal, but keep the critical section tiny).
    lock.unlock();
    emit runPaused(trainer.stepsDone());
    lock.lock();
    for (;;) {
      m_wake.wait(lock, [this] {
        return m_cancel || !m_paused || m_stepBudget > 0 || !m_checkpointRequest.isEmpty();
      });
      if (m_checkpointRequest.isEmpty()) break;
      serveCheckpointRequest(trainer, lock);
    }
  }
  if (m_cancel) return false;
  trace = std::exchange(m_trace, false);
  if (m_paused && m_stepBudget > 0) {
    --m_stepBudget;
    trace = true;  // a single step is for looking closely: show its per-op trace
  }
  inject = std::exchange(m_inject, false);
  return true;
}

std::shared_ptr<const DecisionMap> TrainingWorker::latestDecisionMap() const {
  std::lock_guard lock(m_mutex);
  return m_decisionMap;
}

void TrainingWorker::publishDecisionMap(Trainer& trainer, bool force) {
  const Dataset& train = trainer.data().train;
  if (!hasDecisionPlane(train)) return;
  // Five a second reads as live and costs a 64 x 64 forward pass (about a millisecond for the
  // lessons' MLPs) per 200 ms of training.
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - m_lastDecisionMap < std::chrono::milliseconds(200)) return;
  m_lastDecisionMap = now;
  if (!m_planePoints) {
    m_planePoints = std::make_shared<const std::vector<float>>(train.features);
    m_planeLabels = std::make_shared<const std::vector<std::int32_t>>(train.labels);
  }
  std::shared_ptr<DecisionMap> map;
  try {
    map = std::make_shared<DecisionMap>(trainer.decisionMap(64));
  } catch (const std::exception&) {
    return;  // a picture of the run, not the run: it trains on without it
  }
  map->points = m_planePoints;
  map->labels = m_planeLabels;
  {
    std::lock_guard lock(m_mutex);
    m_decisionMap = std::move(map);
  }
  emit decisionMapReady();
}

void TrainingWorker::run() {
  // Destroyed last, after the trainer and every signal emitted below (see m_runReturned).
  MarkReturned markReturned{this};
  // However the run ends (finished, stopped, failed before its first step), the runs it took
  // turns with go on without it.
  struct LeaveTurns {
    TrainingWorker* w;
    ~LeaveTurns() {
      if (w->m_turns) w->m_turns->leave(w->m_turnIndex);
    }
  } leaveTurns{this};
  // A rank key naming a rank this run does not have would act nowhere: an overflow lesson with
  // no overflow, silently. Refused in the CLI's words, on one rank as on several.
  if (const auto e = rankKeysError(m_config)) {
    emit runEnded(int(RunOutcome::Failed), QString::fromStdString(*e));
    return;
  }
  if (m_config.dist.ranks > 1) return runOnRanks();
  std::unique_ptr<Trainer> trainer;
  QString backendName, backendInfo, computePath;
  try {
    trainer = std::make_unique<Trainer>(m_config);
    if (!m_resumeFrom.isEmpty()) {
      loadCheckpoint(*trainer, m_resumeFrom);
      // The resumed run's checkpoints carry its whole history, not just the steps after resuming.
      m_metricsJsonl = checkpointMetrics(m_resumeFrom);
    }
    // Asking the backend what runs natively creates compute-library primitives: inside the try,
    // so a failure there marks the run failed instead of ending the app.
    const DType compute = m_config.computeDtype();
    backendName = QString::fromStdString(trainer->backend().name());
    backendInfo = QString::fromStdString(trainer->backend().description());
    computePath = QString::fromStdString(std::string(dtypeName(compute)) + " " +
                                         trainer->backend().computePath(compute));
  } catch (const std::exception& e) {
    emit runEnded(int(RunOutcome::Failed), QString::fromStdString(e.what()));
    return;
  }
  QStringList summary;
  for (const auto& line : trainer->modelSummary()) summary << QString::fromStdString(line);
  // Optimizer steps per epoch (the x axis counts steps): each takes `accumulation` batches.
  const qint64 stepsPerEpoch =
      std::max<qint64>(1, trainer->batchesPerEpoch() / std::max(1, trainer->config().train.accumulation));
  emit testSetKnown(trainer->hasTestSet());
  emit runStarted(trainer->totalSteps(), stepsPerEpoch, backendName, backendInfo,
                  computePath, summary);
  trainer->requestTrace();  // the first step's trace, so the inspector has something to show
  if (m_turns) m_turns->ready(m_turnIndex);  // the runs in turns start once all are built

  std::string divergence;
  try {
    // Kept across a wait for the turn that a pause interrupted: the overflow or trace asked for
    // belongs to the next step that trains.
    bool inject = false, trace = false;
    while (!trainer->finished()) {
      // A run that pauses hands its turn on: the others train while it waits.
      if (m_turns && pauseRequested()) m_turns->pass(m_turnIndex);
      bool injectNow = false, traceNow = false;
      if (!waitForNextStep(*trainer, injectNow, traceNow)) {
        emit runEnded(int(RunOutcome::Stopped), {});
        return;
      }
      inject |= injectNow;
      trace |= traceNow;
      // In turns, a step waits for this run's turn (a single step while paused does not: it is
      // for looking at, not for timing); a pause or stop meanwhile sends it back to wait above.
      const bool turnStep = m_turns && !pauseRequested();
      if (turnStep && !awaitTurn()) continue;
      if (inject) trainer->injectNonFiniteNextStep();
      if (trace) trainer->requestTrace();
      const bool traced = trace || trainer->stepsDone() == 0;
      trainer->setConcurrentRuns(m_concurrentRuns.load(std::memory_order_relaxed));
      const auto stepStarted = std::chrono::steady_clock::now();
      StepMetrics m = trainer->step();
      inject = trace = false;
      if (turnStep) m_turns->stepDone(m_turnIndex);
      if (m.diverged && divergence.empty()) divergence = m.divergence;
      m_metricsJsonl += stepMetricsJsonLine(m);  // metrics.jsonl holds no histograms
      const std::int64_t every = m_config.checkpoint.every;
      if (every > 0 && !m_checkpointDir.isEmpty() && trainer->stepsDone() % every == 0)
        writeCheckpoint(*trainer, QDir(m_checkpointDir).filePath(checkpointFileName(trainer->stepsDone())),
                        true);
      bool signal = false;
      if (traced) signal |= m_buffer.pushTrace(trainer->stepsDone(), trainer->lastTrace());
      signal |= m_buffer.push(std::move(m));
      if (signal) emit metricsReady();
      publishDecisionMap(*trainer, trainer->stepsDone() == 1 || trainer->finished());
      if (!trainer->finished()) keepPace(stepStarted);
    }
  } catch (const std::exception& e) {
    emit runEnded(int(RunOutcome::Failed), QString::fromStdString(e.what()));
    return;
  }
  // Trained to its end: what follows (checkpoint, file sizes, text sample) is not timed, so the
  // other runs need not wait for it.
  if (m_turns) m_turns->leave(m_turnIndex);
  {
    // A "save now" that arrived while the last step ran: the trainer still exists, serve it.
    std::unique_lock lock(m_mutex);
    serveCheckpointRequest(*trainer, lock);
  }
  // checkpoint.at_end: the final state, unless this run has just written it (checkpoint.every; a
  // file of that name from an earlier session does not count). Only a run that trained to its
  // end (a stopped run returned above).
  const bool finalWritten = m_lastCheckpoint.first == trainer->stepsDone();
  if (m_config.checkpoint.atEnd && !m_checkpointDir.isEmpty() && !finalWritten)
    writeCheckpoint(*trainer, QDir(m_checkpointDir).filePath(checkpointFileName(trainer->stepsDone())), true);
  if (m_keepFinalState && !m_checkpointDir.isEmpty() && m_lastCheckpoint.first != trainer->stepsDone()) {
    // Kept where the run's checkpoints go (the same write the size measurement below made to a
    // temporary folder before): the weights can be exported and the run resumed.
    const QString path = QDir(m_checkpointDir).filePath(checkpointFileName(trainer->stepsDone()));
    try {
      saveCheckpoint(*trainer, path, m_metricsJsonl);
      m_lastCheckpoint = {trainer->stepsDone(), path};
      emit finalStateKept(path);
    } catch (const std::exception&) {
      // A full disk, say: the run is done all the same; its sizes are measured in /tmp below.
    }
  }
  try {
    // A checkpoint of the final state is measured as it is; otherwise one is written to a
    // temporary folder (the worker's thread: the window does not wait for it).
    const QString last = m_lastCheckpoint.first == trainer->stepsDone() ? m_lastCheckpoint.second : QString();
    const ModelFileSizes f = measureModelFiles(*trainer, last, m_metricsJsonl);
    emit modelFilesMeasured(f.checkpointBytes, f.weightsBytes, QString::fromStdString(f.weightsDtype));
  } catch (const std::exception&) {
    // No temporary space, say: the run is done all the same; its sizes stay unmeasured ("-").
  }
  if (m_config.model.name == "gpt" && !trainer->diverged()) {
    try {
      const std::string sample = sampleText(*trainer);
      emit textSampled(QString::fromStdString(printableSample(sample)));
    } catch (const std::exception&) {
      // Out of memory for one more forward pass: the run is done all the same.
    }
  }
  if (trainer->diverged() || !divergence.empty())
    emit runEnded(int(RunOutcome::Diverged), QString::fromStdString(divergence));
  else
    emit runEnded(int(RunOutcome::Finished), {});
}

}  // namespace amp::gui
