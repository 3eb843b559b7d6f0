// The runs table with its controls: which run is the baseline for speed-up and memory ratios
// (by default each run's own group's fp32 run), how many runs may train at once, "twin runs",
// a search box, and the housekeeping a session of many runs needs: several rows selected at
// once, Delete (after asking: it cannot be undone), archiving runs (set aside from the charts and
// the table, restorable: "Archive finished" and a new lesson's clean slate), hiding runs from the
// charts without removing them, selecting a whole group, tags and a note per run, and comparing
// two runs' settings. The actions live
// on the panel (findChild by object name) and in the table's context menu.
#pragma once

#include <QList>
#include <QSet>
#include <QWidget>

#include "ui/run_data.h"

class QAction;
class QComboBox;
class QLineEdit;
class QSpinBox;
class QTableView;

namespace amp::ui {

class RunsFilterProxy;
class RunsModel;

class RunsPanel : public QWidget {
  Q_OBJECT

 public:
  RunsPanel(RunsModel* model, QAction* twinRuns, QWidget* parent = nullptr);
  // Shown in the context menu after the per-run entries (they act on the selected run, and
  // right-clicking a row selects it first).
  void setFileActions(const QList<QAction*>& actions) { m_fileActions = actions; }

  int selectedRunId() const;  // the current run when selected, else the first selected; 0 if none
  QList<int> selectedRunIds() const;  // in table order (of the model, whatever the filter)
  void selectRun(int id);
  void selectRuns(const QList<int>& ids);
  void setMaxConcurrent(int n);
  int maxConcurrent() const;
  QTableView* view() const { return m_view; }

 public slots:
  // Asks first (deleting cannot be undone; archiving is offered instead), and before stopping
  // the active ones, which go once they have stopped.
  void removeSelectedRuns();
  int archiveEndedRuns();       // archives every ended run, selected or not; how many
  void archiveSelectedRuns();  // the ended ones
  void restoreSelectedRuns();
  void setShowArchived(bool show);
  void hideSelectedRuns();
  void showOnlySelectedRuns();
  void showAllRuns();
  void selectCurrentGroup();
  void compareSelectedSettings();  // exactly two selected

 signals:
  void selectedRunChanged(int runId);
  void maxConcurrentChanged(int n);
  void stopRunRequested(int runId);
  void removeRunRequested(int runId);
  void runsArchived(const QList<int>& runIds);  // by the user, from this panel
  void loadSettingsRequested(const amp::RunConfig& config);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void fitRowHeight();
  void buildActions();
  void updateActions();
  void updateBaselineChoices();
  void showContextMenu(const QPoint& pos);
  void removeStoppedPendingRuns();
  int archive(const QList<int>& ids);  // the ended ones among them; how many
  void updateArchivedButton();
  RunData* runWithId(int id) const;
  int sourceRow(int viewRow) const;

  RunsModel* m_model;
  RunsFilterProxy* m_proxy = nullptr;
  QTableView* m_view = nullptr;
  QLineEdit* m_filter = nullptr;
  QComboBox* m_baseline = nullptr;
  QSpinBox* m_maxConcurrent = nullptr;
  QList<QAction*> m_fileActions;
  QAction* m_delete = nullptr;
  QAction* m_archiveEnded = nullptr;
  QAction* m_archive = nullptr;
  QAction* m_restore = nullptr;
  QAction* m_showArchived = nullptr;
  QAction* m_hide = nullptr;
  QAction* m_showOnly = nullptr;
  QAction* m_showAll = nullptr;
  QAction* m_selectGroup = nullptr;
  QAction* m_compare = nullptr;
  QAction* m_editTags = nullptr;
  QAction* m_editNote = nullptr;
  QSet<int> m_removeWhenEnded;  // active runs the user chose to remove: stopped, then removed
};

}  // namespace amp::ui
