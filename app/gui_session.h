// The desktop app's composition root: one RunController (threads, queue, metrics hand-off) and
// one MainWindow (widgets), wired together. Also the backend probe the experiment panel shows,
// and the screenshot mode used by `ampstudio --lesson NAME --screenshot OUT.png`.
#pragma once

#include <QObject>
#include <memory>

namespace amp::ui {
class MainWindow;
}

namespace amp::gui {

class GuiFiles;
class RunController;

class GuiSession : public QObject {
  Q_OBJECT

 public:
  // persistSettings: see MainWindow. The window is created hidden; call window()->show().
  explicit GuiSession(bool persistSettings = true, QObject* parent = nullptr);
  ~GuiSession() override;  // stops every run (cancel, then wait), then closes the window

  ui::MainWindow* window() const { return m_window.get(); }
  RunController* controller() const { return m_controller.get(); }
  GuiFiles* files() const { return m_files.get(); }

  // Screenshot mode: run `lesson` (steps overridden when steps > 0), wait until every run has
  // ended, draw once more, save a PNG of the window and emit screenshotSaved. Returns false
  // (and emits nothing) if the lesson is unknown or its settings are invalid.
  bool startScreenshot(const QString& lesson, const QString& outPath, qint64 steps = 0);

  // A path given on the command line or by a file manager (the desktop entry's %f): a folder of
  // CLI runs or a zip (an .ampx experiment, a run bundle) joins the runs table; anything else is
  // read as a JSON config. Returns false with the one-line reason in *error, also shown in the
  // window's status bar and event log.
  bool openFromCommandLine(const QString& path, QString* error);
  // Screenshot mode for a file: open it, let the window lay out, save a PNG, emit screenshotSaved.
  // Returns false (and emits nothing) when the file cannot be opened.
  bool startScreenshotOfFile(const QString& path, const QString& outPath, QString* error);

  // The last session: a window that reopened it (this call, made at a plain start) writes its
  // runs and event logs back to lastSessionPath() when it closes, less the runs the user chose
  // "Quit without saving" for; the next plain start reopens them. A window started on a lesson or
  // a file never called this and leaves the last session as it was. Returns the runs restored.
  int restoreLastSession();
  static QString lastSessionPath();

 signals:
  // ok: `pathOrProblem` is the file written; otherwise the one-line reason, naming it.
  void screenshotSaved(bool ok, const QString& pathOrProblem);

 private:
  void publishState();
  void saveScreenshot();
  void autosaveSession();  // after the controller stopped every run

  std::unique_ptr<RunController> m_controller;
  std::unique_ptr<ui::MainWindow> m_window;
  std::unique_ptr<GuiFiles> m_files;
  QString m_screenshotPath;
  bool m_persist;
  // The window announced a lesson (lessonStarted) whose runs it asks for next: they train in turns.
  bool m_lessonStarting = false;
  bool m_ownsLastSession = false;  // restoreLastSession() ran: closing writes the session back
};

// What the CPU backend runs natively and what it emulates (Backend::description()), and why
// CUDA cannot be chosen in this build.
QString probeBackendDescription();
QString cudaUnavailableReason();

}  // namespace amp::gui
