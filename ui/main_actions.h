// The main window's actions with their shortcuts and icons (Qt's standard icons), shared by the
// menus, the tool bar and the panels' buttons so each command has one enabled state.
//   Ctrl+R / F5 start · Space pause/resume · S or Ctrl+. one step · Shift+F5 / Ctrl+Shift+X stop
//   Ctrl+I inject overflow · Ctrl+T trace next step · Ctrl+Shift+T twin runs
//   Ctrl+O open config · Ctrl+S save config · Ctrl+E export charts
//   Ctrl+Shift+D light/dark palette · Ctrl+= / Ctrl+- / Ctrl+0 presentation scale · Ctrl+Q quit
// Icons are Qt's standard ones re-tinted for the palette (themedIcon), so they stay visible in
// the dark palette: call retintIcons() after a palette change.
#pragma once

#include <QObject>

class QAction;
class QActionGroup;
class QMenu;
class QMenuBar;
class QWidget;

namespace amp::ui {

struct MainActions {
  QAction* start = nullptr;
  QAction* pause = nullptr;  // checkable: checked while paused
  QAction* step = nullptr;
  QAction* stop = nullptr;
  QAction* inject = nullptr;
  QAction* trace = nullptr;
  QAction* twin = nullptr;
  QAction* open = nullptr;
  QAction* save = nullptr;
  QAction* exportCharts = nullptr;
  QAction* saveExperiment = nullptr;    // the session's runs as an .ampx file
  QAction* openExperiment = nullptr;    // .ampx, run bundle or CLI run folder
  QAction* exportMetrics = nullptr;     // ticked runs as CSV / JSON
  QAction* exportTensorBoard = nullptr; // ticked runs as TensorBoard event files
  QAction* exportBundle = nullptr;      // the selected run as one zip
  QAction* exportWeights = nullptr;     // the selected run's weights alone, 16-bit or fp32
  QAction* saveCheckpoint = nullptr;    // the selected run, between two steps
  QAction* resumeCheckpoint = nullptr;  // a new run from a checkpoint file
  QAction* quit = nullptr;
  QAction* light = nullptr;
  QAction* dark = nullptr;
  QAction* shortcuts = nullptr;
  QAction* about = nullptr;
  QAction* togglePalette = nullptr;  // Ctrl+Shift+D: light <-> dark (either way)
  QAction* zoomIn = nullptr;         // presentation scale up (Ctrl+=, Ctrl++)
  QAction* zoomOut = nullptr;        // down (Ctrl+-)
  QAction* zoomReset = nullptr;      // back to 1 (Ctrl+0)
  QAction* chartsAuto = nullptr;     // chart layout: automatic / grid / tabs (exclusive)
  QAction* chartsGrid = nullptr;
  QAction* chartsTabs = nullptr;
  // Focus view (F11, checkable): one chart, full screen, for a projector; Page Down / Page Up
  // (nextChart, previousChart) step through the charts, Esc or F11 leaves.
  QAction* focusView = nullptr;
  QAction* nextChart = nullptr;
  QAction* previousChart = nullptr;
  QMenu* recent = nullptr;
  QMenu* view = nullptr;  // the window adds its docks' toggles here

  static MainActions create(QWidget* window);
  void populateMenus(QMenuBar* bar);
  // Re-tints every action's standard icon for the current palette.
  void retintIcons(QWidget* window) const;
};

QString shortcutHelpHtml();

}  // namespace amp::ui
