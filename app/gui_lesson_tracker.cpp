#include "app/gui_lesson_tracker.h"

#include <algorithm>

#include "app/gui_lesson_conclusion.h"
#include "app/gui_run_controller.h"
#include "engine/config/presets.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/histogram_view.h"
#include "ui/main_window.h"
#include "ui/runs_panel.h"

namespace amp::gui {

LessonTracker::LessonTracker(ui::MainWindow* window, RunController* controller, QObject* parent)
    : QObject(parent), m_window(window), m_controller(controller) {
  connect(window, &ui::MainWindow::lessonStarted, this, &LessonTracker::lessonStarted);
  connect(controller, &RunController::runAdded, this, &LessonTracker::runAdded);
  connect(controller, &RunController::runStatusChanged, this, &LessonTracker::runStatusChanged);
  connect(controller, &RunController::runRemoved, this, &LessonTracker::runRemoved);
}

void LessonTracker::lessonStarted(const QString& name, int runCount) {
  if (!findPreset(name.toStdString()) || runCount <= 0) return;
  m_lessons.append({name, runCount, {}});
}

void LessonTracker::runAdded(ui::RunData* run) {
  if (run->status != ui::RunStatus::Queued) {
    if (!m_loadedCheckPending)
      QMetaObject::invokeMethod(this, [this] { showLoadedResult(); }, Qt::QueuedConnection);
    m_loadedCheckPending = true;
    return;
  }
  // The window emits lessonStarted right before it asks for the runs, which are added at once:
  // the next runs added belong to the newest lesson still short of its runs.
  if (m_lessons.isEmpty() || m_lessons.last().runIds.size() >= m_lessons.last().expected) return;
  Lesson& lesson = m_lessons.last();
  lesson.runIds.append(run->id);
  if (lesson.runIds.size() == lesson.expected) focusHistogram(lesson);
}

const ui::RunData* LessonTracker::keyRun(const Lesson& lesson) const {
  const Preset* p = findPreset(lesson.name.toStdString());
  if (!p || lesson.runIds.isEmpty()) return nullptr;
  const QString label = QString::fromStdString(p->focusVariant);
  for (int id : lesson.runIds)
    if (const ui::RunData* r = m_controller->run(id); r && !label.isEmpty() && variantLabel(*r) == label)
      return r;
  return m_controller->run(lesson.runIds.first());
}

void LessonTracker::focusHistogram(const Lesson& lesson) {
  const Preset* p = findPreset(lesson.name.toStdString());
  const ui::RunData* key = keyRun(lesson);
  if (!p || !key || p->focus.empty()) return;
  ui::HistogramView* view = m_window->dashboard()->histogramView();
  // The table selects the same run (the charts follow the table's selection): the histogram
  // showed the fp16 run while the table had selected the bf16 one.
  m_window->runsPanel()->selectRun(key->id);
  view->setSelectedRun(key->id);
  view->setSelectedTensor(QString::fromStdString(p->focus));
  // A bf16 run beside an fp16 one: the fp16 run's histogram of the same tensor as an outline
  // over the bf16 bars, one tensor in both formats (issue 25); none in other lessons.
  int compare = -1;
  if (key->config.mode == PrecisionMode::AmpBf16)
    for (int id : lesson.runIds)
      if (const ui::RunData* r = m_controller->run(id); r && r->config.mode == PrecisionMode::AmpFp16) {
        compare = id;
        break;
      }
  view->setComparedRun(compare);
  // In tabs (a small window) the chart the lesson talks about must be the one on screen.
  if (!p->focusChart.empty() && m_window->dashboard()->layoutMode() == ui::Dashboard::Layout::Tabs)
    m_window->dashboard()->showChart(QString::fromStdString(p->focusChart));
}

bool LessonTracker::ended(const Lesson& lesson) const {
  if (lesson.runIds.size() < lesson.expected) return false;
  for (int id : lesson.runIds) {
    const ui::RunData* r = m_controller->run(id);
    if (r && ui::isActive(r->status)) return false;
  }
  return true;
}

void LessonTracker::runStatusChanged(ui::RunData* run) {
  for (int i = 0; i < m_lessons.size(); ++i) {
    if (!m_lessons[i].runIds.contains(run->id) || !ended(m_lessons[i])) continue;
    const Lesson lesson = m_lessons.takeAt(i);
    // After the controller's own lines about the run's end ("finished: ..."), which it logs
    // right after this status change: the conclusion is the lesson's last word.
    QMetaObject::invokeMethod(this, [this, lesson] { conclude(lesson); }, Qt::QueuedConnection);
    return;
  }
}

void LessonTracker::runRemoved(int runId) {
  for (Lesson& l : m_lessons) {
    if (l.runIds.removeOne(runId)) --l.expected;
  }
}

void LessonTracker::showLoadedResult() {
  m_loadedCheckPending = false;
  // The newest lesson whose every variant is among the listed, ended runs (the last of each
  // name: a lesson run twice shows its latest outcome).
  const QVector<const ui::RunData*> all = m_controller->runs();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if ((*it)->archived) continue;  // set aside: its result is not the one on screen
    const QString lessonName = QString::fromStdString((*it)->config.name).section(QLatin1Char('/'), 0, 0);
    const Preset* p = findPreset(lessonName.toStdString());
    if (!p) continue;
    QVector<const ui::RunData*> runs;
    const std::size_t wanted = std::max<std::size_t>(1, p->variants.size());
    for (std::size_t v = 0; v < wanted; ++v) {
      const std::string name = p->variants.empty() ? p->name : p->name + "/" + p->variants[v].label;
      for (auto jt = all.rbegin(); jt != all.rend(); ++jt)
        if (!(*jt)->archived && (*jt)->config.name == name) {
          runs.append(*jt);
          break;
        }
    }
    const bool ended = std::none_of(runs.begin(), runs.end(), [](const ui::RunData* r) { return ui::isActive(r->status); });
    if (std::size_t(runs.size()) != wanted || !ended) continue;
    m_window->showLessonResult(lessonResult(*p, runs));
    return;
  }
}

void LessonTracker::conclude(const Lesson& lesson) {
  const Preset* p = findPreset(lesson.name.toStdString());
  QVector<const ui::RunData*> runs;
  for (int id : lesson.runIds)
    if (const ui::RunData* r = m_controller->run(id)) runs.append(r);
  if (!p || runs.isEmpty()) return;
  // Runs that trained in turns (all of them, with one block size) compare their speed round by
  // round; otherwise by their medians.
  int block = m_controller->turnBlockSteps(runs.first()->id);
  for (const ui::RunData* r : runs)
    if (m_controller->turnBlockSteps(r->id) != block) block = 0;
  const ui::LessonResult result = lessonResult(*p, runs, block);
  if (result.isEmpty()) return;
  const ui::RunData* keyData = keyRun(lesson);
  ui::RunData* key = keyData ? m_controller->run(keyData->id) : nullptr;
  if (!key) return;
  const QStringList lines{result.logLine()};
  key->events << lines;
  m_window->logEvents(key, lines);
  m_window->showLessonResult(result);
}

}  // namespace amp::gui
