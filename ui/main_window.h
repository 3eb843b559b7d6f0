// The main window: the experiment and lesson panels (left), the chart dashboard (centre), the
// runs table, event log and inspector (bottom), and the run tool bar with progress and ETA.
// It knows nothing about threads: it asks for runs through signals, and the app's RunController
// answers through the public slots (wired in app/gui_session.cpp). RunData records are owned by
// the controller; the window only reads them (and ticks RunData::visible).
#pragma once

#include <QElapsedTimer>
#include <QFont>
#include <QMainWindow>
#include <QVector>
#include <QSet>
#include <functional>

#include "engine/config/run_config.h"
#include "ui/main_actions.h"
#include "ui/run_data.h"

class QDockWidget;
class QLabel;
class QProgressBar;
class QScrollArea;
class QTabWidget;

namespace amp::ui {

class Dashboard;
class EventLogView;
class ExperimentPanel;
class FormatInspectorView;
class LessonPanel;
class LessonResultView;
struct LessonResult;
class RunsModel;
class RunsPanel;
class SpeedControl;
class TraceView;

// What the controller reports about the session's runs (for the controls and progress bar).
struct RunState {
  int active = 0;   // training or paused
  int queued = 0;
  bool anyRunning = false;
  bool anyPaused = false;
  const RunData* current = nullptr;  // the most recently started active run
};

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // persistSettings: restore and save layout, palette, last experiment and recent files
  // (off for tests and screenshots, so they start from the same state every time).
  explicit MainWindow(bool persistSettings = true, QWidget* parent = nullptr);
  ~MainWindow() override;

  ExperimentPanel* experiment() const { return m_experiment; }
  LessonPanel* lessons() const { return m_lessons; }
  RunsPanel* runsPanel() const { return m_runsPanel; }
  RunsModel* runsModel() const { return m_runsModel; }
  // Whether the event log is a tab beside the runs table (a window narrow for its scale).
  bool bottomDocksTabbed() const { return m_logTabbed; }
  // Whether the runs table, inspector and event log are tabs of the side panel (a window short
  // for its scale), leaving the charts the window's full height.
  bool bottomDocksInSidePanel() const { return m_bottomInSide; }
  EventLogView* eventLog() const { return m_log; }
  TraceView* traceView() const { return m_trace; }
  FormatInspectorView* formatInspector() const { return m_format; }
  Dashboard* dashboard() const { return m_dashboard; }
  LessonResultView* lessonResultView() const { return m_result; }
  SpeedControl* speedControl() const { return m_speed; }
  const MainActions& actions() const { return m_actions; }

  bool loadLesson(const QString& name);  // fills the experiment panel; false if unknown
  // The configs a lesson runs: the panel's settings with each variant's overrides on top.
  QVector<RunConfig> lessonConfigs(const QString& name) const;
  bool runLesson(const QString& name);  // loads it and asks for its runs
  bool openConfigFile(const QString& path);
  bool saveConfigFile(const QString& path);
  void setBackendInfo(const QString& description, const QString& cudaUnavailableReason);
  // Help > About: version, what the app is for, how it computes on this machine, what it uses.
  QString aboutText() const;

  // Presentation mode: fonts (and the charts' lines) scaled by f, 1 = normal; Ctrl+= / Ctrl+-
  // step it, Ctrl+0 resets. Kept across starts.
  void setPresentationScale(double f);
  double presentationScale() const { return m_presentationScale; }
  static constexpr double kMinPresentationScale = 0.8, kMaxPresentationScale = 2.5;

  // Where the charts go: a 3 x 2 grid, one tab each, or whichever fits (Automatic: the
  // dashboard switches to tabs once a grid cell would be too small for legible tick labels).
  enum class ChartLayout { Automatic, Grid, Tabs };
  void setChartLayout(ChartLayout layout);
  ChartLayout chartLayout() const { return m_chartLayout; }

  // Focus view (F11): the docks and tool bar hidden, one chart at a time, full screen, Page
  // Down / Page Up through the charts; off again (F11, Esc) restores the window as it was.
  void setFocusView(bool on);
  bool isFocusView() const { return m_focusView; }

  // Runs trained in this session and not yet saved in an experiment file: closing asks first.
  int unsavedRunCount() const { return int(m_unsaved.size()); }
  QList<int> unsavedRunIds() const { return m_unsaved.values(); }
  void markRunsSaved() { m_unsaved.clear(); }
  // File > Open recent: config files, and (through `opener`, the app's file handling) saved
  // experiments, run bundles and run folders; `opener` returns whether the file opened.
  void setRunsOpener(std::function<bool(const QString&)> opener) { m_runsOpener = std::move(opener); }
  void addRecentFile(const QString& path);
  QStringList recentFiles() const { return m_recentFiles; }
  // How "Save" in the close confirmation saves (a file dialog, then the experiment file); true
  // when it saved. Without one, the confirmation offers no Save.
  void setExperimentSaver(std::function<bool()> saver) { m_saveExperiment = std::move(saver); }
  // What the user chose when closing with unsaved runs (tests and the session's autosave read it).
  enum class CloseChoice { NothingToAsk, Saved, Discarded, Cancelled };
  CloseChoice lastCloseChoice() const { return m_lastCloseChoice; }

 public slots:
  void addRun(amp::ui::RunData* run);
  void removeRun(int runId);
  void updateRunStatus(amp::ui::RunData* run);
  void refreshRuns();  // new steps arrived (at most ~30 times a second)
  void logEvents(const amp::ui::RunData* run, const QStringList& lines);
  void showTrace(const amp::ui::RunData* run);
  void showRunError(const amp::ui::RunData* run, const QString& message);
  // The status bar says how the run computes on this machine (natively or emulated).
  void showRunStarted(const amp::ui::RunData* run);
  // A lesson's measured outcome in the result panel above the charts, which open on the chart
  // that shows it.
  void showLessonResult(const amp::ui::LessonResult& result);
  void setRunState(const amp::ui::RunState& state);
  void startExperiment();
  void startTwinRuns();
  void stepOnce();

 signals:
  // sideBySide: the runs train at once, whatever "Max concurrent" says (a paced lesson's
  // variants, compared as they happen); otherwise they queue.
  void startRequested(const QVector<amp::RunConfig>& configs, bool paused, bool sideBySide = false);
  void pauseToggled();
  void stepRequested();
  void stopRequested();
  // runId: the selected run when it is active, else the current run (0: none).
  void injectRequested(int runId);
  void traceRequested(int runId);
  // Emitted just before a lesson's startRequested: its runs are the next runCount runs added.
  void lessonStarted(const QString& name, int runCount);
  void stopRunRequested(int runId);
  void removeRunRequested(int runId);
  void maxConcurrentChanged(int n);
  void closing();  // the app stops every run (cancel, then wait) before the window goes

 protected:
  void closeEvent(QCloseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void buildDocks();
  void buildToolBar();
  void connectActions();
  void updateControls();
  void updateProgress();
  void setTheme(bool dark);
  // Asks for runs once the host can hold them (memory_check.h); false: refused, with the reason
  // in the experiment panel.
  bool requestRuns(const QVector<RunConfig>& configs, bool paused, const QString& lesson = {});
  void dropResultOf(int runId);  // clears the result panel when it speaks of that run
  void fitDocksToWindow();
  // In a window narrow for its presentation scale (1024 wide, or 1280 at x1.5) the event log
  // is a tab beside the runs table instead of a narrow column that wraps every line; wider,
  // beside it again. Only while both sit in the bottom row, as the window placed them.
  void arrangeBottomDocks();
  void fitToolBar();  // icons only in a window narrow for its scale
  // In a window short for its scale (1024x640, or 1280x800 at x1.5) the bottom row took half of
  // the height and left the charts slivers under the result panel: the runs table, inspector and
  // event log become tabs of the side panel instead, and go back below once there is room.
  void moveBottomDocksToSide(bool side);
  // The result panel's height: all of its text, up to kResultShare of the centre (it scrolls
  // beyond), so a small window keeps a chart on screen under it.
  void fitResultPanel();
  static constexpr double kResultShare = 0.4, kShortResultShare = 0.3;   // the bottom row grows with the window (more trace rows)
  static constexpr int kNarrowWindowPx = 1150;  // narrower (x the scale): arrangeBottomDocks tabs the log
  static constexpr int kShortWindowPx = 700;    // shorter (x the scale): the bottom row joins the side
  static constexpr int kMinBottomRowPx = 120;   // the least the bottom row gives a lesson's result
  CloseChoice confirmClose();
  void chartsChanged();  // runs added/removed/ticked
  // What inject and trace act on: the selected run if it is training, else the current run.
  const RunData* targetRun() const;
  // main_window_files.cpp: config files, recent files, QSettings.
  void openConfigInteractively();
  void saveConfigInteractively();
  void exportChartsInteractively();
  void rebuildRecentMenu();
  void openRecentFile(const QString& path);
  void restoreSettings();
  void saveSettings();

  bool m_persist;
  MainActions m_actions;
  ExperimentPanel* m_experiment = nullptr;
  LessonPanel* m_lessons = nullptr;
  RunsModel* m_runsModel = nullptr;
  RunsPanel* m_runsPanel = nullptr;
  EventLogView* m_log = nullptr;
  TraceView* m_trace = nullptr;
  FormatInspectorView* m_format = nullptr;
  QTabWidget* m_inspectorTabs = nullptr;
  Dashboard* m_dashboard = nullptr;
  LessonResultView* m_result = nullptr;
  QDockWidget* m_experimentDock = nullptr;
  QDockWidget* m_lessonDock = nullptr;
  QDockWidget* m_runsDock = nullptr;
  QDockWidget* m_logDock = nullptr;
  QDockWidget* m_inspectorDock = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_progressLabel = nullptr;
  SpeedControl* m_speed = nullptr;
  QVector<const RunData*> m_runs;
  RunState m_state;
  QElapsedTimer m_tableRefresh;
  QStringList m_recentFiles;
  QString m_loadedLesson;  // the lesson the experiment panel was last filled from
  // The status bar's last "X started on ..." text: once no run is active it would be stale, so
  // setRunState replaces it (issue 25: it outlived the runs it spoke of).
  QString m_startedMessage;
  double m_presentationScale = 1.0;
  QFont m_baseFont;  // the application font at scale 1
  ChartLayout m_chartLayout = ChartLayout::Automatic;
  QSet<int> m_unsaved;  // runs of this session not in a saved experiment file
  std::function<bool()> m_saveExperiment;
  std::function<bool(const QString&)> m_runsOpener;
  QString m_backendDescription, m_cudaUnavailable;  // setBackendInfo, for the About box
  CloseChoice m_lastCloseChoice = CloseChoice::NothingToAsk;
  bool m_focusView = false;
  QByteArray m_stateBeforeFocus;        // dock layout (saveState) to come back to
  Qt::WindowStates m_windowStateBeforeFocus;
  ChartLayout m_layoutBeforeFocus = ChartLayout::Automatic;
  QAction* m_leaveFocus = nullptr;      // Esc, only while in the focus view
  int m_fittedHeight = 0;  // window height the docks were last sized for
  bool m_logTabbed = false;  // the event log is a tab of the runs dock (arrangeBottomDocks)
  // A lesson's result just shown: the bottom row may give it room once (fitResultPanel), not
  // again when the user drags the row taller while it is on screen.
  bool m_resultMayTakeBottomRow = false;
  bool m_bottomInSide = false;  // runs, inspector and log are side-panel tabs (moveBottomDocksToSide)
};

}  // namespace amp::ui
