// The runs table's model: one row per run of the session with its colour, group, settings,
// status, results, the user's tags and note, and the speed-up and memory ratio against a
// baseline: by default each run's own group's fp32 run (runs of one lesson or one twin start),
// or one run the user forces for every row. A ratio against a run of another model, data set or
// batch size is shown only with a warning. The speed-up is the app's one speed figure
// (ui/speed_ratio.h): round by round for runs that trained in turns, and "~1.3× (noisy)" in the
// warning colour, with the reason in its tooltip, where the step times are too noisy to conclude.
// The tick box of a row decides whether the run is overlaid in the charts (RunData::visible).
#pragma once

#include <QAbstractTableModel>
#include <QVector>
#include <map>

#include "engine/train/speed_turns.h"
#include "ui/run_data.h"

namespace amp::ui {

class RunsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  // Settings comes last: it stretches into whatever width the figures leave.
  // EpochTime, PeakActivations, Checkpoint and WeightsFile make the seeds' table (what AMP buys):
  // with a baseline each shows its ratio to the baseline's beside the figure.
  enum Column { Name, Mode, Group, Status, Progress, FinalLoss, TestAcc, Skipped, LostUpdates, MsPerStep,
                EpochTime, PeakMemory, PeakActivations, Checkpoint, WeightsFile, SpeedUp, MemoryRatio,
                Tags, Note, Settings, ColumnCount };

  explicit RunsModel(QObject* parent = nullptr);

  void addRun(RunData* run);
  void removeRun(int id);
  RunData* runAt(int row) const;
  int rowOf(int id) const;
  const QVector<RunData*>& runs() const { return m_runs; }

  // The baseline the user forced for every row; 0 = automatic: each run's automaticBaseline()
  // (its group's fp32 run, run_groups.h).
  int baselineId() const { return m_baselineId; }
  void setBaselineId(int id);
  // The run `run`'s ratios are measured against (0 = none), and the workload keys (model.*,
  // data.*, train.batch_size) it differs from that run in: non-empty means "compare with care".
  int baselineIdFor(const RunData& run) const { return baselineOf(run).id; }
  QStringList baselineWarningFor(const RunData& run) const { return baselineOf(run).workloadKeys; }
  // Ticks or unticks a run (overlaid in the charts or not); visibilityChanged when it changed.
  void setRunVisible(int id, bool visible);
  // Archives or restores a run (RunData::archived); archivedChanged when it changed.
  void setRunArchived(int id, bool archived);
  int archivedCount() const;
  // Re-reads every run's figures (call after new steps; cheap for tens of runs).
  void refresh();
  void refreshRun(const RunData* run);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

  static QString settingsText(const RunConfig& c);
  // An imported run whose log did not record its precision (guessed from the loss scale).
  static bool precisionGuessed(const RunData& r);
  static QString modeText(const RunConfig& c);
  static QString formatBytes(double bytes);

 signals:
  void visibilityChanged(int runId, bool visible);
  void archivedChanged(int runId, bool archived);
  void baselineChanged(int runId);
  void runRenamed(int runId);  // the name column was edited

 private:
  struct Baseline {
    int id = 0;
    QStringList workloadKeys;
  };
  QVariant display(const RunData& r, const RunSummary& s, int column) const;
  QString ratioToolTip(const RunData& r, int column) const;
  // "74.5 MB · 0.50×": a size and, against a baseline that is not the run itself, its ratio.
  QString sizeWithRatio(const RunData& r, double bytes, int column) const;
  static double columnBytes(const RunData& r, const RunSummary& s, int column);
  Baseline baselineOf(const RunData& run) const;
  const RunSummary* summaryOf(int runId) const;  // nullptr without steps
  // The Speed-up column's figure for `run` against its baseline (ui/speed_ratio.h), cached
  // until the next refresh or baseline change; ratio 0 where there is none.
  const SpeedRatio& speedOf(const RunData& run) const;
  void baselinesChanged();

  QVector<RunData*> m_runs;
  std::map<int, RunSummary> m_summaries;  // cached per refresh: summary() sorts for medians
  int m_baselineId = 0;
  // Each run's baseline, found once per change (the workload check compares whole configs).
  mutable std::map<int, Baseline> m_baselines;
  mutable std::map<int, SpeedRatio> m_speeds;  // speedOf's, by run id (it sorts step times)
};

}  // namespace amp::ui
