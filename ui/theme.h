// Light and dark palettes (Fusion style, so both look the same on every desktop) and the colours
// runs are drawn in, chosen to stay distinguishable on either background.
#pragma once

#include <QColor>

namespace amp::ui {

enum class Theme { Light, Dark };

void applyTheme(Theme theme);  // sets the application's style and palette
Theme currentTheme();
constexpr int kRunColorCount = 16;
QColor runColor(int index);    // cycles through kRunColorCount distinct colours
QColor errorColor();           // invalid fields, failed runs
QColor warningColor();         // diverged runs, skipped steps

}  // namespace amp::ui
