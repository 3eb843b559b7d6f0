// The app's file commands that need both the window and the run controller: checkpoints (save
// now, resume), experiment files (save the session, open an experiment, a run bundle or a CLI
// run folder), metrics export (CSV/JSON) and run bundles. Each command has a non-interactive
// form (throws, for tests and scripts) and an interactive one (file dialog; any error becomes a
// message box and nothing already loaded changes).
#pragma once

#include <QObject>
#include <QSet>
#include <QString>
#include <vector>

namespace amp {
struct RunRecord;
}

namespace amp::ui {
class MainWindow;
struct RunData;
}  // namespace amp::ui

namespace amp::gui {

class RunController;

// The run as the engine's file formats see it.
RunRecord runRecordFromRunData(const ui::RunData& run);

class GuiFiles : public QObject {
  Q_OBJECT

 public:
  GuiFiles(ui::MainWindow* window, RunController* controller, QObject* parent = nullptr);

  // Non-interactive: each throws std::exception with a one-line message.
  void saveExperimentFile(const QString& path) const;
  int openRuns(const QString& path);  // the number of runs added
  // The same, saying in the status bar what it opened, or why not in a message box.
  bool openRunsReporting(const QString& path);
  void exportMetrics(const QString& path) const;  // .json = JSON, else CSV; the ticked runs
  // The ticked runs as TensorBoard event files in `dir` (one sub-folder per run); the files.
  QStringList exportTensorBoard(const QString& dir) const;
  void exportRunBundle(int runId, const QString& path) const;
  // false: the run has no trainer any more (or never had one); nothing is written.
  bool saveCheckpointNow(int runId, const QString& path);
  int resumeFromCheckpoint(const QString& path);  // the new run's id

  // Interactive: a file dialog, then the above; errors in a message box.
  bool saveExperimentInteractively();  // true when it saved
  void openRunsInteractively();
  void exportMetricsInteractively();
  void exportTensorBoardInteractively();
  void exportRunBundleInteractively();
  void exportWeightsInteractively();
  void saveCheckpointInteractively();
  void resumeInteractively();

 private:
  void showError(const QString& what, const QString& message);
  // The ticked runs the charts show (not archived), as the engine's file formats see them.
  std::vector<RunRecord> shownRecords() const;
  int selectedRunId() const;

  ui::MainWindow* m_window;
  RunController* m_controller;
  QSet<int> m_warnedPeriodic;  // runs whose failing periodic checkpoint was shown once
};

}  // namespace amp::gui
