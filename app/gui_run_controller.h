// Every run of the session: a queue that starts at most maxConcurrent() training threads, the
// controls that act on the active runs (pause, single step, stop, inject an overflow, trace),
// and the GUI side of the metrics hand-off: a single-shot timer drains every run's buffer at
// most ~30 times a second, appends to its RunData and then announces one update, so the charts
// redraw once per batch of steps however fast the runs go.
#pragma once

#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QSet>
#include <QTimer>
#include <QVector>
#include <memory>
#include <vector>

#include "app/gui_skip_streak.h"
#include "ui/run_data.h"

namespace amp {
struct ExperimentRun;
class StepTurns;
}

namespace amp::gui {

class TrainingWorker;

class RunController : public QObject {
  Q_OBJECT

 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;  // shutdown()

  // Queues a run; it starts when a slot is free. Returns its record (owned here).
  ui::RunData* enqueue(RunConfig config, bool startPaused = false);
  // A run that resumes from a checkpoint: its series starts with the checkpoint's metrics and
  // its worker loads the checkpoint before the first step. Throws CheckpointError.
  // Queues every config and starts them all now, together, whatever maxConcurrent() says and
  // ahead of runs already queued (a paced lesson's variants). Later runs wait for free slots.
  QVector<ui::RunData*> enqueueSideBySide(const QVector<RunConfig>& configs, bool startPaused = false);
  // Runs compared for speed (a lesson's variants): queued and started now, like side by side,
  // but they train in turns, a block of steps each (engine/train/speed_turns.h), so a change of
  // load between them cannot pass for a speed difference; together they take one run's share
  // of the CPUs. Runs on several ranks (dist.ranks > 1) are not timed here: they queue as usual.
  QVector<ui::RunData*> enqueueInTurns(const QVector<RunConfig>& configs, bool startPaused = false);
  // The block of steps the run trained in turns with (its lesson's conclusion pairs the runs'
  // step times block by block); 0 for a run that trained on its own.
  int turnBlockSteps(int runId) const { return m_turnBlock.value(runId, 0); }
  ui::RunData* enqueueResume(const QString& checkpointPath, bool startPaused = false);
  // A run read from a file, added as an ended run (overlaid like any other).
  ui::RunData* addLoadedRun(const ExperimentRun& loaded);
  // Asks the run's worker to write a checkpoint between steps; false (and nothing happens) when
  // the run has no trainer (queued or ended). Answered by checkpointSaved.
  bool requestCheckpoint(int id, const QString& zipPath);
  // Where `checkpoint.every` writes a run's checkpoints.
  static QString checkpointDir(const ui::RunData& run);
  QVector<const ui::RunData*> runs() const;
  ui::RunData* run(int id) const;
  // The most recently started run that is still training (nullptr if none).
  const ui::RunData* currentRun() const;
  int activeCount() const { return int(m_active.size()); }
  int queuedCount() const;
  bool anyRunning() const;  // active and not paused
  bool anyPaused() const;

  int maxConcurrent() const { return m_maxConcurrent; }
  double stepsPerSecond() const { return m_stepsPerSecond; }
  void setMaxConcurrent(int n);

  // Cancels every run and waits for the threads: what closing the window does.
  void shutdown();
  // Forces a drain now (tests, screenshots); normally the timer does it.
  void drainNow();

 public slots:
  void pauseAll();
  void resumeAll();
  void togglePause();
  void stepAll();        // one step of every paused run
  void stopAll();        // cancels active runs and the queue
  void stopRun(int id);
  void removeRun(int id);  // forgets an ended run
  // An inf into the next step's gradients / the next step's dtype trace, of one run: runId if
  // it is active, else the current run (a demo with twin runs must keep the others clean).
  void injectOverflow(int runId);
  void traceNextStep(int runId);
  // The pace of every active run and of those started later: at most this many steps a
  // second; 0 = full speed.
  void setStepsPerSecond(double stepsPerSecond);

 signals:
  void runAdded(amp::ui::RunData* run);
  void runRemoved(int id);
  void runStatusChanged(amp::ui::RunData* run);
  void runStarted(const amp::ui::RunData* run);  // its backend and compute path are known
  void runsUpdated();  // new steps were appended to one or more runs (at most ~30/s)
  void eventsLogged(const amp::ui::RunData* run, const QStringList& lines);
  void traceUpdated(const amp::ui::RunData* run);
  void runFailed(const amp::ui::RunData* run, const QString& message);
  void activityChanged();  // a run started, ended, paused or resumed
  void allRunsEnded();     // nothing active and nothing queued
  void checkpointSaved(const amp::ui::RunData* run, const QString& path, bool ok, const QString& message,
                       bool periodic);

 private:
  // A new run's colour: its precision's, or the first free other one (ui/run_colors.h).
  QColor colorForNewRun(const RunConfig& config) const;
  struct Active {
    ui::RunData* run = nullptr;
    TrainingWorker* worker = nullptr;
    bool diverged = false;
    SkipStreak skips;  // collapses the event lines of repeated skipped steps
    std::shared_ptr<StepTurns> turns;  // the runs it takes turns with (null: none)
  };

  void scheduleQueue();
  // Tells every active run how many train at once, so together they use the CPUs the machine
  // gives instead of each taking all of them (two runs' teams on 2 cores fought for them).
  void shareCpus();
  void startRun(ui::RunData* run, bool paused, std::shared_ptr<StepTurns> turns = {}, int turnIndex = 0);
  void scheduleDrain();
  void drainRun(Active& a, bool& updated);
  Active* findActive(const TrainingWorker* w);
  Active* findActive(int runId);
  Active* targetOf(int runId);  // runId's entry if active, else the current run's
  void onRunStarted(TrainingWorker* w, qint64 total, qint64 batchesPerEpoch,
                    const QString& backendName, const QString& backend,
                    const QString& compute, const QStringList& model);
  void onRunPaused(TrainingWorker* w, qint64 stepsDone);
  void onRunEnded(TrainingWorker* w, int outcome, const QString& message);
  void setStatus(ui::RunData* run, ui::RunStatus s, const QString& detail = {});
  // Deletes the checkpoints addLoadedRun unpacked that no run refers to any more.
  void deleteUnreferencedUnpacked();
  void log(ui::RunData* run, const QStringList& lines);  // RunData::events and the event log

  std::vector<std::unique_ptr<ui::RunData>> m_runs;
  std::vector<Active> m_active;
  QVector<int> m_queue;        // run ids waiting for a slot
  QVector<int> m_queuePaused;  // of those, the ones to start paused
  QHash<int, QString> m_resumeFrom;  // run id -> checkpoint its worker loads first
  QHash<int, int> m_turnBlock;       // run id -> block of steps it trained in turns with
  // Checkpoints unpacked from opened files: copies of what the file holds, so they go when no
  // run refers to them (removed, or the session ends) instead of piling up at every open.
  QSet<QString> m_unpacked;
  int m_nextId = 1;
  int m_maxConcurrent = 1;
  double m_stepsPerSecond = 0;
  QTimer m_drainTimer;
  QElapsedTimer m_sinceDrain;
  QElapsedTimer m_drainCost;  // from a drain's start to the end of the redraw it caused
  int m_minDrainMs = 33;
};

}  // namespace amp::gui
