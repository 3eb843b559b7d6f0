// MainWindow: loading and starting lessons and experiments (the Run menu's and tool bar's start,
// twin and step actions, a lesson's variants): the host memory check before anything starts, and
// the pace a lesson sets. The window itself is built in main_window.cpp.
#include <QDockWidget>
#include <QStatusBar>

#include "engine/backend/backend_registry.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "ui/charts/dashboard.h"
#include "ui/experiment_panel.h"
#include "ui/lesson_panel.h"
#include "ui/lesson_result_view.h"
#include "ui/main_window.h"
#include "ui/memory_check.h"
#include "ui/runs_panel.h"
#include "ui/speed_control.h"

namespace amp::ui {

bool MainWindow::loadLesson(const QString& name) {
  const Preset* p = findPreset(name.toStdString());
  if (!p) {
    statusBar()->showMessage(tr("Unknown lesson '%1'. Lessons: %2")
                                 .arg(name, QString::fromStdString(presetNames())));
    return false;
  }
  m_lessons->selectLesson(name);
  const bool cpuSized = lessonRunsCpuSized(*p);
  m_experiment->setConfig(presetConfig(*p, nullptr, cpuSized));
  m_loadedLesson = name;
  m_lessonDock->raise();  // the explanation is what to read first; the settings are one tab away
  setWindowTitle(tr("AMP Studio — %1").arg(QString::fromStdString(p->title)));
  statusBar()->showMessage(
      cpuSized ? tr("Lesson '%1' loaded in its CPU-sized form: no usable GPU (%2).")
                     .arg(QString::fromStdString(p->title),
                          QString::fromStdString(gpuInventory().unavailableReason))
               : tr("Lesson '%1' loaded.").arg(QString::fromStdString(p->title)),
      cpuSized ? 0 : 5000);
  return true;
}

QVector<RunConfig> MainWindow::lessonConfigs(const QString& name) const {
  const Preset* p = findPreset(name.toStdString());
  if (!p) return {};
  const RunConfig base = m_experiment->config();
  if (p->variants.empty()) return {base};
  QVector<RunConfig> out;
  for (const PresetVariant& v : p->variants) {
    RunConfig c = base;
    for (const auto& [k, val] : v.overrides) setConfigValue(c, k, val);
    c.name = p->name + "/" + v.label;
    out.append(c);
  }
  return out;
}

bool MainWindow::runLesson(const QString& name) {
  // Keep the user's edits when the panel already holds this lesson (and --steps overrides).
  if (m_loadedLesson != name && !loadLesson(name)) return false;
  if (!m_experiment->isValid()) {
    m_experimentDock->raise();
    return false;
  }
  const QVector<RunConfig> configs = lessonConfigs(name);
  // A lesson starts on a clean slate: the runs that have ended are archived (restorable), so the
  // charts hold this lesson's runs alone and their axes fit them.
  const int archived = m_runsPanel->archiveEndedRuns();
  if (!requestRuns(configs, false, name)) return false;
  m_result->clearResult();  // the previous lesson's outcome is not this one's
  m_dashboard->resetViews();
  // A lesson that would be over in a second runs at a pace a class can follow; the slider shows
  // it and takes the runs back to full speed at any time.
  // Every lesson sets the pace, full speed included: one lesson's pace must not slow the next.
  const Preset* p = findPreset(name.toStdString());
  m_speed->setStepsPerSecond(p ? p->demoPace : 0);
  QStringList message;
  if (p && p->demoPace > 0)
    message << tr("'%1' runs at %2 for the class to follow; the Speed slider changes it live.")
                   .arg(QString::fromStdString(p->title), SpeedControl::paceText(m_speed->stepsPerSecond()));
  if (archived > 0)
    message << (archived == 1 ? tr("1 earlier run archived") : tr("%1 earlier runs archived").arg(archived)) +
                   tr(": “Archived” in the runs table restores them.");
  if (!message.isEmpty()) statusBar()->showMessage(message.join(QLatin1Char(' ')), 10000);
  return true;
}

bool MainWindow::requestRuns(const QVector<RunConfig>& configs, bool paused, const QString& lesson) {
  // A paced lesson's variants train side by side, so a class sees them part as they happen (one
  // after another, the first was over before the one the lesson is about had begun). At its
  // pace each run takes a small share of the CPU. An unpaced lesson's variants start together
  // and train in turns (RunController: StepTurns), so speeds they compare share the machine.
  const Preset* preset = lesson.isEmpty() ? nullptr : findPreset(lesson.toStdString());
  const bool sideBySide = preset && preset->demoPace > 0 && configs.size() > 1;
  const MemoryCheck memory =
      checkHostMemory(configs, sideBySide ? int(configs.size()) : m_runsPanel->maxConcurrent());
  if (!memory.refusal.isEmpty()) {
    m_experiment->showRunError(memory.refusal);
    statusBar()->showMessage(tr("Not started: %1").arg(memory.refusal));
    m_experimentDock->raise();
    return false;
  }
  if (!memory.summary.isEmpty()) statusBar()->showMessage(tr("Starting: %1").arg(memory.summary), 5000);
  if (!lesson.isEmpty()) emit lessonStarted(lesson, int(configs.size()));  // before its runs appear
  emit startRequested(configs, paused, sideBySide);
  return true;
}

void MainWindow::startExperiment() {
  if (!m_experiment->isValid()) return;
  requestRuns({m_experiment->config()}, false);
}

void MainWindow::startTwinRuns() {
  if (!m_experiment->isValid()) return;
  const RunConfig base = m_experiment->config();
  const std::string stem = base.name.empty() ? base.model.name : base.name;
  QVector<RunConfig> twins;
  for (PrecisionMode m : {PrecisionMode::Fp32, PrecisionMode::AmpFp16, PrecisionMode::AmpBf16}) {
    RunConfig c = base;
    c.mode = m;
    c.name = stem + " " + std::string(precisionModeName(m));
    twins.append(c);
  }
  requestRuns(twins, false);
}

void MainWindow::stepOnce() {
  // Nothing to step: start the experiment paused, so Step walks it from its first step.
  if (m_state.active == 0 && m_state.queued == 0) {
    if (!m_experiment->isValid()) return;
    if (!requestRuns({m_experiment->config()}, true)) return;
  }
  emit stepRequested();
}


}  // namespace amp::ui
