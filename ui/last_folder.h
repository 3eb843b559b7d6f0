// The folder every file dialog starts in: where the user last opened or saved a file. The
// dialogs started in the working directory each time, so saving a run bundle next to the
// experiment saved a minute before meant browsing to it again (issue 25).
#pragma once

#include <QString>

namespace amp::ui {

// Whether the folder is kept across sessions (QSettings "files/lastFolder"); off for tests and
// screenshots, which then keep it in memory only.
void setLastFolderPersistent(bool persistent);
// The last folder, or the home folder before any file was chosen.
QString lastFolder();
// `fileName` in that folder: a save dialog's proposed path.
QString inLastFolder(const QString& fileName);
// The folder of `path` (a file) or `path` itself (a folder) becomes the last folder.
void rememberFolderOf(const QString& path);

}  // namespace amp::ui
