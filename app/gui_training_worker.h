// One training run on its own thread. The thread owns the Trainer (built there, so loading a data
// set never freezes the window) and runs steps back to back; the GUI steers it only between
// steps, through a mutex and a condition variable (pause, single step, stop) and flags the worker
// applies itself (inject an overflow, trace the next step), so the Trainer is never touched from
// two threads. Metrics go through a MetricsBuffer; rare events are queued signals. Checkpoints
// are written by the worker too, between steps, for the same reason. A pace (steps per second)
// makes a demo watchable: the worker waits between steps on the same condition variable, so
// pause, stop and a new pace still take effect at once.
#pragma once

#include <QByteArray>
#include <QStringList>
#include <QThread>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "app/gui_metrics_buffer.h"
#include "engine/config/run_config.h"
#include "engine/train/decision_map.h"

namespace amp {
class StepTurns;
class Trainer;
}

namespace amp::gui {

enum class RunOutcome { Finished, Stopped, Diverged, Failed };

class TrainingWorker : public QThread {
  Q_OBJECT

 public:
  explicit TrainingWorker(RunConfig config, bool startPaused = false, QObject* parent = nullptr);
  // resumeFrom: a checkpoint loaded into the fresh Trainer before the first step.
  // checkpointDir: where `checkpoint.every`, `checkpoint.at_end` and the kept final state write
  // step-N.zip ("" = nowhere).
  void setResume(const QString& resumeFrom) { m_resumeFrom = resumeFrom; }
  void setCheckpointDir(const QString& dir) { m_checkpointDir = dir; }
  // keep: a run that trained to its end keeps its final state (step-N.zip in checkpointDir) when
  // no checkpoint of it was written: File > Export weights and Resume then work for every run
  // (the runs table showed a weights-file size for runs it refused to export).
  void setKeepFinalState(bool keep) { m_keepFinalState = keep; }
  ~TrainingWorker() override;  // cancels, then waits for the thread

  MetricsBuffer& buffer() { return m_buffer; }
  // The model's decision regions, recomputed about five times a second while it trains and once
  // at its end (decision_map.h); nullptr for data that has no 2-D plane. Thread-safe.
  std::shared_ptr<const DecisionMap> latestDecisionMap() const;
  const RunConfig& config() const { return m_config; }

  // Thread-safe; each takes effect before the next step begins.
  void pause();
  void resume();
  void stepOnce();  // while paused: exactly one more step (its dtype trace is recorded too)
  void cancel();
  void injectOverflow();
  void requestTrace();
  bool pauseRequested() const;
  // At most this many steps a second (the time between step starts); 0: as fast as it can.
  // Takes effect during the wait that is under way, so a faster pace ends it at once.
  void setStepsPerSecond(double stepsPerSecond);
  double stepsPerSecond() const;
  // How many runs train at once beside this one included: the run takes its share of the CPUs
  // (Trainer::setConcurrentRuns) from its next step on. Thread-safe.
  void setConcurrentRuns(int runs) { m_concurrentRuns.store(runs < 1 ? 1 : runs, std::memory_order_relaxed); }
  // Runs compared for speed (a lesson's variants) train in turns, a block of steps each, so the
  // load falls on all of them alike (engine/train/speed_turns.h): this run is `index` of them.
  // Set before start(). A paused run hands its turn on; single steps while paused take none.
  void setTurns(std::shared_ptr<StepTurns> turns, int index) {
    m_turns = std::move(turns);
    m_turnIndex = index;
  }
  // Writes a checkpoint to zipPath before the next step (also while paused); answered by
  // checkpointWritten. A request still pending when the run ends is served before the thread exits.
  void requestCheckpoint(const QString& zipPath);

 signals:
  // backendName: "cpu", "cuda:0"; computePath: how this run's GEMMs and convolutions compute
  // there ("bf16 emulated (...)").
  // batchesPerEpoch: the data loader's, for the charts' epoch axis (queued before any metrics).
  // Whether the run's data has a test set to evaluate on (queued before runStarted): the
  // accuracy chart says "none" instead of "not yet" for runs that will never have one.
  void testSetKnown(bool hasTestSet);
  void runStarted(qint64 totalSteps, qint64 batchesPerEpoch, const QString& backendName,
                  const QString& backendInfo, const QString& computePath,
                  const QStringList& modelSummary);
  void metricsReady();             // the buffer went from empty to non-empty
  void runPaused(qint64 stepsDone);  // the worker is waiting; every step so far is in the buffer
  void runEnded(int outcome, const QString& message);  // outcome: RunOutcome
  // The final state kept (setKeepFinalState; before modelFilesMeasured and runEnded).
  void finalStateKept(const QString& path);
  // A new latestDecisionMap() (2-D classification data only: spirals, circles, blobs).
  void decisionMapReady();
  // Just before a run that finished (or diverged) ends: the size of its checkpoint and of its
  // weights alone in the compute dtype (engine/io/model_files.h), for the runs table.
  void modelFilesMeasured(qint64 checkpointBytes, qint64 weightsBytes, const QString& weightsDtype);
  // A language model's text at the end of its run (text_sample.h: 200 bytes after a newline,
  // sampled with a fixed seed), as one printable line (printableSample), before runEnded.
  void textSampled(const QString& sample);
  // ok false: message says why. Emitted for requested and periodic checkpoints alike.
  // periodic: written by checkpoint.every rather than asked for.
  void checkpointWritten(qint64 step, const QString& path, bool ok, const QString& message,
                         bool periodic);

 protected:
  void run() override;

 private:
  // Blocks while paused; false when the run should end. Sets what the next step should do.
  bool waitForNextStep(Trainer& trainer, bool& inject, bool& trace);
  void serveCheckpointRequest(Trainer& trainer, std::unique_lock<std::mutex>& lock);
  void writeCheckpoint(Trainer& trainer, const QString& path, bool periodic);
  // Computes and publishes the decision map when due (or `force`d: the first and last step).
  void publishDecisionMap(Trainer& trainer, bool force);
  // Waits until 1/pace after `stepStarted`, or until cancelled, paused or the pace changes.
  void keepPace(std::chrono::steady_clock::time_point stepStarted);
  // dist.ranks > 1 (gui_rank_runner.cpp): the ranks run as `mpirun -np N ampstudio-cli run`
  // into a folder of the run's own, and this thread follows that folder's metrics.jsonl and
  // histograms.jsonl into the buffer as they grow, so the charts are the same as for a run
  // trained here. Stop ends the ranks; pause, single steps and injection act on runs trained
  // here only (the config's dist.inject_rank and train.inject_nonfinite do it for ranks).
  void runOnRanks();
  static QString ranksReport(const QString& out);  // the event log's line at the end
  bool cancelled() const;
  // In turns: waits for this run's turn; false when a pause or a stop came first.
  bool awaitTurn();

  const RunConfig m_config;
  MetricsBuffer m_buffer;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_paused = false;
  bool m_cancel = false;
  int m_stepBudget = 0;  // single steps granted while paused
  bool m_inject = false;
  bool m_trace = false;
  double m_stepsPerSecond = 0;  // 0: full speed
  std::atomic<int> m_concurrentRuns{1};
  std::shared_ptr<StepTurns> m_turns;  // null: this run trains whenever it can
  int m_turnIndex = 0;
  QString m_checkpointRequest;  // pending "save now" path
  QString m_resumeFrom;
  QString m_checkpointDir;
  bool m_keepFinalState = false;
  std::shared_ptr<const DecisionMap> m_decisionMap;  // under m_mutex
  std::shared_ptr<const std::vector<float>> m_planePoints;  // the training points, once
  std::shared_ptr<const std::vector<std::int32_t>> m_planeLabels;
  std::chrono::steady_clock::time_point m_lastDecisionMap{};
  std::pair<std::int64_t, QString> m_lastCheckpoint{-1, {}};  // step and path this worker wrote last
  QByteArray m_metricsJsonl;  // worker thread only: the run's metrics.jsonl, for its checkpoints
  // Set under m_mutex as run()'s very last act; the destructor takes m_mutex after wait(). wait()
  // already orders the thread's end before it returns, but through Qt's own mutex, which
  // ThreadSanitizer cannot see (Qt is not instrumented): this hand-off through ours shows it that
  // all the thread did happened before the destructor frees what the thread touched.
  bool m_runReturned = false;
  // Sets m_runReturned as run()'s last act (both of its forms): destroyed after everything else.
  struct MarkReturned {
    TrainingWorker* w;
    ~MarkReturned() {
      std::lock_guard lock(w->m_mutex);
      w->m_runReturned = true;
    }
  };
};

}  // namespace amp::gui
