// PNG through QImage, SVG through QSvgGenerator, PDF through QPdfWriter (one page, no margins),
// each rendered into memory first and then written the way every output of ours is written
// (writeFileAtomically: a temporary file renamed over the target once whole, special files
// refused, symlinks followed): an export that fails, or a disk that fills, never leaves half a
// file or destroys the one that was there.
#include "ui/charts/chart_export.h"

#include <QBuffer>
#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>

#include "engine/core/checked_file.h"

namespace amp::ui {

std::optional<ExportFormat> exportFormatFor(const QString& path, const QString& format) {
  const QString f = (format.isEmpty() ? QFileInfo(path).suffix() : format).toLower();
  if (f == QLatin1String("png")) return ExportFormat::Png;
  if (f == QLatin1String("svg")) return ExportFormat::Svg;
  if (f == QLatin1String("pdf")) return ExportFormat::Pdf;
  return std::nullopt;
}

namespace {

bool exportPng(QBuffer& out, const ExportOptions& o, const PaintFunction& paint) {
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
  return image.save(&out, "PNG");
}

bool exportSvg(QBuffer& out, const ExportOptions& o, const PaintFunction& paint) {
  QSvgGenerator generator;
  generator.setOutputDevice(&out);
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

bool exportPdf(QBuffer& out, const ExportOptions& o, const PaintFunction& paint) {
  QPdfWriter writer(&out);
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

std::optional<QByteArray> renderPainting(ExportFormat format, const ExportOptions& options,
                                         const PaintFunction& paint) {
  if (options.size.isEmpty()) return std::nullopt;
  QByteArray bytes;
  QBuffer out(&bytes);
  if (!out.open(QIODevice::WriteOnly)) return std::nullopt;
  bool ok = false;
  switch (format) {
    case ExportFormat::Png:
      ok = exportPng(out, options, paint);
      break;
    case ExportFormat::Svg:
      ok = exportSvg(out, options, paint);
      break;
    case ExportFormat::Pdf:
      ok = exportPdf(out, options, paint);
      break;
  }
  out.close();
  if (!ok || bytes.isEmpty()) return std::nullopt;
  return bytes;
}

bool exportPainting(const QString& path, ExportFormat format, const ExportOptions& options,
                    const PaintFunction& paint, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (path.isEmpty()) return fail(QStringLiteral("no file name"));
  const std::optional<QByteArray> bytes = renderPainting(format, options, paint);
  if (!bytes) return fail(path + QStringLiteral(": the chart could not be rendered (size %1x%2)")
                                     .arg(options.size.width())
                                     .arg(options.size.height()));
  try {
    writeFileAtomically(path.toStdString(), std::string_view(bytes->constData(), std::size_t(bytes->size())));
  } catch (const std::exception& e) {  // OutputError: the path and the system's reason
    return fail(QString::fromStdString(e.what()));
  }
  return true;
}

}  // namespace amp::ui
