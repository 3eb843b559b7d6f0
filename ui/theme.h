// Light and dark palettes (Fusion style, so both look the same on every desktop) and the colours
// runs are drawn in, chosen to stay distinguishable on either background.
#pragma once

#include <QColor>
#include <QFont>
#include <QIcon>
#include <QStyle>

namespace amp::ui {

enum class Theme { Light, Dark };

void applyTheme(Theme theme);  // sets the application's style and palette
Theme currentTheme();
constexpr int kRunColorCount = 16;
// Cycles through kRunColorCount distinct colours: the precisions' own, then the second palette
// (ui/run_colors.h). New runs take theirs from colorForNewRun instead.
QColor runColor(int index);
QColor errorColor();           // invalid fields, failed runs
QColor warningColor();         // diverged runs, skipped steps
// A warning box's fill and text in the current theme (pale amber with dark text in light, dark
// amber with light text in dark): a fixed pale fill left the dark palette's light text unreadable.
QColor warningBackground();
QColor warningText();

// A standard icon drawn for the current palette: Fusion's glyphs are dark grey, invisible on the
// dark palette's tool bar, so there their dark pixels are lightened (hue and alpha kept).
// `base` times `factor`, in points where the font has a point size, else in pixels (never 0).
QFont scaledFont(const QFont& base, double factor);

QIcon themedIcon(QStyle* style, QStyle::StandardPixmap which);
// The twin-runs action's icon: three loss curves in the fp32, fp16 and bf16 colours, legible in
// both palettes (the standard list-view icon, lightened for dark, read as a hollow square).
QIcon twinRunsIcon();

}  // namespace amp::ui
