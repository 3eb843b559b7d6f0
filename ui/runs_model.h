// The runs table's model: one row per run of the session with its colour, settings, status and
// results, and the speed-up and memory ratio against a chosen baseline run. The tick box of a
// row decides whether the run is overlaid in the charts (RunData::visible).
#pragma once

#include <QAbstractTableModel>
#include <QVector>
#include <map>

#include "ui/run_data.h"

namespace amp::ui {

class RunsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  // Settings comes last: it stretches into whatever width the figures leave.
  enum Column { Name, Mode, Status, Progress, FinalLoss, TestAcc, Skipped, LostUpdates, MsPerStep, PeakMemory,
                SpeedUp, MemoryRatio, Settings, ColumnCount };

  explicit RunsModel(QObject* parent = nullptr);

  void addRun(RunData* run);
  void removeRun(int id);
  RunData* runAt(int row) const;
  int rowOf(int id) const;
  const QVector<RunData*>& runs() const { return m_runs; }

  // 0 = none. By default the first fp32 run becomes the baseline when it appears.
  int baselineId() const { return m_baselineId; }
  void setBaselineId(int id);
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
  static QString modeText(const RunConfig& c);
  static QString formatBytes(double bytes);

 signals:
  void visibilityChanged(int runId, bool visible);
  void baselineChanged(int runId);

 private:
  QVariant display(const RunData& r, const RunSummary& s, int column) const;
  const RunSummary* baselineSummary() const;

  QVector<RunData*> m_runs;
  std::map<int, RunSummary> m_summaries;  // cached per refresh: summary() sorts for medians
  int m_baselineId = 0;
};

}  // namespace amp::ui
