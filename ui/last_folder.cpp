#include "ui/last_folder.h"

#include <QDir>
#include <QFileInfo>

#include "ui/app_settings.h"

namespace amp::ui {

namespace {

bool g_persistent = false;
bool g_loaded = false;
QString g_folder;


}  // namespace

void setLastFolderPersistent(bool persistent) {
  g_persistent = persistent;
  g_loaded = false;
}

QString lastFolder() {
  if (!g_loaded) {
    g_loaded = true;
    if (g_persistent) {
      const QString saved = appSettings().value(QStringLiteral("files/lastFolder")).toString();
      if (!saved.isEmpty() && QFileInfo(saved).isDir()) g_folder = saved;
    }
  }
  // A folder removed since: home, not a dialog opening on a path that does not exist.
  return !g_folder.isEmpty() && QFileInfo(g_folder).isDir() ? g_folder : QDir::homePath();
}

QString inLastFolder(const QString& fileName) { return QDir(lastFolder()).filePath(fileName); }

void rememberFolderOf(const QString& path) {
  if (path.isEmpty()) return;
  const QFileInfo info(path);
  const QString folder = info.isDir() ? info.absoluteFilePath() : info.absolutePath();
  g_loaded = true;
  g_folder = folder;
  if (g_persistent) appSettings().setValue(QStringLiteral("files/lastFolder"), folder);
}

}  // namespace amp::ui
