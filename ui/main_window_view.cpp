// The main window's view side: presentation scale, the user's choice of chart layout, how tall
// the bottom row is, and the confirmation before closing with unsaved runs.
#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QResizeEvent>
#include <QStatusBar>
#include <QToolBar>
#include <algorithm>

#include "ui/charts/dashboard.h"
#include "ui/lesson_result_view.h"
#include "ui/main_window.h"
#include "ui/theme.h"

namespace amp::ui {


void MainWindow::setPresentationScale(double f) {
  f = std::clamp(f, kMinPresentationScale, kMaxPresentationScale);
  m_presentationScale = f;
  const QFont font = scaledFont(m_baseFont, f);
  QApplication::setFont(font);
  // A dock whose font equals the application's draws its title in the title font Qt read when
  // the dock was made, which no later setFont reaches: the titles stayed small at 1.5. A font
  // that differs from it in a property nobody sees makes the dock draw its title in its own.
  QFont dockFont = font;
  dockFont.setStyleStrategy(QFont::PreferQuality);
  for (QDockWidget* d : findChildren<QDockWidget*>()) d->setFont(dockFont);
  m_dashboard->setPresentationScale(f);
  arrangeBottomDocks();
  m_actions.zoomIn->setEnabled(f < kMaxPresentationScale);
  m_actions.zoomOut->setEnabled(f > kMinPresentationScale);
  m_actions.zoomReset->setEnabled(f != 1.0);
  if (f != 1.0) statusBar()->showMessage(tr("Presentation scale %1% (Ctrl+0: normal)").arg(qRound(f * 100)), 3000);
}

void MainWindow::setChartLayout(ChartLayout layout) {
  m_chartLayout = layout;
  QAction* a = layout == ChartLayout::Grid ? m_actions.chartsGrid
               : layout == ChartLayout::Tabs ? m_actions.chartsTabs
                                             : m_actions.chartsAuto;
  a->setChecked(true);
  if (layout == ChartLayout::Automatic) m_dashboard->setAutomaticLayout();
  else m_dashboard->setLayoutMode(layout == ChartLayout::Grid ? Dashboard::Layout::Grid : Dashboard::Layout::Tabs);
}

void MainWindow::fitDocksToWindow() {
  // The bottom row (runs, event log, trace) gets about 30% of the height: a fixed 185 px left the
  // trace at four rows even on a 1080p screen. The side panel gets about a quarter of the width.
  const int h = height(), w = width();
  if (std::abs(h - m_fittedHeight) < 40) return;
  m_fittedHeight = h;
  const int bottom = std::clamp(int(h * 0.28), 140, 420);
  const int side = std::clamp(int(w * 0.26), 270, 420);
  if (!m_bottomInSide) resizeDocks({m_runsDock}, {bottom}, Qt::Vertical);
  resizeDocks({m_experimentDock}, {side}, Qt::Horizontal);
}

void MainWindow::moveBottomDocksToSide(bool side) {
  const QList<QDockWidget*> bottom = {m_runsDock, m_inspectorDock, m_logDock};
  const Qt::DockWidgetArea from = side ? Qt::BottomDockWidgetArea : Qt::LeftDockWidgetArea;
  for (QDockWidget* d : bottom)  // the user moved one elsewhere: their layout stands
    if (d->isFloating() || dockWidgetArea(d) != from) return;
  if (!side && dockWidgetArea(m_lessonDock) != Qt::LeftDockWidgetArea) return;
  m_bottomInSide = side;
  // Five tabs across a 270 px column were cut to "Exp… Le… R…": down its side they keep
  // their names.
  setDockOptions(side ? dockOptions() | QMainWindow::VerticalTabs : dockOptions() & ~QMainWindow::VerticalTabs);
  const bool lessonOnTop = !m_loadedLesson.isEmpty();
  if (side) {
    for (QDockWidget* d : bottom) {
      const bool closed = d->isHidden() && isVisible();  // closed by the user: stays closed
      tabifyDockWidget(m_lessonDock, d);
      if (closed) d->hide();
    }
  } else {
    for (QDockWidget* d : bottom) {
      const bool closed = d->isHidden() && isVisible();
      removeDockWidget(d);
      if (d == m_runsDock)
        addDockWidget(Qt::BottomDockWidgetArea, d);
      else
        tabifyDockWidget(m_runsDock, d);
      d->setVisible(!closed);
    }
    m_fittedHeight = 0;  // fitDocksToWindow gives the row its height back
  }
  // The log is a tab either way; back below, arrangeBottomDocks splits it off where it is wide.
  m_logTabbed = true;
  (lessonOnTop ? m_lessonDock : m_experimentDock)->raise();
  if (!side) m_runsDock->raise();
}

void MainWindow::fitToolBar() {
  // Narrow for the scale (1024 wide, 1280 at x1.5): icons without their words (tooltips keep
  // them), so the speed control and the progress bar stay in view instead of behind "»".
  const bool narrow = width() < kNarrowWindowPx * m_presentationScale;
  for (QToolBar* bar : findChildren<QToolBar*>())
    bar->setToolButtonStyle(narrow ? Qt::ToolButtonIconOnly : Qt::ToolButtonTextBesideIcon);
  m_progress->setFixedWidth(int((narrow ? 100 : 160) * m_presentationScale));
  m_progressLabel->setMinimumWidth(int((narrow ? 120 : 200) * m_presentationScale));
}

void MainWindow::arrangeBottomDocks() {
  fitToolBar();
  const bool shortWindow = height() < kShortWindowPx * m_presentationScale;
  if (shortWindow != m_bottomInSide) moveBottomDocksToSide(shortWindow);
  if (m_bottomInSide) return;
  const bool narrow = width() < kNarrowWindowPx * m_presentationScale;
  if (narrow == m_logTabbed) return;
  const auto inBottomRow = [this](QDockWidget* d) {
    return !d->isFloating() && dockWidgetArea(d) == Qt::BottomDockWidgetArea;
  };
  if (!inBottomRow(m_logDock) || !inBottomRow(m_runsDock)) return;  // the user moved them
  // Or closed the log (its view action reads unchecked while the window itself is hidden, as
  // before the first show: isHidden() is the user's own closing alone).
  if (m_logDock->isHidden() && !m_logTabbed) return;
  m_logTabbed = narrow;
  if (narrow) {
    tabifyDockWidget(m_runsDock, m_logDock);
    m_runsDock->raise();
  } else {
    // splitDockWidget would add it back as a tab of the runs' tab group: out of it first.
    removeDockWidget(m_logDock);
    addDockWidget(Qt::BottomDockWidgetArea, m_logDock, Qt::Horizontal);
    m_logDock->show();
    resizeDocks({m_runsDock, m_logDock}, {width() * 2 / 3, width() / 3}, Qt::Horizontal);
  }
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  if (m_focusView) return;  // the docks are hidden; the layout comes back with them
  arrangeBottomDocks();
  fitDocksToWindow();  // the dashboard then picks grid or tabs for the size it is left with
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if ((watched == centralWidget() && event->type() == QEvent::Resize) ||
      (watched == m_dashboard && event->type() == QEvent::LayoutRequest && m_result->isVisible()))
    fitResultPanel();
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::fitResultPanel() {
  // A share of the centre, and never so much that the charts drop below their own minimum (the
  // window would grow past the screen instead).
  const int centre = centralWidget()->height();
  const int room = centre - m_dashboard->minimumSizeHint().height() - 8;
  // A short centre (1024x640 at x1.5) gives the chart that proves the point more of it.
  const double share = centre < 480 * m_presentationScale ? kShortResultShare : kResultShare;
  // Where all of it does not fit the share, the panel may take the room down to the charts'
  // minimum so that every run's line, the criterion and the note are on screen.
  const int cap = std::max(0, std::min(int(centre * share), room));
  m_result->setHeightCap(cap, std::max(0, room));
  // Still short of room (1280x800 at x1, the runs table below): the bottom row gives up what the
  // result needs, down to a few table rows; the centre's resize then refits the panel.
  if (!m_resultMayTakeBottomRow || !m_result->isVisible() || m_bottomInSide || m_focusView ||
      m_runsDock->isFloating() || dockWidgetArea(m_runsDock) != Qt::BottomDockWidgetArea || m_runsDock->isHidden())
    return;
  m_resultMayTakeBottomRow = false;  // once per result: a row the user then drags taller stays
  const int deficit = m_result->wholeHeight() - std::max(cap, room);
  const int bottom = m_runsDock->height();
  const int minimum = int(kMinBottomRowPx * m_presentationScale);
  if (deficit > 0 && bottom > minimum) resizeDocks({m_runsDock}, {std::max(minimum, bottom - deficit - 4)}, Qt::Vertical);
}

MainWindow::CloseChoice MainWindow::confirmClose() {
  // Runs still training count too: closing stops them, and what they trained so far is unsaved.
  if (m_unsaved.isEmpty()) return CloseChoice::NothingToAsk;
  QMessageBox box(QMessageBox::Question, tr("Quit AMP Studio"),
                  tr("%n run(s) of this session are not saved in an experiment file.", nullptr, int(m_unsaved.size())),
                  QMessageBox::NoButton, this);
  box.setObjectName(QStringLiteral("confirmQuit"));
  box.setInformativeText(tr("Save them before quitting? Without saving they are lost."));
  QPushButton* save = m_saveExperiment ? box.addButton(tr("Save…"), QMessageBox::AcceptRole) : nullptr;
  QPushButton* discard = box.addButton(tr("Quit without saving"), QMessageBox::DestructiveRole);
  QPushButton* cancel = box.addButton(QMessageBox::Cancel);
  box.setDefaultButton(save ? save : cancel);
  box.setEscapeButton(cancel);
  box.exec();
  if (box.clickedButton() == discard) return CloseChoice::Discarded;
  if (save && box.clickedButton() == save) {
    if (!m_saveExperiment()) return CloseChoice::Cancelled;  // the file dialog was cancelled
    m_unsaved.clear();
    return CloseChoice::Saved;
  }
  return CloseChoice::Cancelled;
}

}  // namespace amp::ui
