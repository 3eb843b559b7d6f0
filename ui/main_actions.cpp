#include "ui/main_actions.h"

#include <QAction>
#include <QActionGroup>
#include <QKeySequence>
#include <QMenu>
#include <QMenuBar>
#include <QStyle>
#include <QWidget>

#include "ui/theme.h"

namespace amp::ui {

namespace {
constexpr const char* kIconProperty = "ampStandardIcon";

QAction* make(QWidget* w, const QString& text, QStyle::StandardPixmap icon,
              const QList<QKeySequence>& keys, const QString& tip) {
  auto* a = new QAction(text, w);
  if (icon != QStyle::SP_CustomBase) {
    a->setIcon(themedIcon(w->style(), icon));
    a->setProperty(kIconProperty, int(icon));  // retintIcons() redraws it for the palette
  }
  a->setShortcuts(keys);
  // Window-wide: the shortcuts work whichever panel has focus (line edits keep their own keys).
  a->setShortcutContext(Qt::WindowShortcut);
  QString t = tip;
  if (!keys.isEmpty()) t += QStringLiteral(" (%1)").arg(keys.first().toString(QKeySequence::NativeText));
  a->setToolTip(t);
  a->setStatusTip(tip);
  w->addAction(a);
  return a;
}
}  // namespace

MainActions MainActions::create(QWidget* w) {
  MainActions a;
  a.start = make(w, QObject::tr("&Start"), QStyle::SP_MediaPlay, {QKeySequence(Qt::CTRL | Qt::Key_R), QKeySequence(Qt::Key_F5)},
                 QObject::tr("Start a run with the experiment's settings"));
  a.pause = make(w, QObject::tr("&Pause"), QStyle::SP_MediaPause, {QKeySequence(Qt::Key_Space)},
                 QObject::tr("Pause or resume the active runs between two steps"));
  a.pause->setCheckable(true);
  a.step = make(w, QObject::tr("S&tep"), QStyle::SP_MediaSeekForward,
                {QKeySequence(Qt::Key_S), QKeySequence(Qt::CTRL | Qt::Key_Period)},
                QObject::tr("One training step of each paused run (starts the experiment paused if "
                            "nothing runs); its per-op trace appears in the inspector"));
  a.stop = make(w, QObject::tr("St&op"), QStyle::SP_MediaStop,
                {QKeySequence(Qt::SHIFT | Qt::Key_F5), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_X)},
                QObject::tr("Stop the active runs and cancel the queue"));
  a.inject = make(w, QObject::tr("&Inject overflow now"), QStyle::SP_MessageBoxWarning,
                  {QKeySequence(Qt::CTRL | Qt::Key_I)},
                  QObject::tr("Force an inf into a gradient of the next step, as an fp16 overflow "
                              "would: watch the scaler skip the step and back off"));
  a.trace = make(w, QObject::tr("T&race next step"), QStyle::SP_FileDialogDetailedView,
                 {QKeySequence(Qt::CTRL | Qt::Key_T)},
                 QObject::tr("Record the per-op dtype trace of the next step"));
  a.twin = make(w, QObject::tr("T&win runs"), QStyle::SP_CustomBase, {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T)},
                QObject::tr("Start fp32, AMP fp16 and AMP bf16 runs of the experiment with one seed"));
  a.twin->setIcon(twinRunsIcon());  // the precisions' own colours: the same in both palettes
  a.open = make(w, QObject::tr("&Open config…"), QStyle::SP_DialogOpenButton, {QKeySequence::Open},
                QObject::tr("Load an experiment from a JSON config file"));
  a.save = make(w, QObject::tr("&Save config…"), QStyle::SP_DialogSaveButton, {QKeySequence::Save},
                QObject::tr("Save the experiment as a JSON config file"));
  a.exportCharts = make(w, QObject::tr("&Export charts…"), QStyle::SP_DriveFDIcon,
                        {QKeySequence(Qt::CTRL | Qt::Key_E)},
                        QObject::tr("Save the whole dashboard as PNG, SVG or PDF"));
  a.saveExperiment = make(w, QObject::tr("Save e&xperiment…"), QStyle::SP_DialogSaveButton,
                          {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S)},
                          QObject::tr("Save every run of the session (configs, metrics, checkpoints) to an .ampx file"));
  a.openExperiment = make(w, QObject::tr("Open experiment / bundle / run &folder…"), QStyle::SP_DirOpenIcon,
                          {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O)},
                          QObject::tr("Add the runs of an .ampx file, a run bundle, a CLI output or PyTorch probe "
                                      "folder, or a TensorBoard log folder"));
  a.exportMetrics = make(w, QObject::tr("Export &metrics…"), QStyle::SP_FileIcon, {},
                         QObject::tr("Save the ticked runs' metrics as CSV or JSON (with the loss smoothing shown)"));
  a.exportTensorBoard = make(w, QObject::tr("Export to &TensorBoard…"), QStyle::SP_FileIcon, {},
                             QObject::tr("Write the ticked runs as TensorBoard event files, one sub-folder "
                                         "per run (tensorboard --logdir FOLDER); File > Open reads such a "
                                         "folder back, and any TensorBoard log folder"));
  a.exportBundle = make(w, QObject::tr("Export run &bundle…"), QStyle::SP_FileIcon, {},
                        QObject::tr("Save the selected run's config, metrics, charts and last checkpoint as one zip"));
  a.exportWeights = make(w, QObject::tr("Export &weights…"), QStyle::SP_FileIcon, {},
                         QObject::tr("Save the selected run's weights alone in fp16, bf16 or fp32 "
                                     "(safetensors, PyTorch's state_dict keys) from its latest checkpoint"));
  a.saveCheckpoint = make(w, QObject::tr("Save checkpoint &now…"), QStyle::SP_DialogSaveButton, {},
                          QObject::tr("Write a checkpoint of the selected run between two steps"));
  a.resumeCheckpoint = make(w, QObject::tr("&Resume from checkpoint…"), QStyle::SP_BrowserReload, {},
                            QObject::tr("Start a new run that continues from a checkpoint file"));
  a.quit = make(w, QObject::tr("&Quit"), QStyle::SP_CustomBase, {QKeySequence(Qt::CTRL | Qt::Key_Q)},
                QObject::tr("Stop every run and quit"));
  a.light = make(w, QObject::tr("&Light palette"), QStyle::SP_CustomBase, {}, QObject::tr("Light colours"));
  a.dark = make(w, QObject::tr("&Dark palette"), QStyle::SP_CustomBase, {}, QObject::tr("Dark colours"));
  // Not the dark action's own shortcut: in an exclusive group, triggering the checked action
  // changes nothing, so the key could switch to dark but never back.
  a.togglePalette = make(w, QObject::tr("&Switch light/dark palette"), QStyle::SP_CustomBase,
                         {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D)}, QObject::tr("Switch between the light and dark palettes"));
  a.zoomIn = make(w, QObject::tr("&Larger (presentation)"), QStyle::SP_CustomBase,
                  {QKeySequence(Qt::CTRL | Qt::Key_Equal), QKeySequence(Qt::CTRL | Qt::Key_Plus)},
                  QObject::tr("Larger fonts and lines, for a projector"));
  a.zoomOut = make(w, QObject::tr("S&maller"), QStyle::SP_CustomBase,
                   {QKeySequence(Qt::CTRL | Qt::Key_Minus)}, QObject::tr("Smaller fonts and lines"));
  a.zoomReset = make(w, QObject::tr("&Normal size"), QStyle::SP_CustomBase, {QKeySequence(Qt::CTRL | Qt::Key_0)},
                     QObject::tr("Fonts and lines at their normal size"));
  a.chartsAuto = make(w, QObject::tr("Charts: &automatic layout"), QStyle::SP_CustomBase, {},
                      QObject::tr("A grid when the window is large enough, tabs otherwise"));
  a.chartsGrid = make(w, QObject::tr("Charts: &grid"), QStyle::SP_CustomBase, {}, QObject::tr("All six charts at once"));
  a.chartsTabs = make(w, QObject::tr("Charts: &tabs"), QStyle::SP_CustomBase, {}, QObject::tr("One chart at a time, full size"));
  auto* layouts = new QActionGroup(w);
  for (QAction* t : {a.chartsAuto, a.chartsGrid, a.chartsTabs}) {
    t->setCheckable(true);
    layouts->addAction(t);
  }
  a.chartsAuto->setChecked(true);
  a.focusView = make(w, QObject::tr("&Focus on one chart"), QStyle::SP_CustomBase, {QKeySequence(Qt::Key_F11)},
                     QObject::tr("One chart full screen for a projector; Page Down / Page Up step through the "
                                 "charts, Esc leaves"));
  a.focusView->setCheckable(true);
  a.nextChart = make(w, QObject::tr("&Next chart"), QStyle::SP_CustomBase, {QKeySequence(Qt::Key_PageDown)},
                     QObject::tr("The next chart (one chart at a time)"));
  a.previousChart = make(w, QObject::tr("&Previous chart"), QStyle::SP_CustomBase, {QKeySequence(Qt::Key_PageUp)},
                         QObject::tr("The previous chart (one chart at a time)"));
  auto* themes = new QActionGroup(w);
  for (QAction* t : {a.light, a.dark}) {
    t->setCheckable(true);
    themes->addAction(t);
  }
  a.light->setChecked(true);
  a.shortcuts = make(w, QObject::tr("&Keyboard shortcuts"), QStyle::SP_CustomBase, {QKeySequence::HelpContents},
                     QObject::tr("List the keyboard shortcuts"));
  a.about = make(w, QObject::tr("&About AMP Studio"), QStyle::SP_CustomBase, {}, QObject::tr("About"));
  a.recent = new QMenu(QObject::tr("Open &recent"), w);
  a.view = new QMenu(QObject::tr("&View"), w);
  return a;
}

void MainActions::populateMenus(QMenuBar* bar) {
  QMenu* file = bar->addMenu(QObject::tr("&File"));
  file->addAction(open);
  file->addMenu(recent);
  file->addAction(save);
  file->addSeparator();
  file->addAction(openExperiment);
  file->addAction(saveExperiment);
  file->addSeparator();
  file->addAction(exportCharts);
  file->addAction(exportMetrics);
  file->addAction(exportTensorBoard);
  file->addAction(exportBundle);
  file->addAction(exportWeights);
  file->addSeparator();
  file->addAction(quit);
  QMenu* run = bar->addMenu(QObject::tr("&Run"));
  for (QAction* a : {start, pause, step, stop}) run->addAction(a);
  run->addSeparator();
  for (QAction* a : {twin, inject, trace}) run->addAction(a);
  run->addSeparator();
  run->addAction(saveCheckpoint);
  run->addAction(resumeCheckpoint);
  bar->addMenu(view);
  view->addAction(light);
  view->addAction(dark);
  view->addAction(togglePalette);
  view->addSeparator();
  view->addAction(zoomIn);
  view->addAction(zoomOut);
  view->addAction(zoomReset);
  view->addSeparator();
  view->addAction(chartsAuto);
  view->addAction(chartsGrid);
  view->addAction(chartsTabs);
  view->addSeparator();
  view->addAction(focusView);
  view->addAction(nextChart);
  view->addAction(previousChart);
  view->addSeparator();
  QMenu* help = bar->addMenu(QObject::tr("&Help"));
  help->addAction(shortcuts);
  help->addAction(about);
}

void MainActions::retintIcons(QWidget* window) const {
  for (QAction* a : window->actions()) {
    const QVariant icon = a->property(kIconProperty);
    if (icon.isValid()) a->setIcon(themedIcon(window->style(), QStyle::StandardPixmap(icon.toInt())));
  }
}

QString shortcutHelpHtml() {
  return QObject::tr(
      "<table cellpadding=3>"
      "<tr><td><b>Ctrl+R</b>, F5</td><td>start the experiment</td></tr>"
      "<tr><td><b>Space</b></td><td>pause / resume</td></tr>"
      "<tr><td><b>S</b>, Ctrl+.</td><td>one step while paused (with its dtype trace)</td></tr>"
      "<tr><td><b>Shift+F5</b>, Ctrl+Shift+X</td><td>stop all runs</td></tr>"
      "<tr><td><b>Ctrl+Shift+T</b></td><td>twin runs: fp32, AMP fp16, AMP bf16</td></tr>"
      "<tr><td><b>Ctrl+I</b></td><td>inject an overflow into the next step</td></tr>"
      "<tr><td><b>Ctrl+T</b></td><td>trace the next step</td></tr>"
      "<tr><td><b>Ctrl+O</b> / <b>Ctrl+S</b></td><td>open / save a config file</td></tr>"
      "<tr><td><b>Ctrl+E</b></td><td>export the charts (PNG, SVG, PDF)</td></tr>"
      "<tr><td><b>Ctrl+Shift+D</b></td><td>switch light / dark palette</td></tr>"
      "<tr><td><b>Ctrl+=</b> / <b>Ctrl+-</b> / <b>Ctrl+0</b></td><td>presentation mode: larger / "
      "smaller / normal fonts and lines</td></tr>"
      "<tr><td><b>F11</b></td><td>focus view: one chart, full screen (<b>Esc</b> leaves)</td></tr>"
      "<tr><td><b>Page Down</b> / <b>Page Up</b></td><td>next / previous chart</td></tr>"
      "<tr><td><b>Ctrl+Q</b></td><td>quit (stops runs cleanly)</td></tr>"
      "<tr><th colspan=2 align=left><br>Runs table</th></tr>"
      "<tr><td><b>Delete</b></td><td>delete or archive the selected runs (asks first)</td></tr>"
      "<tr><td>double-click</td><td>rename a run; edit its tags or note</td></tr>"
      "<tr><th colspan=2 align=left><br>Charts</th></tr>"
      "<tr><td>hover</td><td>every run's value at that step</td></tr>"
      "<tr><td>drag</td><td>zoom into a step range</td></tr>"
      "<tr><td>wheel / <b>+</b> <b>-</b></td><td>zoom the steps; with Shift or Ctrl, the values</td></tr>"
      "<tr><td>right or middle drag / arrows</td><td>pan</td></tr>"
      "<tr><td>double-click / <b>Home</b> / <b>Esc</b></td><td>back to the whole run</td></tr>"
      "<tr><td><b>L</b></td><td>log scale on or off (loss, loss scale)</td></tr>"
      "<tr><td>legend click</td><td>hide or show that run</td></tr>"
      "<tr><td>right click</td><td>reset, log scale, export PNG / SVG / PDF</td></tr></table>");
}

}  // namespace amp::ui
