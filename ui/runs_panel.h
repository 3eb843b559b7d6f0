// The runs table with its controls: which run is the baseline for speed-up and memory ratios,
// how many runs may train at once, "twin runs", and per-run actions in a context menu.
#pragma once

#include <QWidget>

#include "ui/run_data.h"

class QComboBox;
class QSpinBox;
class QTableView;
class QAction;

namespace amp::ui {

class RunsModel;

class RunsPanel : public QWidget {
  Q_OBJECT

 public:
  RunsPanel(RunsModel* model, QAction* twinRuns, QWidget* parent = nullptr);
  // Shown in the context menu after the per-run entries (they act on the selected run, and
  // right-clicking a row selects it first).
  void setFileActions(const QList<QAction*>& actions) { m_fileActions = actions; }

  int selectedRunId() const;  // 0 if none
  void selectRun(int id);
  void setMaxConcurrent(int n);
  int maxConcurrent() const;
  QTableView* view() const { return m_view; }

 signals:
  void selectedRunChanged(int runId);
  void maxConcurrentChanged(int n);
  void stopRunRequested(int runId);
  void removeRunRequested(int runId);
  void loadSettingsRequested(const amp::RunConfig& config);

 private:
  void updateBaselineChoices();
  void showContextMenu(const QPoint& pos);

  RunsModel* m_model;
  QTableView* m_view = nullptr;
  QComboBox* m_baseline = nullptr;
  QSpinBox* m_maxConcurrent = nullptr;
  QList<QAction*> m_fileActions;
};

}  // namespace amp::ui
