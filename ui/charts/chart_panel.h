// Base of every chart panel: holds the runs to plot, rebuilds series only when the set of
// visible runs (or their names/colours) changes, re-decimates on refresh(), defers that work
// while the panel is hidden (another tab), and exports through its ChartView(s).
#pragma once

#include <QHash>
#include <QImage>
#include <QPen>
#include <QVector>
#include <QWidget>
#include <functional>
#include <span>
#include <vector>

#include "ui/charts/chart_view.h"

class QAbstractSeries;
class QLineSeries;
class QXYSeries;

namespace amp::ui {

struct RunData;
struct RunSeries;

// What the time-series charts put along x: the optimizer step, the (fractional) epoch, or the
// training time in seconds (RunSeries::step, epoch, wallS).
enum class XAxisMode { Step, Epoch, WallTime };

class ChartPanel : public QWidget {
  Q_OBJECT

 public:
  // `name` identifies the panel for Dashboard::exportChart ("loss", "scale", ...).
  ChartPanel(const QString& name, QWidget* parent = nullptr);

  QString name() const { return m_name; }
  // The runs to plot (those with visible == true are drawn). Pointers must stay valid until the
  // next setRuns(); the panel never owns or changes them.
  void setRuns(const QVector<const RunData*>& runs);
  // New data arrived: re-decimate and replace() series. Cheap; deferred while hidden.
  void refresh();
  // The same, now, even while hidden (export, benchmarks).
  void refreshNow();

  ChartView* chartView() const { return m_view; }  // the main chart
  // Step, epoch or training time along x (time-series panels; others ignore it).
  void setXAxisMode(XAxisMode mode);
  XAxisMode xAxisMode() const { return m_xMode; }
  QString xAxisTitle() const;  // "step", "epoch", "training time (s)"
  void setTheme(ChartView::Theme theme);
  // Presentation mode: larger fonts in every view of the panel and thicker lines.
  virtual void setPresentationScale(double factor);
  // Back to automatic ranges in every view (a new lesson's axes fit its runs, not a zoom).
  void resetViews();
  // Thickens the hovered run's lines and dims the others; -1 restores them all.
  void highlightRun(int runId);
  int highlightedRun() const { return m_highlighted; }

  // Paints the panel's chart(s) into `target` (logical pixels); used by every export.
  virtual void render(QPainter* painter, const QRectF& target);
  // Writes the chart (exportPainting); false on failure, with the one-line reason in `error`.
  bool exportTo(const QString& path, const QString& format = {}, QSize size = {}, int dpi = 96,
                QString* error = nullptr);

 public slots:
  void exportInteractively(amp::ui::ExportFormat format);  // asks for a file name

 signals:
  // A legend entry was clicked: the run should be hidden from (or shown in) the charts.
  void runVisibilityToggleRequested(int runId);

 protected:
  // Creates the series for visibleRuns() (the view's old series are already removed).
  virtual void rebuildSeries() = 0;
  // Replaces the series' points from the runs' current data.
  virtual void updateSeries() = 0;
  // Extra views (e.g. a heat map) to theme alongside the main one.
  virtual QList<ChartView*> views() const { return {m_view}; }
  // Forces rebuildSeries() on the next refresh (a panel option changed).
  void invalidateSeries() { m_signature.clear(); }

  const QVector<const RunData*>& runs() const { return m_runs; }
  QVector<const RunData*> visibleRuns() const;
  // The visible run with this id; else the newest visible run that has histograms (the one just
  // started), else the newest: what the histogram panels show when no run was chosen.
  const RunData* visibleRunOrNewestWithHistograms(int id) const;
  // Wires a view's signals (re-decimate on zoom/resize, context-menu export).
  void connectView(ChartView* view);

  void showEvent(QShowEvent* event) override;

  // Helpers shared by the panels.
  static QColor runColor(const RunData* run, int index);
  // Past the 16 colours of ui::runColor the line style changes too (solid, dash, dot, dash-dot),
  // so run 17 is not mistaken for run 1.
  static Qt::PenStyle runPenStyle(const RunData* run);
  // Runs whose values coincide (coinciding_runs.h): the covered run's line in `lines` (one per
  // run of `runs`, same order; drawn in that order) becomes `haloWidth` wide beneath the one on
  // top, others `width`; returns the legend suffix (" = fp32 (±0.07%)") of each run on top, by
  // id, for updateRunLegend.
  QHash<int, QString> markCoincidingRuns(const QVector<const RunData*>& runs, const QList<QLineSeries*>& lines,
                                         const std::vector<std::span<const double>>& values, double relTol,
                                         int minCommon, qreal width, qreal haloWidth);
  // The faint raw line of run `index` beneath its smoothed one (loss, throughput, lost updates):
  // added to the main view, out of the legend, its value an aside in the hover readout.
  QLineSeries* addRawLine(const RunData* run, int index, const QString& value, float alpha,
                          Qt::PenStyle style = Qt::SolidLine);
  // A pen `width` wide at normal size, thicker in presentation mode.
  QPen pen(const QColor& color, qreal width, Qt::PenStyle style = Qt::SolidLine) const;
  // The wrapping run legend on `view`: every run given (hidden ones greyed, clickable to show
  // again), names split into a shared heading and their distinct parts, then `keys`.
  // `suffix` adds live text to a run's label (" · 3 skipped").
  void updateRunLegend(ChartView* view, const QVector<const RunData*>& runs, const QList<LegendEntry>& keys = {},
                       const std::function<QString(const RunData*)>& suffix = {});
  // First and last step over the visible runs' (step) column; NaN when there are none.
  static std::pair<double, double> stepExtent(const QVector<const RunData*>& runs);
  // The x column of the chosen mode (the step column where a run lacks it), and its extent.
  const QVector<double>& xColumn(const RunSeries& s) const;
  std::pair<double, double> xExtent(const QVector<const RunData*>& runs) const;
  // Sparse step values (evaluations, skipped steps) mapped to the chosen x: the x of the step
  // with that number. Kept per source column, so the span stays valid until the next call.
  std::span<const double> xAtSteps(const RunSeries& s, const QVector<double>& steps);
  // Axis title changes and the panel re-lays its series out for a new x mode.
  virtual void xAxisModeChanged() {}
  // series->replace(decimateMinMax(x, y, range, domain)), skipped when neither the data (size,
  // ends) nor the range changed since the last call for this series: a paused or finished run
  // then costs nothing per refresh. Returns whether it replaced.
  bool setDecimated(QXYSeries* series, std::span<const double> x, std::span<const double> y,
                    const DecimationRange& range, YDomain domain = YDomain::Linear);
  // Makes the next setDecimated() calls replace (the data changed in place, e.g. re-smoothed).
  void forgetDecimation() { m_decimated.clear(); }
  // A marker drawn as an image (QXYSeries::setLightMarker): Qt Charts then blits it per point
  // instead of painting one antialiased ellipse item per point, a quarter of the loss chart's
  // paint time with 400 test-loss dots.
  enum class Marker { Circle, Triangle };
  static QImage markerImage(const QColor& fill, const QColor& border, int size,
                            Marker shape = Marker::Circle);
  // Tags a series for the hover tooltip.
  static void tagSeries(QAbstractSeries* series, const QString& run, const QString& value, bool hover = true);
  // The same, also noting the run's id (legend hover highlights its series).
  static void tagSeries(QAbstractSeries* series, const RunData* run, const QString& value, bool hover = true);

  ChartView* m_view;

 private:
  QString runSignature() const;

  QString m_name;
  QVector<const RunData*> m_runs;
  struct DecimationKey {
    const double* x = nullptr;
    const double* y = nullptr;
    std::size_t n = 0;
    double lastX = 0, lastY = 0, xMin = 0, xMax = 0;
    int columns = 0;
    YDomain domain = YDomain::Linear;
    bool operator==(const DecimationKey&) const = default;
  };
  QHash<const QXYSeries*, DecimationKey> m_decimated;
  QString m_signature;
  bool m_dirty = true;
  bool m_refreshing = false;
  int m_highlighted = -1;
  XAxisMode m_xMode = XAxisMode::Step;
  QHash<const QVector<double>*, QVector<double>> m_mappedX;
};

}  // namespace amp::ui
