#include "ui/main_window.h"

#include <QApplication>
#include <QStyle>
#include <QCloseEvent>
#include <QDockWidget>
#include <QSignalBlocker>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QProgressBar>
#include <QScrollArea>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include "engine/backend/backend_registry.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "ui/charts/dashboard.h"
#include "ui/event_log_view.h"
#include "ui/experiment_panel.h"
#include "ui/format_inspector_view.h"
#include "ui/last_folder.h"
#include "ui/lesson_panel.h"
#include "ui/lesson_result_view.h"
#include "ui/memory_check.h"
#include "ui/runs_model.h"
#include "ui/runs_panel.h"
#include "ui/speed_control.h"
#include "ui/theme.h"
#include "ui/trace_view.h"

namespace amp::ui {

namespace {
constexpr int kTableRefreshMs = 250;  // the table's figures need not change 30 times a second

// The progress text, ending in "…" where the tool bar has less room than it needs (the run's
// name at 1280x800 was cut mid-letter at the window's edge); the tooltip has all of it.
class ElidingLabel : public QLabel {
 public:
  using QLabel::QLabel;

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    const QRect r = contentsRect();
    p.setPen(palette().color(foregroundRole()));
    p.drawText(r, Qt::AlignVCenter | Qt::AlignLeft, fontMetrics().elidedText(text(), Qt::ElideRight, r.width()));
  }
};

QString etaText(double seconds) {
  if (!(seconds >= 0) || seconds > 99 * 3600) return QStringLiteral("–");
  const int s = int(seconds + 0.5);
  const QLatin1Char zero('0');
  if (s >= 3600)
    return QStringLiteral("%1:%2:%3").arg(s / 3600).arg(s / 60 % 60, 2, 10, zero).arg(s % 60, 2, 10, zero);
  return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, zero);
}
}  // namespace

MainWindow::MainWindow(bool persistSettings, QWidget* parent)
    : QMainWindow(parent), m_persist(persistSettings) {
  setLastFolderPersistent(persistSettings);
  setWindowTitle(tr("AMP Studio"));
  setObjectName(QStringLiteral("MainWindow"));
  setDockNestingEnabled(true);
  m_actions = MainActions::create(this);
  m_actions.populateMenus(menuBar());

  // The centre: a lesson's result panel (hidden until a lesson ends) over the charts.
  auto* centre = new QWidget(this);
  m_result = new LessonResultView(centre);
  m_dashboard = new Dashboard(centre);
  auto* centreLayout = new QVBoxLayout(centre);
  centreLayout->setContentsMargins(0, 0, 0, 0);
  centreLayout->setSpacing(4);
  centreLayout->addWidget(m_result);
  centreLayout->addWidget(m_dashboard, 1);
  setCentralWidget(centre);
  centre->installEventFilter(this);  // its resizes refit the result panel
  // So do the charts' minimum sizes (another chart in front, a caption that wraps): the panel's
  // room is what they leave, and a room computed against the old minimum grew the window.
  m_dashboard->installEventFilter(this);
  connect(m_result, &LessonResultView::chartRequested, m_dashboard, &Dashboard::showChart);

  buildDocks();
  buildToolBar();
  connectActions();
  statusBar()->showMessage(tr("Ready. Pick a lesson or set up an experiment, then Start (Ctrl+R)."));
  m_tableRefresh.start();
  m_baseFont = QApplication::font();
  resize(1280, 800);
  if (m_persist) restoreSettings();
  updateControls();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildDocks() {
  m_experiment = new ExperimentPanel(this);
  m_lessons = new LessonPanel(this);
  m_runsModel = new RunsModel(this);
  m_runsPanel = new RunsPanel(m_runsModel, m_actions.twin, this);
  m_runsPanel->setFileActions({m_actions.saveCheckpoint, m_actions.resumeCheckpoint, m_actions.exportBundle});
  m_log = new EventLogView(this);
  m_trace = new TraceView(m_actions.trace, this);
  m_format = new FormatInspectorView(this);
  m_inspectorTabs = new QTabWidget(this);
  m_inspectorTabs->setDocumentMode(true);
  m_inspectorTabs->addTab(m_trace, tr("Op dtype trace"));
  m_inspectorTabs->addTab(m_format, tr("Number formats"));

  auto dock = [this](const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);  // saveState() needs names
    d->setWidget(w);
    d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                   QDockWidget::DockWidgetClosable);
    addDockWidget(area, d);
    m_actions.view->addAction(d->toggleViewAction());
    return d;
  };
  m_experimentDock = dock(tr("Experiment"), QStringLiteral("experimentDock"), m_experiment, Qt::LeftDockWidgetArea);
  m_lessonDock = dock(tr("Lessons"), QStringLiteral("lessonDock"), m_lessons, Qt::LeftDockWidgetArea);
  tabifyDockWidget(m_experimentDock, m_lessonDock);
  m_experimentDock->raise();
  m_runsDock = dock(tr("Runs"), QStringLiteral("runsDock"), m_runsPanel, Qt::BottomDockWidgetArea);
  m_logDock = dock(tr("Event log"), QStringLiteral("logDock"), m_log, Qt::BottomDockWidgetArea);
  // In a scroll area: the number inspector's table and notes would otherwise set the bottom
  // row's minimum height, and with it the window's (663 px: too tall for a 1024x640 screen).
  auto* inspectorScroll = new QScrollArea(this);
  inspectorScroll->setWidget(m_inspectorTabs);
  inspectorScroll->setWidgetResizable(true);
  inspectorScroll->setFrameShape(QFrame::NoFrame);
  m_inspectorDock = dock(tr("Inspector"), QStringLiteral("inspectorDock"), inspectorScroll, Qt::BottomDockWidgetArea);
  splitDockWidget(m_runsDock, m_logDock, Qt::Horizontal);
  // The trace has ten columns: it shares the wide slot with the runs table.
  tabifyDockWidget(m_runsDock, m_inspectorDock);
  m_runsDock->raise();
  // The bottom row spans the whole width: the runs table has many columns worth seeing at once.
  setCorner(Qt::BottomLeftCorner, Qt::BottomDockWidgetArea);
  setCorner(Qt::BottomRightCorner, Qt::BottomDockWidgetArea);
  resizeDocks({m_experimentDock}, {340}, Qt::Horizontal);
  resizeDocks({m_runsDock}, {185}, Qt::Vertical);
  resizeDocks({m_runsDock, m_logDock}, {870, 410}, Qt::Horizontal);
}

void MainWindow::buildToolBar() {
  QToolBar* bar = addToolBar(tr("Run"));
  bar->setObjectName(QStringLiteral("runToolBar"));
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->setMovable(false);
  for (QAction* a : {m_actions.start, m_actions.pause, m_actions.step, m_actions.stop}) bar->addAction(a);
  bar->addSeparator();
  for (QAction* a : {m_actions.twin, m_actions.inject}) bar->addAction(a);
  bar->addSeparator();
  m_speed = new SpeedControl(this);
  bar->addWidget(m_speed);
  bar->addSeparator();
  m_progress = new QProgressBar(this);
  m_progress->setRange(0, 1000);
  m_progress->setValue(0);
  m_progress->setTextVisible(false);
  m_progress->setFixedWidth(160);
  m_progressLabel = new ElidingLabel(tr("idle"), this);
  m_progressLabel->setMinimumWidth(200);
  m_progressLabel->setContentsMargins(8, 0, 8, 0);
  bar->addWidget(m_progress);
  bar->addWidget(m_progressLabel);
}

void MainWindow::connectActions() {
  connect(m_actions.start, &QAction::triggered, this, &MainWindow::startExperiment);
  connect(m_actions.pause, &QAction::triggered, this, [this] {
    emit pauseToggled();
    updateControls();
  });
  connect(m_actions.step, &QAction::triggered, this, [this] {
    stepOnce();
    m_inspectorDock->raise();  // a single step is for looking at: its dtype trace shows there
    m_inspectorTabs->setCurrentWidget(m_trace);
  });
  connect(m_actions.stop, &QAction::triggered, this, &MainWindow::stopRequested);
  connect(m_actions.inject, &QAction::triggered, this, [this] {
    const RunData* target = targetRun();
    if (!target) return;
    emit injectRequested(target->id);
    statusBar()->showMessage(tr("An inf goes into a gradient of %1's next step.").arg(target->name), 4000);
  });
  connect(m_actions.trace, &QAction::triggered, this, [this] {
    const RunData* target = targetRun();
    if (!target) return;
    // The inspector follows the selected run: select the traced one, so its trace is what shows
    // (an ended run selected would otherwise keep its old trace on screen).
    if (m_runsPanel->selectedRunId() != target->id) m_runsPanel->selectRun(target->id);
    emit traceRequested(target->id);
    m_inspectorDock->raise();
    m_inspectorTabs->setCurrentWidget(m_trace);
  });
  connect(m_actions.twin, &QAction::triggered, this, &MainWindow::startTwinRuns);
  connect(m_actions.quit, &QAction::triggered, this, &MainWindow::close);
  connect(m_actions.open, &QAction::triggered, this, &MainWindow::openConfigInteractively);
  connect(m_actions.save, &QAction::triggered, this, &MainWindow::saveConfigInteractively);
  connect(m_actions.exportCharts, &QAction::triggered, this, &MainWindow::exportChartsInteractively);
  // Light and dark are an exclusive group: choosing either toggles dark, once.
  connect(m_actions.dark, &QAction::toggled, this, [this](bool on) { setTheme(on); });
  connect(m_actions.togglePalette, &QAction::triggered, this,
          [this] { (m_actions.dark->isChecked() ? m_actions.light : m_actions.dark)->trigger(); });
  // Presentation steps of 1/8: 1.0, 1.125, 1.25 … 2.5 (fonts round to whole points).
  connect(m_actions.zoomIn, &QAction::triggered, this, [this] { setPresentationScale(m_presentationScale + 0.125); });
  connect(m_actions.zoomOut, &QAction::triggered, this, [this] { setPresentationScale(m_presentationScale - 0.125); });
  connect(m_actions.zoomReset, &QAction::triggered, this, [this] { setPresentationScale(1.0); });
  connect(m_actions.chartsAuto, &QAction::triggered, this, [this] { setChartLayout(ChartLayout::Automatic); });
  connect(m_actions.chartsGrid, &QAction::triggered, this, [this] { setChartLayout(ChartLayout::Grid); });
  connect(m_actions.chartsTabs, &QAction::triggered, this, [this] { setChartLayout(ChartLayout::Tabs); });
  connect(m_actions.focusView, &QAction::toggled, this, &MainWindow::setFocusView);
  connect(m_actions.nextChart, &QAction::triggered, this, [this] { m_dashboard->stepChart(1); });
  connect(m_actions.previousChart, &QAction::triggered, this, [this] { m_dashboard->stepChart(-1); });
  // Page Down / Up and Esc belong to the tables, logs and charts outside the focus view.
  m_actions.nextChart->setEnabled(false);
  m_actions.previousChart->setEnabled(false);
  m_leaveFocus = new QAction(this);
  m_leaveFocus->setShortcut(QKeySequence(Qt::Key_Escape));
  m_leaveFocus->setShortcutContext(Qt::WindowShortcut);
  m_leaveFocus->setEnabled(false);
  addAction(m_leaveFocus);
  connect(m_leaveFocus, &QAction::triggered, this, [this] { setFocusView(false); });
  connect(m_actions.shortcuts, &QAction::triggered, this, [this] {
    QMessageBox::information(this, tr("Keyboard shortcuts"), shortcutHelpHtml());
  });
  connect(m_actions.about, &QAction::triggered, this, [this] {
    QMessageBox::about(this, tr("About AMP Studio"), aboutText());
  });

  connect(m_experiment, &ExperimentPanel::validityChanged, this, &MainWindow::updateControls);
  connect(m_lessons, &LessonPanel::loadRequested, this, &MainWindow::loadLesson);
  connect(m_lessons, &LessonPanel::runRequested, this, &MainWindow::runLesson);
  connect(m_runsPanel, &RunsPanel::selectedRunChanged, this,
          [this](int id) { m_trace->showRun(m_runsModel->runAt(m_runsModel->rowOf(id))); });
  connect(m_runsPanel, &RunsPanel::maxConcurrentChanged, this, &MainWindow::maxConcurrentChanged);
  connect(m_runsPanel, &RunsPanel::stopRunRequested, this, &MainWindow::stopRunRequested);
  connect(m_runsPanel, &RunsPanel::removeRunRequested, this, &MainWindow::removeRunRequested);
  connect(m_runsPanel, &RunsPanel::loadSettingsRequested, this, [this](const RunConfig& c) {
    m_experiment->setConfig(c);
    m_experimentDock->raise();
  });
  connect(m_runsModel, &RunsModel::visibilityChanged, this, &MainWindow::chartsChanged);
  // A renamed run: legends and run pickers read the new name.
  connect(m_runsModel, &RunsModel::runRenamed, this, &MainWindow::chartsChanged);
  connect(m_runsModel, &RunsModel::archivedChanged, this, [this](int id, bool archived) {
    if (archived) dropResultOf(id);
    chartsChanged();
    updateProgress();
  });
  connect(m_runsPanel, &RunsPanel::runsArchived, this, [this](const QList<int>& ids) {
    statusBar()->showMessage((ids.size() == 1 ? tr("1 run archived") : tr("%1 runs archived").arg(ids.size())) +
                                 tr(": out of the charts, kept. “Archived” in the runs table lists them; "
                                    "“Restore selected” brings them back."),
                             10000);
  });
  // Charts: the histogram and memory panels follow the selected run; a click on a legend entry
  // ticks that run off (or on) in the runs table, which hides (shows) it in every chart.
  connect(m_runsPanel, &RunsPanel::selectedRunChanged, m_dashboard, &Dashboard::setFocusRun);
  connect(m_dashboard, &Dashboard::runVisibilityToggleRequested, this, [this](int id) {
    const int row = m_runsModel->rowOf(id);
    const RunData* run = m_runsModel->runAt(row);
    if (!run) return;
    m_runsModel->setData(m_runsModel->index(row, RunsModel::Name), run->visible ? Qt::Unchecked : Qt::Checked,
                         Qt::CheckStateRole);
  });
}

void MainWindow::setBackendInfo(const QString& description, const QString& cudaUnavailableReason) {
  m_experiment->setBackendInfo(description, cudaUnavailableReason);
  m_backendDescription = description;
  m_cudaUnavailable = cudaUnavailableReason;
}

void MainWindow::setFocusView(bool on) {
  if (on == m_focusView) return;
  m_focusView = on;
  if (on) {
    m_stateBeforeFocus = saveState();
    m_windowStateBeforeFocus = windowState();
    m_layoutBeforeFocus = m_chartLayout;
    for (QDockWidget* d : findChildren<QDockWidget*>()) d->hide();
    for (QToolBar* t : findChildren<QToolBar*>()) t->hide();
    m_dashboard->setLayoutMode(Dashboard::Layout::Tabs);
    showFullScreen();
  } else {
    setWindowState(m_windowStateBeforeFocus);
    restoreState(m_stateBeforeFocus);  // the docks and tool bar, where they were
    setChartLayout(m_layoutBeforeFocus);
  }
  for (QAction* a : {m_actions.nextChart, m_actions.previousChart, m_leaveFocus}) a->setEnabled(on);
  const QSignalBlocker block(m_actions.focusView);
  m_actions.focusView->setChecked(on);
  if (on)
    statusBar()->showMessage(tr("Focus view: Page Down / Page Up for the next / previous chart, Esc or F11 to leave"), 8000);
  else
    statusBar()->clearMessage();
}

QString MainWindow::aboutText() const {
  QString text = tr("<h3>AMP Studio %1</h3>"
                    "<p>Visual experiments with automatic mixed precision training: autocast, fp16 and "
                    "bf16, dynamic loss scaling and what they do to a real training run, side by side. "
                    "AMP semantics follow PyTorch's <tt>torch.amp</tt>.</p>")
                     .arg(QApplication::applicationVersion().toHtmlEscaped());
  if (!m_backendDescription.isEmpty())
    text += tr("<p><b>Compute on this machine:</b> %1</p>").arg(m_backendDescription.toHtmlEscaped());
  if (!m_cudaUnavailable.isEmpty())
    text += tr("<p><b>GPU:</b> %1</p>").arg(m_cudaUnavailable.toHtmlEscaped());
  text += tr("<p>Built with Qt %1 (Qt Charts), oneDNN, QuaZip and, where present, CUDA, cuBLASLt and "
             "cuDNN. <tt>ampstudio-cli</tt> runs the same experiments without a window.</p>"
             "<p>Help &gt; Keyboard shortcuts lists the keys and the charts' mouse controls.</p>")
              .arg(QString::fromLatin1(qVersion()));
  return text;
}

void MainWindow::addRun(RunData* run) {
  m_runs.append(run);
  // A run read from a file arrives ended, with its event log: show that log as it was. A run
  // this session trains arrives queued: it is unsaved until an experiment file holds it.
  if (run->status == RunStatus::Queued) m_unsaved.insert(run->id);
  else if (!run->events.isEmpty()) m_log->appendLines(run, run->events);
  m_runsModel->addRun(run);
  m_runsPanel->selectRun(run->id);
  chartsChanged();
}

void MainWindow::dropResultOf(int runId) {
  // A result whose runs left the charts no longer has its evidence on screen.
  for (const LessonResult::Finding& f : m_result->result().findings)
    if (f.runId == runId) return m_result->clearResult();
}

void MainWindow::removeRun(int runId) {
  m_runs.erase(std::remove_if(m_runs.begin(), m_runs.end(), [runId](const RunData* r) { return r->id == runId; }),
               m_runs.end());
  m_unsaved.remove(runId);
  if (m_trace->run() && m_trace->run()->id == runId) m_trace->showRun(nullptr);
  m_runsModel->removeRun(runId);
  dropResultOf(runId);
  chartsChanged();
  updateProgress();  // it may have shown how the removed run ended
}

void MainWindow::updateRunStatus(RunData* run) {
  m_runsModel->refreshRun(run);
  updateProgress();
}

void MainWindow::chartsChanged() {
  QVector<const RunData*> shown;
  for (const RunData* r : m_runs)
    if (!r->archived) shown.append(r);
  m_dashboard->setRuns(shown);  // each panel refreshes itself (or on show, when hidden)
}

const RunData* MainWindow::targetRun() const {
  const int selected = m_runsPanel->selectedRunId();
  for (const RunData* r : m_runs)
    if (r->id == selected && (r->status == RunStatus::Running || r->status == RunStatus::Paused)) return r;
  return m_state.current;
}

void MainWindow::refreshRuns() {
  m_dashboard->refresh();
  if (m_tableRefresh.elapsed() >= kTableRefreshMs) {
    m_runsModel->refresh();
    m_tableRefresh.restart();
  }
  updateProgress();
}

void MainWindow::logEvents(const RunData* run, const QStringList& lines) { m_log->appendLines(run, lines); }

void MainWindow::showTrace(const RunData* run) {
  // Follow the selected run; with none selected, the newest trace.
  const int selected = m_runsPanel->selectedRunId();
  if (selected == 0 || selected == run->id) m_trace->showRun(run);
}

void MainWindow::showRunStarted(const RunData* run) {
  if (run->computePath.isEmpty()) return;
  m_startedMessage = tr("%1 started on %2: GEMMs and convolutions in %3")
                         .arg(run->name, run->backendName, run->computePath);
  statusBar()->showMessage(m_startedMessage, 8000);
}

void MainWindow::showLessonResult(const LessonResult& result) {
  if (result.isEmpty()) return;
  // The chart first (its minimum size is part of the panel's room), then the panel's cap: a
  // panel sized without one would grow the window. And the chart again once the panel is up:
  // its height can switch the grid to tabs, which would open on the first (the loss).
  if (!result.chart.isEmpty()) m_dashboard->showChart(result.chart);
  fitResultPanel();
  m_result->showResult(result);
  if (!result.chart.isEmpty()) m_dashboard->showChart(result.chart);
  m_resultMayTakeBottomRow = true;
  fitResultPanel();  // with its text: the bottom row may give it room
}

void MainWindow::showRunError(const RunData* run, const QString& message) {
  m_experiment->showRunError(QStringLiteral("%1: %2").arg(run->name, message));
  statusBar()->showMessage(tr("%1 failed: %2").arg(run->name, message));
  m_experimentDock->raise();
}

void MainWindow::setRunState(const RunState& state) {
  m_state = state;
  if (state.active == 0 && state.queued == 0 && !m_startedMessage.isEmpty() &&
      statusBar()->currentMessage() == m_startedMessage)
    statusBar()->showMessage(tr("No run is training: every run has ended."), 8000);
  m_runsModel->refresh();
  updateControls();
  updateProgress();
}

void MainWindow::updateControls() {
  const bool valid = m_experiment->isValid();
  m_actions.start->setEnabled(valid);
  m_actions.twin->setEnabled(valid);
  m_lessons->setRunEnabled(valid);
  const bool active = m_state.active > 0;
  m_actions.pause->setEnabled(active);
  m_actions.pause->setChecked(active && !m_state.anyRunning);
  m_actions.pause->setText(active && !m_state.anyRunning ? tr("Resume") : tr("Pause"));
  m_actions.pause->setIcon(themedIcon(style(), active && !m_state.anyRunning ? QStyle::SP_MediaPlay
                                                                             : QStyle::SP_MediaPause));
  m_actions.step->setEnabled(m_state.anyPaused || (!active && m_state.queued == 0 && valid));
  m_actions.stop->setEnabled(active || m_state.queued > 0);
  m_actions.inject->setEnabled(active);
  m_actions.trace->setEnabled(active);
}

void MainWindow::updateProgress() {
  const RunData* r = m_state.current;
  if (!r) {
    // Nothing training: show how the newest run ended, so a finished session does not look idle.
    // (Not an archived or removed one: after "Archive finished" there is nothing to show.)
    const RunData* last = nullptr;
    for (const RunData* run : m_runs)
      if (!run->archived) last = run;
    if (!last || m_state.queued) {
      m_progress->setValue(0);
      m_progressLabel->setText(m_state.queued ? tr("%1 queued").arg(m_state.queued) : tr("idle"));
      return;
    }
    const qint64 done = last->series.size();
    m_progress->setValue(last->totalSteps > 0 ? int(1000 * std::min<qint64>(done, last->totalSteps) / last->totalSteps) : 0);
    // The counts first: where the tool bar is short of room (1024 wide at x1.5) the run's name is
    // what gets cut, not "600/600" (it read "600/6"); the tooltip has it all.
    m_progressLabel->setText(tr("%1/%2 · %3 %4").arg(done).arg(last->totalSteps).arg(last->name, runStatusName(last->status)));
    m_progressLabel->setToolTip(m_progressLabel->text());
    return;
  }
  const qint64 done = r->series.size();
  const qint64 total = std::max<qint64>(r->totalSteps, done);
  m_progress->setValue(total > 0 ? int(1000 * done / total) : 0);
  // ETA from the recent step times (evaluation time not included: a lower bound).
  const auto& ms = r->series.stepMs;
  const int n = std::min<int>(50, ms.size());
  double mean = 0;
  for (int i = ms.size() - n; i < ms.size(); ++i) mean += ms[i];
  mean = n ? mean / n : 0;
  QString text = tr("%1/%2").arg(done).arg(total);
  if (n) text += tr(" · ETA %1").arg(etaText((total - done) * mean / 1000.0));
  if (r->status == RunStatus::Paused) text += tr(" · paused");
  text += QStringLiteral(" · ") + r->name;
  if (m_state.active > 1) text += tr(" · %1 active").arg(m_state.active);
  if (m_state.queued) text += tr(" · %1 queued").arg(m_state.queued);
  m_progressLabel->setText(text);
  m_progressLabel->setToolTip(text);
}

void MainWindow::setTheme(bool dark) {
  applyTheme(dark ? Theme::Dark : Theme::Light);
  m_actions.retintIcons(this);
  updateControls();  // the pause/resume icon
  m_dashboard->setTheme(dark ? ChartView::Theme::Dark : ChartView::Theme::Light);
  m_result->themeChanged();
  if (m_trace->run()) m_trace->showRun(m_trace->run());  // dtype tints follow the palette
}

void MainWindow::closeEvent(QCloseEvent* event) {
  m_lastCloseChoice = confirmClose();
  if (m_lastCloseChoice == CloseChoice::Cancelled) {
    event->ignore();
    return;
  }
  if (m_persist) saveSettings();
  emit closing();  // the controller cancels every run and waits for its thread
  event->accept();
}

}  // namespace amp::ui
