// Writes a painting to PNG, SVG or PDF. Every chart, panel and the whole dashboard export through
// this one function, so all three formats get the same opaque background, size and DPI rules
// (TensorBoard's SVG export leaves out titles and axes: tensorboard#2400; ours paints the whole
// chart, text kept as text in SVG and PDF).
#pragma once

#include <QColor>
#include <QRectF>
#include <QSize>
#include <QString>
#include <functional>
#include <optional>

class QPainter;

namespace amp::ui {

enum class ExportFormat { Png, Svg, Pdf };

// "png" / "svg" / "pdf" (any case); empty `format` takes the path's suffix.
std::optional<ExportFormat> exportFormatFor(const QString& path, const QString& format = {});

// Paints into `target`, a rectangle in logical pixels (96 per inch).
using PaintFunction = std::function<void(QPainter* painter, const QRectF& target)>;

struct ExportOptions {
  QSize size{1200, 800};  // PNG: pixels of the image; SVG/PDF: logical pixels of the page
  int dpi = 96;           // PNG only: text and lines grow with dpi / 96, like a print
  QColor background = Qt::white;
  QString title;  // SVG <title>, PDF document title
};

// Returns false (and writes nothing useful) when the file cannot be written.
bool exportPainting(const QString& path, ExportFormat format, const ExportOptions& options,
                    const PaintFunction& paint);

}  // namespace amp::ui
