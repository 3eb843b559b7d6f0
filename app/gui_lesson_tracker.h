// Follows a lesson from start to end: takes the runs a lesson starts (the window announces how
// many), opens the histogram on the tensor the lesson's text talks about for its key run, and
// when every one of its runs has ended writes the lesson's measured conclusion to the event log
// (and to the key run's events, so a saved experiment keeps it).
#pragma once

#include <QObject>
#include <QString>
#include <QVector>

namespace amp::ui {
class MainWindow;
struct RunData;
}  // namespace amp::ui

namespace amp::gui {

class RunController;

class LessonTracker : public QObject {
  Q_OBJECT

 public:
  LessonTracker(ui::MainWindow* window, RunController* controller, QObject* parent = nullptr);

 public slots:
  void lessonStarted(const QString& name, int runCount);
  void runAdded(amp::ui::RunData* run);
  void runStatusChanged(amp::ui::RunData* run);
  void runRemoved(int runId);

 private:
  struct Lesson {
    QString name;
    int expected = 0;
    QVector<int> runIds;
  };
  void focusHistogram(const Lesson& lesson);
  // Runs read from a file (an experiment reopened) arrive ended: once they are all in, the
  // newest complete lesson among them shows its result again (its log line is in its events).
  void showLoadedResult();
  bool ended(const Lesson& lesson) const;
  void conclude(const Lesson& lesson);
  const ui::RunData* keyRun(const Lesson& lesson) const;

  ui::MainWindow* m_window;
  RunController* m_controller;
  QVector<Lesson> m_lessons;  // started and not concluded
  bool m_loadedCheckPending = false;
};

}  // namespace amp::gui
