#include "ui/theme.h"

#include <QApplication>
#include <QImage>
#include <QPainter>
#include <QPainterPath>
#include <QPalette>
#include <QPixmap>
#include <QStyle>
#include <QStyleFactory>
#include <algorithm>

#include "ui/run_colors.h"

namespace amp::ui {

namespace {
Theme g_theme = Theme::Light;

QPalette darkPalette() {
  QPalette p;
  const QColor window(45, 45, 48), base(30, 30, 32), text(220, 220, 220), disabled(120, 120, 120);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(40, 40, 43));
  p.setColor(QPalette::ToolTipBase, QColor(60, 60, 64));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::white);
  p.setColor(QPalette::Link, QColor(100, 170, 255));
  p.setColor(QPalette::Highlight, QColor(42, 110, 190));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Light, QColor(70, 70, 74));
  p.setColor(QPalette::Midlight, QColor(60, 60, 64));
  p.setColor(QPalette::Mid, QColor(38, 38, 40));
  p.setColor(QPalette::Dark, QColor(25, 25, 27));
  p.setColor(QPalette::Shadow, Qt::black);
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, disabled);
  return p;
}
}  // namespace

void applyTheme(Theme theme) {
  g_theme = theme;
  const bool fusion = QApplication::style()->name().compare(QLatin1String("fusion"), Qt::CaseInsensitive) == 0;
  if (!fusion)
    if (auto* style = QStyleFactory::create(QStringLiteral("Fusion"))) QApplication::setStyle(style);
  QApplication::setPalette(theme == Theme::Dark ? darkPalette() : QApplication::style()->standardPalette());
}

Theme currentTheme() { return g_theme; }

QColor runColor(int index) {
  // The five precisions' colours, then the second palette (ui/run_colors.h): sixteen colours
  // that stand out on both themes before one repeats (the charts then change the line style).
  const int i = ((index % kRunColorCount) + kRunColorCount) % kRunColorCount;
  return i < 5 ? precisionColor(PrecisionFamily(i)) : extraRunColor(i - 5);
}

QIcon themedIcon(QStyle* style, QStyle::StandardPixmap which) {
  const QIcon standard = style->standardIcon(which);
  if (g_theme != Theme::Dark) return standard;
  QIcon out;
  QList<QSize> sizes = standard.availableSizes();
  if (sizes.isEmpty()) sizes = {QSize(16, 16), QSize(24, 24), QSize(32, 32)};
  for (const QSize& size : std::as_const(sizes)) {
    for (QIcon::Mode mode : {QIcon::Normal, QIcon::Disabled}) {
      QImage img = standard.pixmap(size, mode).toImage().convertToFormat(QImage::Format_ARGB32);
      for (int y = 0; y < img.height(); ++y) {
        auto* row = reinterpret_cast<QRgb*>(img.scanLine(y));
        for (int x = 0; x < img.width(); ++x) {
          QColor c = QColor::fromRgba(row[x]);
          float h, s, l, a;
          c.getHslF(&h, &s, &l, &a);
          // Mirror the lightness of dark pixels; disabled icons end up mid-grey, still dimmer.
          if (l < 0.5f) c.setHslF(h, s, mode == QIcon::Disabled ? 0.45f : 1.0f - l, a);
          row[x] = c.rgba();
        }
      }
      out.addPixmap(QPixmap::fromImage(img), mode);
    }
  }
  return out;
}

QIcon twinRunsIcon() {
  QIcon out;
  for (const int size : {16, 24, 32, 48}) {
    QPixmap pixmap(size, size);
    pixmap.fill(Qt::transparent);
    QPainter p(&pixmap);
    p.setRenderHint(QPainter::Antialiasing);
    const double s = size / 16.0;
    const PrecisionFamily families[] = {PrecisionFamily::Fp32, PrecisionFamily::Fp16, PrecisionFamily::Bf16};
    for (int i = 0; i < 3; ++i) {
      // Falling curves, one above the other: three runs of one experiment.
      const double y0 = (3.0 + 3.5 * i) * s, drop = 4.0 * s;
      QPainterPath curve(QPointF(1.5 * s, y0));
      curve.cubicTo(QPointF(5 * s, y0 + drop), QPointF(9 * s, y0 + drop), QPointF(14.5 * s, y0 + drop));
      QPen pen(precisionColor(families[i]), std::max(1.5, 1.8 * s));
      pen.setCapStyle(Qt::RoundCap);
      p.setPen(pen);
      p.drawPath(curve);
    }
    p.end();
    out.addPixmap(pixmap);
  }
  return out;
}

QColor errorColor() { return g_theme == Theme::Dark ? QColor(255, 110, 100) : QColor(200, 30, 30); }
QColor warningColor() { return g_theme == Theme::Dark ? QColor(255, 190, 80) : QColor(190, 110, 0); }
QColor warningBackground() { return g_theme == Theme::Dark ? QColor(0x4a, 0x3a, 0x12) : QColor(0xff, 0xf3, 0xcd); }
QColor warningText() { return g_theme == Theme::Dark ? QColor(0xf6, 0xe7, 0xc1) : QColor(0x4d, 0x3a, 0x00); }

QFont scaledFont(const QFont& base, double factor) {
  QFont out = base;
  if (base.pointSizeF() > 0) out.setPointSizeF(base.pointSizeF() * factor);
  else out.setPixelSize(std::max(1, int(base.pixelSize() * factor + 0.5)));
  return out;
}

}  // namespace amp::ui
