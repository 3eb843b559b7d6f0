// PNG through QImage, SVG through QSvgGenerator, PDF through QPdfWriter (one page, no margins).
#include "ui/charts/chart_export.h"

#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>

namespace amp::ui {

std::optional<ExportFormat> exportFormatFor(const QString& path, const QString& format) {
  const QString f = (format.isEmpty() ? QFileInfo(path).suffix() : format).toLower();
  if (f == QLatin1String("png")) return ExportFormat::Png;
  if (f == QLatin1String("svg")) return ExportFormat::Svg;
  if (f == QLatin1String("pdf")) return ExportFormat::Pdf;
  return std::nullopt;
}

namespace {

bool exportPng(const QString& path, const ExportOptions& o, const PaintFunction& paint) {
  QImage image(o.size, QImage::Format_ARGB32_Premultiplied);
  if (image.isNull()) return false;
  const int dpi = o.dpi > 0 ? o.dpi : 96;
  const int dotsPerMeter = qRound(dpi / 0.0254);
  image.setDotsPerMeterX(dotsPerMeter);
  image.setDotsPerMeterY(dotsPerMeter);
  image.fill(o.background);
  {
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setRenderHint(QPainter::TextAntialiasing);
    // Lay out at the logical size, draw scaled: at 300 dpi the same chart, sharper, like a print.
    const double scale = dpi / 96.0;
    painter.scale(scale, scale);
    paint(&painter, QRectF(0, 0, o.size.width() / scale, o.size.height() / scale));
  }
  return image.save(path, "PNG");
}

bool exportSvg(const QString& path, const ExportOptions& o, const PaintFunction& paint) {
  QSvgGenerator generator;
  generator.setFileName(path);
  generator.setSize(o.size);
  generator.setViewBox(QRect(QPoint(0, 0), o.size));
  generator.setResolution(96);
  generator.setTitle(o.title);
  generator.setDescription(QStringLiteral("AMP Studio chart"));
  QPainter painter;
  if (!painter.begin(&generator)) return false;
  const QRectF target(QPointF(0, 0), QSizeF(o.size));
  painter.fillRect(target, o.background);  // SVG is transparent unless painted
  paint(&painter, target);
  return painter.end();
}

bool exportPdf(const QString& path, const ExportOptions& o, const PaintFunction& paint) {
  QPdfWriter writer(path);
  writer.setResolution(96);  // painter units = logical pixels
  writer.setTitle(o.title);
  writer.setCreator(QStringLiteral("AMP Studio"));
  const QSizeF points(o.size.width() * 72.0 / 96.0, o.size.height() * 72.0 / 96.0);
  writer.setPageSize(QPageSize(points, QPageSize::Point, QString(), QPageSize::ExactMatch));
  writer.setPageMargins(QMarginsF(0, 0, 0, 0));
  QPainter painter;
  if (!painter.begin(&writer)) return false;
  const QRectF target(QPointF(0, 0), QSizeF(o.size));
  painter.fillRect(target, o.background);
  paint(&painter, target);
  return painter.end();
}

}  // namespace

bool exportPainting(const QString& path, ExportFormat format, const ExportOptions& options,
                    const PaintFunction& paint) {
  if (path.isEmpty() || options.size.isEmpty()) return false;
  switch (format) {
    case ExportFormat::Png:
      return exportPng(path, options, paint);
    case ExportFormat::Svg:
      return exportSvg(path, options, paint);
    case ExportFormat::Pdf:
      return exportPdf(path, options, paint);
  }
  return false;
}

}  // namespace amp::ui
