// MainWindow: config files (open/save JSON), the recent-files menu, and what persists between
// sessions in QSettings (layout, palette, last experiment, recent files, max concurrent runs).
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QMenu>

#include "engine/core/checked_file.h"
#include <QSettings>
#include <QStatusBar>

#include "engine/io/config_json.h"
#include "ui/app_settings.h"
#include "ui/charts/dashboard.h"
#include "ui/event_log_view.h"
#include "ui/experiment_panel.h"
#include "ui/last_folder.h"
#include "ui/main_window.h"
#include "ui/runs_panel.h"
#include "ui/theme.h"

namespace amp::ui {

namespace {
constexpr int kMaxRecent = 8;
}  // namespace

bool MainWindow::openConfigFile(const QString& path) {
  RunConfig c;
  try {
    applyConfigFile(c, path.toStdString());
  } catch (const std::exception& e) {
    statusBar()->showMessage(tr("Could not open %1: %2").arg(path, QString::fromUtf8(e.what())));
    m_log->appendMessage(tr("could not open %1: %2").arg(path, QString::fromUtf8(e.what())));
    return false;
  }
  m_experiment->setConfig(c);
  m_loadedLesson.clear();
  m_experimentDock->raise();
  addRecentFile(path);
  setWindowTitle(tr("AMP Studio — %1").arg(QFileInfo(path).fileName()));
  statusBar()->showMessage(tr("Loaded %1").arg(path), 5000);
  return true;
}

bool MainWindow::saveConfigFile(const QString& path) {
  try {
    // A crash mid-write never leaves half a file, and a full disk is reported as such.
    writeFileAtomically(path.toStdString(), QJsonDocument(configToJson(m_experiment->config())).toJson().toStdString());
  } catch (const OutputError& e) {
    statusBar()->showMessage(tr("Could not save: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
  addRecentFile(path);
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
  return true;
}

void MainWindow::openConfigInteractively() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open config"), lastFolder(),
                                                    tr("Config files (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  rememberFolderOf(path);
  openConfigFile(path);
}

void MainWindow::saveConfigInteractively() {
  // An unfinished experiment may be saved too (the file keeps what parsed); say so.
  if (!m_experiment->isValid())
    statusBar()->showMessage(tr("Saving an experiment that is not valid yet: %1").arg(m_experiment->problem()), 5000);
  QString path = QFileDialog::getSaveFileName(this, tr("Save config"), inLastFolder(QStringLiteral("experiment.json")),
                                              tr("Config files (*.json)"));
  if (path.isEmpty()) return;
  if (!path.endsWith(QStringLiteral(".json"))) path += QStringLiteral(".json");
  rememberFolderOf(path);
  saveConfigFile(path);
}

void MainWindow::exportChartsInteractively() {
  QString path = QFileDialog::getSaveFileName(this, tr("Export charts"), inLastFolder(QStringLiteral("ampstudio-charts.png")),
                                              tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".png");
  rememberFolderOf(path);
  QString error;
  const bool ok = m_dashboard->exportDashboard(path, {}, QSize(1800, 1050), 96, &error);
  statusBar()->showMessage(ok ? tr("Charts saved to %1").arg(path) : tr("Could not export the charts: %1").arg(error),
                           ok ? 5000 : 0);
}

void MainWindow::addRecentFile(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  m_recentFiles.removeAll(abs);
  m_recentFiles.prepend(abs);
  while (m_recentFiles.size() > kMaxRecent) m_recentFiles.removeLast();
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  QMenu* menu = m_actions.recent;
  menu->clear();
  for (const QString& path : std::as_const(m_recentFiles))
    menu->addAction(QFileInfo(path).fileName(), this, [this, path] { openRecentFile(path); })->setToolTip(path);
  menu->setEnabled(!m_recentFiles.isEmpty());
}

void MainWindow::openRecentFile(const QString& path) {
  // Configs fill the experiment panel; experiments, run bundles and run folders add their runs.
  if (path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive) || !m_runsOpener)
    openConfigFile(path);
  else if (m_runsOpener(path))
    addRecentFile(path);
}

void MainWindow::restoreSettings() {
  QSettings s = appSettings();
  if (s.value(QStringLiteral("view/dark"), false).toBool()) m_actions.dark->trigger();
  restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(s.value(QStringLiteral("window/state")).toByteArray());
  m_recentFiles = s.value(QStringLiteral("files/recent")).toStringList();
  rebuildRecentMenu();
  m_runsPanel->setMaxConcurrent(s.value(QStringLiteral("runs/maxConcurrent"), 1).toInt());
  const double scale = s.value(QStringLiteral("view/presentationScale"), 1.0).toDouble();
  if (scale != 1.0) setPresentationScale(scale);
  const QString layout = s.value(QStringLiteral("view/charts")).toString();
  setChartLayout(layout == QLatin1String("grid")   ? ChartLayout::Grid
                 : layout == QLatin1String("tabs") ? ChartLayout::Tabs
                                                   : ChartLayout::Automatic);
  const QByteArray last = s.value(QStringLiteral("experiment/last")).toByteArray();
  if (!last.isEmpty()) {
    const QJsonDocument doc = QJsonDocument::fromJson(last);
    RunConfig c;
    try {
      applyConfigJson(c, doc.object());
      m_experiment->setConfig(c);
    } catch (const std::exception&) {
      // A config from an older version with a key that no longer exists: start from defaults.
    }
  }
}

void MainWindow::saveSettings() {
  QSettings s = appSettings();
  s.setValue(QStringLiteral("window/geometry"), saveGeometry());
  s.setValue(QStringLiteral("window/state"), saveState());
  s.setValue(QStringLiteral("view/dark"), currentTheme() == Theme::Dark);
  s.setValue(QStringLiteral("files/recent"), m_recentFiles);
  s.setValue(QStringLiteral("runs/maxConcurrent"), m_runsPanel->maxConcurrent());
  s.setValue(QStringLiteral("view/presentationScale"), m_presentationScale);
  s.setValue(QStringLiteral("view/charts"), m_chartLayout == ChartLayout::Grid   ? QStringLiteral("grid")
                                            : m_chartLayout == ChartLayout::Tabs ? QStringLiteral("tabs")
                                                                                 : QStringLiteral("auto"));
  s.setValue(QStringLiteral("experiment/last"),
             QJsonDocument(configToJson(m_experiment->config())).toJson(QJsonDocument::Compact));
}

}  // namespace amp::ui
