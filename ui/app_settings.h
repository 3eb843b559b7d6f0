// Where the app keeps what persists between sessions (window layout, palette, recent files, the
// last folder): one QSettings scope for every reader and writer.
#pragma once

#include <QSettings>

namespace amp::ui {

inline QSettings appSettings() { return QSettings(QStringLiteral("AMP Studio"), QStringLiteral("ampstudio")); }

}  // namespace amp::ui
