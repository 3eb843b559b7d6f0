// The one plotting widget the rest of the UI talks to. Wraps QChartView + QChart (Qt Charts is
// deprecated after Qt 6.10, so nothing outside ui/charts touches Qt Charts directly): titles,
// legend, light/dark theme, auto-range, x zoom (rubber band, wheel), pan (middle/right drag,
// arrows), reset (double-click, Home), an optional log y axis, a hover crosshair with every run's
// value at that step, and
// export to PNG/SVG/PDF with background, titles, axis labels and legend included.
//
// Log y is drawn as log_base(value) on a linear axis labelled in powers of the base (2¹⁶, 0.01):
// such labels read better than QLogValueAxis's printf formats, and QLogValueAxis drops a whole
// series holding one value <= 0. Panels feed it data through decimateMinMax(..., yDomain()).
//
// Refresh protocol for a panel: range = decimationRange(dataXMin, dataXMax); replace() each
// series with decimated points; then applyAutoRange(dataXMin, dataXMax). Re-run it when
// viewChanged() is emitted (zoom, pan, resize, log toggle, export at another size).
#pragma once

#include <QChartView>
#include <QHash>
#include <QPointer>
#include <functional>

#include "ui/charts/chart_export.h"
#include "ui/charts/chart_legend.h"
#include "ui/charts/decimation.h"
#include "ui/charts/hover_readout.h"

class QAbstractAxis;
class QAbstractSeries;
class QCategoryAxis;
class QGraphicsRectItem;
class QGraphicsSimpleTextItem;
class QGraphicsTextItem;
class QValueAxis;
class QXYSeries;

namespace amp::ui {

// n in superscript digits ("⁻¹⁴"), for axis labels like 2⁻¹⁴ and 10⁵.
QString superscript(int n);

class ChartView : public QChartView {
  Q_OBJECT

 public:
  enum class Theme { Light, Dark };

  explicit ChartView(QWidget* parent = nullptr);

  // --- content -------------------------------------------------------------------------------
  void setTitle(const QString& title);
  QString title() const;
  void setAxisTitles(const QString& x, const QString& y);
  QValueAxis* xAxis() const { return m_x; }
  QValueAxis* yAxis() const;  // the primary y axis in use (a QCategoryAxis while log)
  // A linear axis on the right, auto-ranged like the primary one.
  QValueAxis* addSecondaryYAxis(const QString& title);
  void hideSecondaryYAxis();  // until the next addSecondaryYAxis()
  QValueAxis* secondaryYAxis() const { return m_ySecondary; }
  // Replaces the step axis (e.g. by an exponent axis). nullptr: no x value axis (bar charts).
  void setXAxis(QValueAxis* axis);
  // Adds an axis the panel manages itself (bar categories); styled with the theme.
  void addAxis(QAbstractAxis* axis, Qt::Alignment alignment);
  // Attaches to x and to `y` (nullptr: the primary y, which follows the log toggle).
  void addSeries(QAbstractSeries* series, QAbstractAxis* y = nullptr);
  void removeAllSeries();
  void setLegendEntryVisible(QAbstractSeries* series, bool visible);
  // Replaces QLegend by a wrapping legend of runs (and keys): see ChartLegend. A click on a run
  // emits legendRunClicked, hovering one legendRunHovered (-1 when the pointer leaves it).
  void setRunLegend(const QString& heading, const QList<LegendEntry>& entries);
  ChartLegend* runLegend() const { return m_runLegend; }
  // The run entry at a point in view coordinates, or -1.
  int legendRunAt(const QPoint& viewPos) const;
  // Centred message over the plot area ("no test set"); empty hides it. Exported too.
  void setPlaceholder(const QString& text);
  QString placeholder() const { return m_placeholderText; }
  // Small boxed text in a corner of the plot (figures the chart explains). Exported too.
  void setCaption(const QString& text, Qt::Alignment corner = Qt::AlignTop | Qt::AlignLeft);
  // Below the plot (above the run legend) instead of in a corner of it: a caption of several
  // lines covered 20-40% of the histogram's plot, all of it in a small window.
  void setCaptionBelowPlot(bool below);
  bool captionBelowPlot() const { return m_captionBelow; }
  QRectF captionSceneRect() const;  // where it is drawn (empty when hidden)
  double captionHeight() const;  // 0 when hidden
  QString caption() const;       // "" when hidden
  // Replaces the primary (linear) y axis, e.g. by an exponent axis; turns log y off.
  void setYAxis(QValueAxis* axis);
  // Keeps 0 inside the automatic range of this y axis (bytes, samples/s).
  void setIncludeZero(QAbstractAxis* yAxis, bool include);
  // The automatic range of this (linear) y axis spans at least `span` units, centred on the data
  // and kept within [floor, ceiling]: accuracies of 82.7 and 82.9% on an 82.7-82.9 axis made 0.2
  // points look like a gulf (issue 42 item 7). 0: no minimum.
  void setMinimumSpan(QAbstractAxis* yAxis, double span, double floor = -qInf(), double ceiling = qInf());
  // Lets panels draw extra items (a heat map) above the plot background.
  QChart* chart() const { return m_chart; }

  // series->replace(points), telling Qt Charts about it once per refresh: applyAutoRange()
  // changes axis ranges after the replace, and Qt re-lays out (re-strokes) every series on each
  // of those changes, so a series whose axis range moves is left to that relayout alone.
  void replacePoints(QXYSeries* series, const QList<QPointF>& points);

  // --- log y ---------------------------------------------------------------------------------
  void setLogYAllowed(bool allowed, YDomain logDomain = YDomain::Log10);
  bool isLogYAllowed() const { return m_logAllowed; }
  void setLogY(bool on);
  bool isLogY() const { return m_logY; }
  YDomain yDomain() const { return m_logY ? m_logDomain : YDomain::Linear; }

  // --- ranges --------------------------------------------------------------------------------
  DecimationRange decimationRange(double dataXMin, double dataXMax) const;
  void applyAutoRange(double dataXMin, double dataXMax);
  bool isAutoRange() const { return m_autoX && m_autoY; }
  bool isAutoY() const { return m_autoY; }
  // Sets [lo, hi] widened to round tick values (about `ticks` of them).
  void setNiceRange(QValueAxis* axis, double lo, double hi, int ticks = 5);
  // A 1, 2 or 5 x 10^k step cutting `span` into about `ticks` - 1 parts (0 if none).
  static double niceStep(double span, int ticks);
  void setInteractive(bool on) { m_interactive = on; }  // zoom and pan (off for bar charts)
  // Replaces the crosshair readout (heat maps, bars): value coordinates in, rich text out.
  void setHoverTextProvider(std::function<QString(const QPointF&)> provider);
  // What the hover readout shows now (rich text; empty when hidden), and where.
  QString hoverText() const;
  QRectF hoverBoxSceneRect() const;

  // --- theme ---------------------------------------------------------------------------------
  // Presentation mode: fonts (title, ticks, axis titles, legend, caption, placeholder) times
  // `factor`; panels also thicken their lines (they rebuild on themeChanged). 1.0 is normal.
  void setPresentationScale(double factor);
  double presentationScale() const { return m_presentationScale; }
  void setTheme(Theme theme);
  Theme theme() const { return m_theme; }
  QColor backgroundColor() const;
  QColor textColor() const;
  QColor gridColor() const;

  // --- export --------------------------------------------------------------------------------
  // Lays the chart out at target's size, paints it, and lays it back out at the view's size.
  // Files are written by the panel that owns the chart (ChartPanel::exportTo).
  void renderChart(QPainter* painter, const QRectF& target);

 public slots:
  void resetView();
  void toggleLogY() { setLogY(!m_logY); }

 signals:
  void viewChanged();  // the visible x range or pixel width changed: re-decimate
  void logYToggled(bool on);
  void themeChanged();  // also on a new presentation scale: panels rebuild their pens
  void legendRunClicked(int runId);
  void legendRunHovered(int runId);
  void exportRequested(amp::ui::ExportFormat format);  // from the context menu

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool viewportEvent(QEvent* event) override;  // the pointer leaves the viewport, not the view
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct AxisState {
    bool includeZero = false;
    double minSpan = 0, spanFloor = -qInf(), spanCeiling = qInf();
  };

  static void setPointSize(QFont& font, double points, bool bold = false);
  void applyFonts();
  void layoutRunLegend();
  void updateCompactAxes();
  void updateLabelVisibility();
  void styleAxis(QAbstractAxis* axis) const;
  void applyTheme();
  void onPlotAreaChanged(const QRectF& plotArea);
  void placeOverlays(const QRectF& plotArea);
  void setXRange(double min, double max);
  void setAxisRange(QValueAxis* axis, double min, double max);
  void setRangeWithTicks(QValueAxis* axis, double min, double max, double interval);
  void updateLogLabels();
  void updateXTicks();
  void reapplyLegendVisibility();
  void flushReplaced(const QList<const QAbstractAxis*>& relaidOut);
  void fitYAxis(QValueAxis* axis, bool log);
  void setUserXRange(double min, double max);
  void panBy(double dxPixels, double dyPixels);
  void zoomXAround(double factor, double pixelX);
  void zoomYAround(double factor, double pixelY);
  void showContextMenu(const QPoint& pos);
  void updateHover(const QPoint& pos, bool force = false);
  void hideHover();
  void styleReadout();
  double deviceColumnsPerPixel() const;

  QChart* m_chart;
  QValueAxis* m_x = nullptr;
  QValueAxis* m_yLinear;
  QCategoryAxis* m_yLog;
  QValueAxis* m_ySecondary = nullptr;
  QList<QAbstractSeries*> m_primarySeries;  // follow the log toggle
  QList<QXYSeries*> m_replaced;             // replaced quietly, not yet laid out
  bool m_flushQueued = false;
  QHash<QAbstractAxis*, AxisState> m_axisState;
  QGraphicsTextItem* m_placeholder;
  QString m_placeholderText;
  QGraphicsRectItem* m_captionBox;
  QGraphicsSimpleTextItem* m_caption;
  Qt::Alignment m_captionCorner = Qt::AlignTop | Qt::AlignLeft;
  bool m_captionBelow = false;
  std::function<QString(const QPointF&)> m_hoverProvider;
  HoverReadout* m_readout;
  ChartLegend* m_runLegend;
  int m_hoveredLegendRun = -1;
  bool m_compactAxes = false;  // narrow with two y axes: the secondary's labels are hidden
  bool m_hasData = true;
  double m_presentationScale = 1.0;

  Theme m_theme = Theme::Light;
  YDomain m_logDomain = YDomain::Log10;
  bool m_logAllowed = false;
  bool m_logY = false;
  bool m_autoX = true;
  bool m_autoY = true;
  bool m_interactive = true;
  bool m_labelsBusy = false;
  bool m_inRender = false;
  bool m_viewChangePending = false;
  double m_renderColumnsPerPixel = 0;  // > 0 while rendering for export
  double m_lastPlotWidth = 0;

  // Pan state (middle or right button drag).
  Qt::MouseButton m_panButton = Qt::NoButton;
  QPoint m_panLast;
  QPoint m_panStart;
  bool m_panMoved = false;
  QPoint m_lastHoverPos;
};

}  // namespace amp::ui
