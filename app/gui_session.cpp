#include "app/gui_session.h"

#include <QStatusBar>
#include <QStandardPaths>
#include <QFileInfo>
#include <QFile>
#include <QDir>
#include <QApplication>
#include <QBuffer>
#include <QPixmap>
#include <QSet>
#include <QTimer>
#include <algorithm>
#include <cstdio>

#include "app/gui_files.h"
#include "app/gui_lesson_tracker.h"
#include "app/gui_run_controller.h"
#include "engine/core/checked_file.h"
#include "engine/train/trainer.h"
#include "ui/event_log_view.h"
#include "ui/experiment_panel.h"
#include "ui/main_window.h"
#include "ui/memory_check.h"
#include "ui/run_groups.h"
#include "ui/runs_panel.h"
#include "ui/speed_control.h"

namespace amp::gui {

QString probeBackendDescription() {
  // The CPU backend's description, then the GPUs or why none is usable (cheap: the registry
  // probes once and creates no CUDA context on the UI thread).
  QString text;
  try {
    text = QString::fromStdString(makeBackend("cpu")->description());
  } catch (const std::exception& e) {
    text = QObject::tr("CPU backend unavailable: %1").arg(QString::fromUtf8(e.what()));
  }
  for (const std::string& line : gpuInventory().describe())
    text += QLatin1Char('\n') + QString::fromStdString(line);
  return text;
}

QString cudaUnavailableReason() {
  const GpuInventory& gpus = gpuInventory();
  return gpus.usable() ? QString() : QString::fromStdString(gpus.unavailableReason);
}

GuiSession::GuiSession(bool persistSettings, QObject* parent)
    : QObject(parent), m_controller(std::make_unique<RunController>()),
      m_window(std::make_unique<ui::MainWindow>(persistSettings)), m_persist(persistSettings) {
  ui::MainWindow* w = m_window.get();
  RunController* c = m_controller.get();
  w->setBackendInfo(probeBackendDescription(), cudaUnavailableReason());

  // The window says a lesson starts right before it asks for the lesson's runs.
  connect(w, &ui::MainWindow::lessonStarted, this, [this] { m_lessonStarting = true; });
  connect(w, &ui::MainWindow::startRequested, c, [this, c, w](const QVector<RunConfig>& configs, bool paused, bool sideBySide) {
    // Runs started together (a lesson's variants, twin runs) form one group: the group's fp32
    // run is their baseline, and the runs table selects, hides or clears them as one.
    QSet<QString> groups;
    for (const ui::RunData* r : c->runs()) groups.insert(r->group);
    const QString group = ui::groupNameFor(configs, groups);
    // A lesson's variants compare their step times (each run's line says "x fp32's speed"): they
    // train in turns, a block of steps each, so the load falls on all of them alike (issue 38).
    // Held in memory together, so only when all of them fit at once; else one after another.
    const bool lesson = std::exchange(m_lessonStarting, false);
    const bool inTurns = lesson && !sideBySide && configs.size() > 1 &&
                         ui::checkHostMemory(configs, int(configs.size())).refusal.isEmpty();
    const QVector<ui::RunData*> runs = sideBySide ? c->enqueueSideBySide(configs, paused)
                                       : inTurns  ? c->enqueueInTurns(configs, paused)
                                                  : [&] {
                                                      QVector<ui::RunData*> out;
                                                      for (const RunConfig& cfg : configs) out << c->enqueue(cfg, paused);
                                                      return out;
                                                    }();
    for (ui::RunData* run : runs) {
      run->group = group;
      if (!group.isEmpty()) w->updateRunStatus(run);  // the table shows the group set after runAdded
    }
  });
  connect(w, &ui::MainWindow::pauseToggled, c, &RunController::togglePause);
  connect(w, &ui::MainWindow::stepRequested, c, &RunController::stepAll);
  connect(w, &ui::MainWindow::stopRequested, c, &RunController::stopAll);
  connect(w, &ui::MainWindow::injectRequested, c, &RunController::injectOverflow);
  connect(w, &ui::MainWindow::traceRequested, c, &RunController::traceNextStep);
  connect(w, &ui::MainWindow::stopRunRequested, c, &RunController::stopRun);
  connect(w, &ui::MainWindow::removeRunRequested, c, &RunController::removeRun);
  connect(w, &ui::MainWindow::maxConcurrentChanged, c, &RunController::setMaxConcurrent);
  connect(w->speedControl(), &ui::SpeedControl::stepsPerSecondChanged, c, &RunController::setStepsPerSecond);
  connect(w, &ui::MainWindow::closing, c, &RunController::shutdown);

  connect(c, &RunController::runAdded, w, &ui::MainWindow::addRun);
  connect(c, &RunController::runRemoved, w, &ui::MainWindow::removeRun);
  connect(c, &RunController::runStatusChanged, w, &ui::MainWindow::updateRunStatus);
  connect(c, &RunController::runsUpdated, w, &ui::MainWindow::refreshRuns);
  connect(c, &RunController::eventsLogged, w, &ui::MainWindow::logEvents);
  connect(c, &RunController::traceUpdated, w, &ui::MainWindow::showTrace);
  connect(c, &RunController::runFailed, w, &ui::MainWindow::showRunError);
  connect(c, &RunController::runStarted, w, &ui::MainWindow::showRunStarted);
  connect(c, &RunController::activityChanged, this, &GuiSession::publishState);
  connect(c, &RunController::runStatusChanged, this, &GuiSession::publishState);
  m_files = std::make_unique<GuiFiles>(w, c);
  w->setExperimentSaver([this] { return m_files->saveExperimentInteractively(); });
  w->setRunsOpener([this](const QString& path) { return m_files->openRunsReporting(path); });
  // Connected after the controller's shutdown: the runs have stopped when this writes them.
  connect(w, &ui::MainWindow::closing, this, &GuiSession::autosaveSession);
  new LessonTracker(w, c, this);  // a child: lives as long as the session
  // The window restored its settings before this wiring existed: hand over the saved value.
  c->setMaxConcurrent(w->runsPanel()->maxConcurrent());
  c->setStepsPerSecond(w->speedControl()->stepsPerSecond());
}

GuiSession::~GuiSession() {
  m_files.reset();
  m_controller->shutdown();
  m_window.reset();  // the window reads RunData the controller owns: it goes first
}

void GuiSession::publishState() {
  ui::RunState s;
  s.active = m_controller->activeCount();
  s.queued = m_controller->queuedCount();
  s.anyRunning = m_controller->anyRunning();
  s.anyPaused = m_controller->anyPaused();
  s.current = m_controller->currentRun();
  m_window->setRunState(s);
}

QString GuiSession::lastSessionPath() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/last-session.ampx");
}

void GuiSession::autosaveSession() {
  if (!m_persist || !m_ownsLastSession) return;
  const QString path = lastSessionPath();
  // "Quit without saving" discards this session's new runs, not the ones it reopened.
  if (m_window->lastCloseChoice() == ui::MainWindow::CloseChoice::Discarded)
    for (int id : m_window->unsavedRunIds()) m_controller->removeRun(id);
  if (m_controller->runs().isEmpty()) {
    QFile::remove(path);  // nothing to reopen: the next start is a fresh one
    return;
  }
  QDir().mkpath(QFileInfo(path).absolutePath());
  try {
    m_files->saveExperimentFile(path);
  } catch (const std::exception& e) {
    // The window is closing: stderr is the one place left to say it.
    std::fprintf(stderr, "ampstudio: could not keep this session in %s: %s\n", qPrintable(path), e.what());
  }
}

int GuiSession::restoreLastSession() {
  m_ownsLastSession = true;
  const QString path = lastSessionPath();
  if (!QFileInfo::exists(path)) return 0;
  try {
    const int n = m_files->openRuns(path);
    m_window->statusBar()->showMessage(tr("Reopened the last session: %n run(s).", nullptr, n), 8000);
    return n;
  } catch (const std::exception& e) {
    m_window->statusBar()->showMessage(tr("Could not reopen the last session (%1): %2")
                                           .arg(path, QString::fromUtf8(e.what())));
    return 0;
  }
}

bool GuiSession::startScreenshot(const QString& lesson, const QString& outPath, qint64 steps) {
  if (!m_window->loadLesson(lesson)) return false;
  if (steps > 0) m_window->experiment()->setFieldValue("train.steps", std::to_string(steps));
  m_screenshotPath = outPath;
  connect(m_controller.get(), &RunController::allRunsEnded, this, [this] {
    // Let the last queued updates and layout settle, then draw the window as it is.
    QTimer::singleShot(300, this, &GuiSession::saveScreenshot);
  }, Qt::SingleShotConnection);
  if (!m_window->runLesson(lesson)) return false;
  m_window->speedControl()->setStepsPerSecond(0);  // a screenshot waits for the end, not a class
  return true;
}

bool GuiSession::openFromCommandLine(const QString& path, QString* error) {
  const QFileInfo info(path);
  bool runs = info.isDir();
  if (!runs && info.isFile()) {
    QFile f(path);
    // Zips by their signature, not their name: a bundle may be called anything.zip.
    runs = f.open(QIODevice::ReadOnly) && f.read(4) == QByteArrayLiteral("PK\x03\x04");
  }
  if (!runs) {
    if (m_window->openConfigFile(path)) return true;
    if (error) *error = m_window->statusBar()->currentMessage();
    return false;
  }
  try {
    const int n = m_files->openRuns(path);
    m_window->statusBar()->showMessage(tr("Opened %n run(s) from %1", nullptr, n).arg(path), 8000);
    return true;
  } catch (const std::exception& e) {
    const QString why = tr("Could not open %1: %2").arg(path, QString::fromUtf8(e.what()));
    m_window->statusBar()->showMessage(why);
    m_window->eventLog()->appendMessage(why);
    if (error) *error = why;
    return false;
  }
}

bool GuiSession::startScreenshotOfFile(const QString& path, const QString& outPath, QString* error) {
  if (!openFromCommandLine(path, error)) return false;
  m_screenshotPath = outPath;
  // Loaded runs are complete: one layout pass and the charts' first draw are all there is.
  QTimer::singleShot(500, this, &GuiSession::saveScreenshot);
  return true;
}

void GuiSession::saveScreenshot() {
  m_controller->drainNow();
  m_window->refreshRuns();
  QApplication::processEvents();
  // One line per run, comparable with `ampstudio-cli run` (median step time, skipped steps).
  for (const ui::RunData* r : m_controller->runs()) {
    const RunSummary s = r->summary.summary();
    std::printf("%-28s %-9s %6lld steps  loss %-10.4g skipped %-4lld median %.3f ms/step\n",
                qPrintable(r->name), qPrintable(ui::runStatusName(r->status)), (long long)s.steps,
                s.finalLoss, (long long)s.skippedSteps, s.medianStepMs);
  }
  // AMP_DRAIN_DEBUG=1: the step-time distribution too, to compare the GUI's overhead with the CLI.
  if (qEnvironmentVariableIsSet("AMP_DRAIN_DEBUG"))
    for (const ui::RunData* r : m_controller->runs()) {
      QVector<double> v = r->series.stepMs;
      std::sort(v.begin(), v.end());
      if (!v.isEmpty()) std::printf("  step ms: min %.2f p10 %.2f p50 %.2f p90 %.2f max %.2f; first 10:", v.first(), v[v.size() / 10], v[v.size() / 2], v[v.size() * 9 / 10], v.last());
      for (int i = 0; i < std::min<int>(10, r->series.stepMs.size()); ++i) std::printf(" %.1f", r->series.stepMs[i]);
      std::printf("\n");
    }
  // A lesson's conclusion as its event-log line ("Lesson '…' measured: … — confirmed: …"), so a
  // script can time a lesson to its verdict and compare the verdict across changes
  // (tests/bench/lesson_times.sh).
  for (const ui::RunData* r : m_controller->runs())
    for (const QString& line : r->events)
      if (line.startsWith(QLatin1String("Lesson '"))) std::printf("conclusion: %s\n", qPrintable(line));
  std::fflush(stdout);
  // Rendered in memory, then written as every output is (writeFileAtomically): whole or not at
  // all, never through a FIFO or over a device.
  const QPixmap shot = m_window->grab();
  QByteArray png;
  QBuffer buffer(&png);
  bool ok = !shot.isNull() && buffer.open(QIODevice::WriteOnly) && shot.save(&buffer, "PNG");
  QString problem = ok ? QString() : QStringLiteral("%1: the window could not be rendered").arg(m_screenshotPath);
  if (ok) {
    try {
      writeFileAtomically(m_screenshotPath.toStdString(), std::string_view(png.constData(), std::size_t(png.size())));
    } catch (const std::exception& e) {
      ok = false;
      problem = QString::fromStdString(e.what());
    }
  }
  emit screenshotSaved(ok, ok ? m_screenshotPath : problem);
}

}  // namespace amp::gui
