#include "app/gui_run_controller.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <algorithm>

#include "app/gui_training_worker.h"
#include "engine/core/checked_file.h"
#include "engine/io/checkpoint.h"
#include "engine/io/run_record.h"  // writeFileAtomically
#include "engine/io/experiment_file.h"
#include "engine/io/metrics_json.h"
#include "engine/train/event_text.h"
#include "engine/train/speed_turns.h"
#include "ui/run_colors.h"
#include "ui/theme.h"

namespace amp::gui {

namespace {
// Redraws may take at most 1/kRedrawCostFactor of one core, so training keeps its speed with
// the window open (the goal: within 3% of the CLI). Six Qt Charts views cost 10-40 ms to update
// and repaint on this machine class, so the interval stretches from 33 ms to several hundred.
// AMP_DRAIN_DEBUG=1 prints each redraw's cost.
constexpr int kRedrawCostFactor = 25;
constexpr int kMinDrainMs = 33;  // at most ~30 redraws a second
constexpr int kMaxDrainMs = 1000;
}  // namespace

RunController::RunController(QObject* parent) : QObject(parent) {
  m_drainTimer.setSingleShot(true);
  connect(&m_drainTimer, &QTimer::timeout, this, &RunController::drainNow);
  m_sinceDrain.start();
}

RunController::~RunController() {
  shutdown();
  m_runs.clear();
  deleteUnreferencedUnpacked();  // a session's saved file embeds them: the copies can go
}

QColor RunController::colorForNewRun(const RunConfig& config) const {
  std::vector<QColor> inUse;
  for (const auto& r : m_runs) inUse.push_back(r->color);
  return ui::colorForNewRun(config, inUse);
}

ui::RunData* RunController::enqueue(RunConfig config, bool startPaused) {
  auto run = std::make_unique<ui::RunData>();
  run->id = m_nextId++;
  QString name = QString::fromStdString(config.displayName());
  for (const auto& r : m_runs)
    if (r->name == name) {
      name += QStringLiteral(" #%1").arg(run->id);
      break;
    }
  run->name = name;
  run->color = colorForNewRun(config);  // the precision's own, kept for life
  run->totalSteps = config.train.steps;  // refined when the trainer knows its epochs
  run->config = std::move(config);
  ui::RunData* raw = run.get();
  m_runs.push_back(std::move(run));
  m_queue.append(raw->id);
  if (startPaused) m_queuePaused.append(raw->id);
  emit runAdded(raw);
  scheduleQueue();
  return raw;
}

QVector<ui::RunData*> RunController::enqueueSideBySide(const QVector<RunConfig>& configs, bool startPaused) {
  const int savedMax = std::exchange(m_maxConcurrent, 0);  // none starts before all are queued
  QVector<ui::RunData*> runs;
  for (const RunConfig& c : configs) runs << enqueue(c, startPaused);
  m_maxConcurrent = savedMax;
  for (ui::RunData* r : runs) {
    m_queue.removeOne(r->id);
    startRun(r, m_queuePaused.removeOne(r->id));
  }
  return runs;
}

QVector<ui::RunData*> RunController::enqueueInTurns(const QVector<RunConfig>& configs, bool startPaused) {
  const bool ranks = std::any_of(configs.begin(), configs.end(), [](const RunConfig& c) { return c.dist.ranks > 1; });
  if (configs.size() < 2 || ranks) {
    QVector<ui::RunData*> runs;
    for (const RunConfig& c : configs) runs << enqueue(c, startPaused);
    return runs;
  }
  // One block size for all, so that their blocks pair up step for step: about 8 rounds of the
  // longest run (a run of epochs counts 25 steps a block).
  std::int64_t steps = 0;
  for (const RunConfig& c : configs) steps = std::max(steps, c.train.steps);
  const int block = steps > 0 ? StepTurns::blockStepsFor(steps) : 25;
  auto turns = std::make_shared<StepTurns>(int(configs.size()), block);
  const int savedMax = std::exchange(m_maxConcurrent, 0);  // none starts before all are queued
  QVector<ui::RunData*> runs;
  for (const RunConfig& c : configs) runs << enqueue(c, startPaused);
  m_maxConcurrent = savedMax;
  for (int i = 0; i < runs.size(); ++i) {
    ui::RunData* r = runs[i];
    m_queue.removeOne(r->id);
    m_turnBlock.insert(r->id, block);
    r->turnSet = runs.first()->id;  // the runs table pairs their step times round by round
    r->turnBlockSteps = block;
    log(r, {tr("trains in turns with the lesson's other %1 run(s), %2 step(s) each, so that their step "
               "times share the machine's load").arg(runs.size() - 1).arg(block)});
    startRun(r, m_queuePaused.removeOne(r->id), turns, i);
  }
  return runs;
}

ui::RunData* RunController::enqueueResume(const QString& checkpointPath, bool startPaused) {
  // Read everything first: a bad file must not leave a half-made run behind.
  const CheckpointInfo info = readCheckpointInfo(checkpointPath);
  const QByteArray jsonl = checkpointMetrics(checkpointPath);
  const std::vector<StepMetrics> steps = stepMetricsFromJsonLines(jsonl);
  // Queue it paused-or-not by hand so the series is filled before the worker can start.
  const int id = m_nextId;
  m_resumeFrom.insert(id, checkpointPath);
  const int savedMax = std::exchange(m_maxConcurrent, 0);  // enqueue must not start it yet
  ui::RunData* run = enqueue(info.config, startPaused);
  m_maxConcurrent = savedMax;
  for (const StepMetrics& m : steps) run->append(m);
  run->checkpointPath = checkpointPath;
  log(run, {tr("resuming from %1 at step %2").arg(checkpointPath).arg(info.step)});
  emit runsUpdated();
  scheduleQueue();
  return run;
}

ui::RunData* RunController::addLoadedRun(const ExperimentRun& loaded) {
  auto run = std::make_unique<ui::RunData>();
  run->id = m_nextId++;
  const RunRecord& r = loaded.record;
  run->loadRecord(r);
  QColor c(loaded.color);
  if (!c.isValid()) {  // a file without colours (CLI folders): as a new run of its precision
    c = colorForNewRun(run->config);
  }
  run->color = c;
  run->visible = loaded.visible;
  run->archived = loaded.archived;
  if (!loaded.checkpointZip.isEmpty()) {
    // An embedded checkpoint becomes a file, so the run can be resumed or saved again.
    const QString dir = checkpointDir(*run);
    const QString path = QDir(dir).filePath(checkpointFileName(r.steps.empty() ? 0 : r.steps.back().step));
    try {
      makeFolders(dir.toStdString());
      writeFileAtomically(path, loaded.checkpointZip);  // checked: never half a checkpoint
      run->checkpointPath = path;
      m_unpacked.insert(path);
    } catch (const OutputError& e) {
      run->events << tr("could not unpack its checkpoint: %1").arg(QString::fromStdString(e.what()));
    }
  }
  ui::RunData* raw = run.get();
  m_runs.push_back(std::move(run));
  emit runAdded(raw);
  emit runStatusChanged(raw);
  return raw;
}

bool RunController::requestCheckpoint(int id, const QString& zipPath) {
  Active* a = findActive(id);
  if (!a) return false;
  a->worker->requestCheckpoint(zipPath);
  return true;
}

QString RunController::checkpointDir(const ui::RunData& run) {
  QString base = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  if (base.isEmpty()) base = QDir::homePath() + QStringLiteral("/.local/share/ampstudio");
  QString name = run.name;
  for (QChar& ch : name)
    if (!ch.isLetterOrNumber() && ch != u'.' && ch != u'_' && ch != u'-') ch = u'_';
  return QDir(base).filePath(QStringLiteral("checkpoints/%1-%2").arg(name).arg(run.id));
}

QVector<const ui::RunData*> RunController::runs() const {
  QVector<const ui::RunData*> out;
  for (const auto& r : m_runs) out.append(r.get());
  return out;
}

ui::RunData* RunController::run(int id) const {
  for (const auto& r : m_runs)
    if (r->id == id) return r.get();
  return nullptr;
}

const ui::RunData* RunController::currentRun() const {
  return m_active.empty() ? nullptr : m_active.back().run;
}

int RunController::queuedCount() const { return m_queue.size(); }

bool RunController::anyRunning() const {
  return std::any_of(m_active.begin(), m_active.end(),
                     [](const Active& a) { return !a.worker->pauseRequested(); });
}

bool RunController::anyPaused() const {
  return std::any_of(m_active.begin(), m_active.end(),
                     [](const Active& a) { return a.worker->pauseRequested(); });
}

void RunController::setMaxConcurrent(int n) {
  m_maxConcurrent = std::max(1, n);
  scheduleQueue();
}

void RunController::shareCpus() {
  // Runs in turns train one at a time: together they count as one.
  QSet<const StepTurns*> groups;
  int training = 0;
  for (const Active& a : m_active) {
    if (!a.turns) ++training;
    else if (!groups.contains(a.turns.get())) {
      groups.insert(a.turns.get());
      ++training;
    }
  }
  for (Active& a : m_active) a.worker->setConcurrentRuns(training);
}

void RunController::scheduleQueue() {
  while (!m_queue.isEmpty() && int(m_active.size()) < m_maxConcurrent) {
    const int id = m_queue.takeFirst();
    const bool paused = m_queuePaused.removeOne(id);
    if (ui::RunData* r = run(id)) startRun(r, paused);
  }
}

void RunController::startRun(ui::RunData* run, bool paused, std::shared_ptr<StepTurns> turns, int turnIndex) {
  auto* worker = new TrainingWorker(run->config, paused, this);
  if (turns) worker->setTurns(turns, turnIndex);
  worker->setStepsPerSecond(m_stepsPerSecond);
  worker->setResume(m_resumeFrom.take(run->id));
  worker->setCheckpointDir(checkpointDir(*run));
  worker->setKeepFinalState(true);
  connect(worker, &TrainingWorker::checkpointWritten, this,
          [this, run](qint64 step, const QString& path, bool ok, const QString& message,
                      bool periodic) {
            if (ok) {
              run->checkpointPath = path;
              log(run, {tr("checkpoint after step %1: %2").arg(step).arg(path)});
            } else {
              log(run, {tr("checkpoint failed: %1").arg(message)});
            }
            emit checkpointSaved(run, path, ok, message, periodic);
          });
  connect(worker, &TrainingWorker::decisionMapReady, this,
          [run, worker] { run->decisionMap = worker->latestDecisionMap(); });
  connect(worker, &TrainingWorker::finalStateKept, this, [this, run](const QString& path) {
    run->checkpointPath = path;
    // Like an unpacked checkpoint: a saved experiment embeds it, and the copy goes with the run
    // (deleted, or the session closed).
    m_unpacked.insert(path);
  });
  connect(worker, &TrainingWorker::modelFilesMeasured, this,
          [this, run](qint64 checkpointBytes, qint64 weightsBytes, const QString& dtype) {
            run->checkpointBytes = checkpointBytes;
            run->weightsBytes = weightsBytes;
            run->weightsDtype = dtype;  // shown when runEnded, queued next, refreshes the row
          });
  connect(worker, &TrainingWorker::textSampled, this, [this, run](const QString& sample) {
    run->textSample = sample;
    log(run, {tr("wrote: %1").arg(sample)});
  });
  connect(worker, &TrainingWorker::metricsReady, this, &RunController::scheduleDrain);
  connect(worker, &TrainingWorker::testSetKnown, this, [this, worker](bool has) {
    if (Active* a = findActive(worker)) a->run->hasTestSet = has;
  });
  connect(worker, &TrainingWorker::runStarted, this,
          [this, worker](qint64 total, qint64 batchesPerEpoch, const QString& name,
                         const QString& backend, const QString& compute, const QStringList& model) {
            onRunStarted(worker, total, batchesPerEpoch, name, backend, compute, model);
          });
  connect(worker, &TrainingWorker::runPaused, this,
          [this, worker](qint64 done) { onRunPaused(worker, done); });
  connect(worker, &TrainingWorker::runEnded, this,
          [this, worker](int outcome, const QString& msg) { onRunEnded(worker, outcome, msg); });
  m_active.push_back({run, worker, false, {}, std::move(turns)});
  shareCpus();
  setStatus(run, paused ? ui::RunStatus::Paused : ui::RunStatus::Running);
  worker->start();
  emit activityChanged();
}

void RunController::shutdown() {
  m_queue.clear();
  m_queuePaused.clear();
  for (auto& a : m_active) a.worker->cancel();
  for (auto& a : m_active) a.worker->wait();
  for (auto& a : m_active) {
    // What the worker trained since the last drain (up to a second of steps) and an open streak
    // of skipped steps belong to the run: the session saved on close must hold what was shown.
    bool updated = false;
    drainRun(a, updated);
    log(a.run, a.skips.finish());
    if (a.run->status == ui::RunStatus::Running || a.run->status == ui::RunStatus::Paused)
      a.run->status = ui::RunStatus::Stopped;
    delete a.worker;
  }
  m_active.clear();
}

void RunController::scheduleDrain() {
  if (m_drainTimer.isActive()) return;
  const qint64 wait = std::max<qint64>(0, m_minDrainMs - m_sinceDrain.elapsed());
  m_drainTimer.start(int(wait));
}

void RunController::drainNow() {
  m_drainTimer.stop();
  m_drainCost.start();
  bool updated = false;
  for (auto& a : m_active) drainRun(a, updated);
  m_sinceDrain.restart();
  if (!updated) return;
  emit runsUpdated();  // the window updates its charts and table here
  // Repaints happen after this returns, as posted events; a zero timer fires once they are done,
  // so the measured cost covers the whole redraw. The next drain waits in proportion to it.
  QTimer::singleShot(0, this, [this] {
    const qint64 costMs = m_drainCost.elapsed();
    m_minDrainMs = std::clamp(int(costMs) * kRedrawCostFactor, kMinDrainMs, kMaxDrainMs);
    if (qEnvironmentVariableIsSet("AMP_DRAIN_DEBUG")) qDebug("drain+redraw %lld ms -> next in >= %d ms", costMs, m_minDrainMs);
  });
}

void RunController::drainRun(Active& a, bool& updated) {
  DrainedMetrics d = a.worker->buffer().drain();
  if (d.empty()) return;
  updated = true;
  ui::RunData* run = a.run;
  QStringList lines;
  const int growth = run->config.scaler.growthInterval;
  for (const StepMetrics& m : d.steps) {
    run->append(m);
    QStringList stepLines;
    for (const std::string& e : describeEvents(m, growth)) stepLines << QString::fromStdString(e);
    if (m.diverged && a.diverged) stepLines.removeAll(QString::fromStdString(m.divergence));  // said once
    lines << a.skips.add(m, stepLines);
    if (m.diverged && !a.diverged) {
      a.diverged = true;
      run->statusDetail = QString::fromStdString(m.divergence);
    }
  }
  if (d.trace) {
    run->trace = std::move(*d.trace);
    run->traceStep = d.traceStep;
    emit traceUpdated(run);
  }
  log(run, lines);
}

RunController::Active* RunController::findActive(const TrainingWorker* w) {
  for (auto& a : m_active)
    if (a.worker == w) return &a;
  return nullptr;
}

RunController::Active* RunController::findActive(int runId) {
  for (auto& a : m_active)
    if (a.run->id == runId) return &a;
  return nullptr;
}

void RunController::onRunStarted(TrainingWorker* w, qint64 total, qint64 batchesPerEpoch,
                                 const QString& backendName, const QString& backend,
                                 const QString& compute, const QStringList& model) {
  Active* a = findActive(w);
  if (!a) return;
  a->run->totalSteps = total;
  a->run->batchesPerEpoch = batchesPerEpoch;  // queued before the first metrics: set in time
  a->run->backendName = backendName;
  a->run->backendInfo = backend;
  a->run->computePath = compute;
  a->run->modelSummary = model;
  log(a->run, {tr("started on %1: %2 steps, %3; GEMMs and convolutions in %4")
                   .arg(backendName)
                   .arg(total)
                   .arg(QString::fromStdString(std::string(precisionModeName(a->run->config.mode))))
                   .arg(compute)});
  emit runStatusChanged(a->run);
  emit runStarted(a->run);
}

void RunController::onRunPaused(TrainingWorker* w, qint64 stepsDone) {
  Active* a = findActive(w);
  if (!a) return;
  bool updated = false;
  drainRun(*a, updated);  // the steps before the pause are in the buffer: show them all
  // A paused run is being looked at (often one step at a time): no skipped step stays hidden in
  // an open streak.
  log(a->run, a->skips.finish());
  if (updated) emit runsUpdated();
  if (w->pauseRequested()) setStatus(a->run, ui::RunStatus::Paused);
  Q_UNUSED(stepsDone);
}

void RunController::onRunEnded(TrainingWorker* w, int outcome, const QString& message) {
  auto it = std::find_if(m_active.begin(), m_active.end(),
                         [w](const Active& a) { return a.worker == w; });
  if (it == m_active.end()) return;
  bool updated = false;
  drainRun(*it, updated);  // the last steps may still be waiting in the buffer
  log(it->run, it->skips.finish());  // a streak of skips still open ends with the run
  Active a = std::move(*it);
  m_active.erase(it);
  shareCpus();
  w->wait();
  w->deleteLater();
  ui::RunData* run = a.run;
  const auto& s = run->summary.summary();
  switch (RunOutcome(outcome)) {
    case RunOutcome::Finished:
      if (a.diverged) {
        setStatus(run, ui::RunStatus::Diverged, run->statusDetail);
        log(run, {tr("finished after diverging (train.on_divergence = continue)")});
      } else {
        setStatus(run, ui::RunStatus::Finished);
        log(run, {tr("finished: %1 steps, final loss %2, %3 skipped")
                      .arg(s.steps).arg(s.finalLoss, 0, 'g', 4).arg(s.skippedSteps)});
        if (!message.isEmpty()) log(run, {message});  // e.g. a data-parallel run's ranks
      }
      break;
    case RunOutcome::Stopped:
      setStatus(run, a.diverged ? ui::RunStatus::Diverged : ui::RunStatus::Stopped,
                a.diverged ? run->statusDetail : QString());
      log(run, {tr("stopped at step %1").arg(run->series.size())});
      break;
    case RunOutcome::Diverged:
      setStatus(run, ui::RunStatus::Diverged,
                message.isEmpty() ? run->statusDetail : message);
      log(run, {tr("diverged — run stopped (train.on_divergence = stop)")});
      break;
    case RunOutcome::Failed:
      setStatus(run, ui::RunStatus::Failed, message);
      log(run, {tr("failed: %1").arg(message)});
      emit runFailed(run, message);
      break;
  }
  if (updated) emit runsUpdated();
  scheduleQueue();
  emit activityChanged();
  if (m_active.empty() && m_queue.isEmpty()) emit allRunsEnded();
}

void RunController::setStatus(ui::RunData* run, ui::RunStatus s, const QString& detail) {
  run->status = s;
  if (!detail.isEmpty()) run->statusDetail = detail;
  emit runStatusChanged(run);
}

void RunController::log(ui::RunData* run, const QStringList& lines) {
  if (lines.isEmpty()) return;
  run->events << lines;
  emit eventsLogged(run, lines);
}

void RunController::pauseAll() {
  for (auto& a : m_active) a.worker->pause();
  emit activityChanged();
}

void RunController::resumeAll() {
  for (auto& a : m_active) {
    a.worker->resume();
    setStatus(a.run, ui::RunStatus::Running);
  }
  emit activityChanged();
}

void RunController::togglePause() {
  if (anyRunning())
    pauseAll();
  else
    resumeAll();
}

void RunController::stepAll() {
  for (auto& a : m_active)
    if (a.worker->pauseRequested()) a.worker->stepOnce();
}

void RunController::stopAll() {
  for (int id : std::as_const(m_queue))
    if (ui::RunData* r = run(id)) setStatus(r, ui::RunStatus::Stopped, tr("cancelled before it started"));
  m_queue.clear();
  m_queuePaused.clear();
  for (auto& a : m_active) a.worker->cancel();
  emit activityChanged();
  if (m_active.empty()) emit allRunsEnded();
}

void RunController::stopRun(int id) {
  if (m_queue.removeOne(id)) {
    m_queuePaused.removeOne(id);
    if (ui::RunData* r = run(id)) setStatus(r, ui::RunStatus::Stopped, tr("cancelled before it started"));
    return;
  }
  if (Active* a = findActive(id)) a->worker->cancel();
}

void RunController::removeRun(int id) {
  if (findActive(id) || m_queue.contains(id)) return;  // only ended runs can go
  auto it = std::find_if(m_runs.begin(), m_runs.end(), [id](const auto& r) { return r->id == id; });
  if (it == m_runs.end()) return;
  emit runRemoved(id);  // listeners drop their pointers before the record is freed
  m_runs.erase(it);
  m_turnBlock.remove(id);
  deleteUnreferencedUnpacked();
}

void RunController::deleteUnreferencedUnpacked() {
  // A run resumed from an unpacked checkpoint refers to it (checkpointPath) until it writes its
  // own, by which time its worker has read it: a referenced copy stays.
  for (auto it = m_unpacked.begin(); it != m_unpacked.end();) {
    const QString path = *it;
    if (std::any_of(m_runs.begin(), m_runs.end(), [&](const auto& r) { return r->checkpointPath == path; })) {
      ++it;
      continue;
    }
    QFile::remove(path);
    QDir().rmdir(QFileInfo(path).absolutePath());  // only when empty: the run's folder was made for it
    it = m_unpacked.erase(it);
  }
}

RunController::Active* RunController::targetOf(int runId) {
  if (Active* a = findActive(runId)) return a;
  return m_active.empty() ? nullptr : &m_active.back();
}

void RunController::injectOverflow(int runId) {
  if (Active* a = targetOf(runId)) a->worker->injectOverflow();
}

void RunController::traceNextStep(int runId) {
  if (Active* a = targetOf(runId)) a->worker->requestTrace();
}

void RunController::setStepsPerSecond(double stepsPerSecond) {
  m_stepsPerSecond = std::max(0.0, stepsPerSecond);
  for (auto& a : m_active) a.worker->setStepsPerSecond(m_stepsPerSecond);
}

}  // namespace amp::gui
