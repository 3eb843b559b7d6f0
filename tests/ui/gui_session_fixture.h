// The app as the UI tests drive it: a GuiSession (settings not persisted, so every test starts
// from the same state) shown offscreen, and the accessors every such test uses.
#pragma once

#include <QObject>
#include <QTest>
#include <memory>

#include "app/gui_run_controller.h"
#include "app/gui_session.h"
#include "ui/main_window.h"

namespace amp::test {

class SessionFixture : public QObject {
 protected:
  std::unique_ptr<gui::GuiSession> m_session;

  ui::MainWindow* window() const { return m_session->window(); }
  ui::ExperimentPanel* panel() const { return window()->experiment(); }
  gui::RunController* controller() const { return m_session->controller(); }
  // The newest run of the session (nullptr when there is none).
  ui::RunData* lastRun() const {
    const auto runs = controller()->runs();
    return runs.isEmpty() ? nullptr : controller()->run(runs.last()->id);
  }
  // A fresh session with its window shown; false when the window never became exposed.
  bool openSession() {
    m_session = std::make_unique<gui::GuiSession>(/*persistSettings=*/false);
    window()->show();
    return QTest::qWaitForWindowExposed(window());
  }
};

}  // namespace amp::test
