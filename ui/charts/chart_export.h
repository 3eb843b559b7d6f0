// Writes a painting to PNG, SVG or PDF. Every chart, panel and the whole dashboard export through
// this one function, so all three formats get the same opaque background, size and DPI rules
// (TensorBoard's SVG export leaves out titles and axes: tensorboard#2400; ours paints the whole
// chart, text kept as text in SVG and PDF).
#pragma once

#include <QByteArray>
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

// The painting as a file's bytes in `format`, or nothing when it cannot be rendered.
std::optional<QByteArray> renderPainting(ExportFormat format, const ExportOptions& options,
                                         const PaintFunction& paint);

// Renders the painting, then writes it as all our outputs are written (writeFileAtomically):
// whole or not at all, an earlier file at `path` replaced only by a complete one, a FIFO, device
// or other special file refused. Returns false on failure, with the reason in `error` (one line
// naming the file) when given.
bool exportPainting(const QString& path, ExportFormat format, const ExportOptions& options,
                    const PaintFunction& paint, QString* error = nullptr);

}  // namespace amp::ui
