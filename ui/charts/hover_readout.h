// The hover readout: a crosshair at the pointer's step with every run's value there, drawn
// inside the chart (as TensorBoard and W&B do) rather than as a QToolTip. Tooltips time out and,
// without a window manager (Xvfb, some projector set-ups), vanished within a second while the
// pointer stayed on the line (issue 25); the readout stays while the pointer is over the plot.
#pragma once

#include <QColor>
#include <QFont>
#include <QGraphicsItem>
#include <QList>
#include <QString>
#include <QTextDocument>
#include <functional>

class QChart;
class QAbstractSeries;

namespace amp::ui {

// One series' value at the crosshair: the plotted point nearest the pointer's x.
struct ReadoutRow {
  QString label;  // "fp16 amp" or, when a run has several series here, "fp16 amp · raw loss"
  QColor color;
  double x = 0;   // the point's own x (a run may have no point at the crosshair's step)
  double y = 0;   // in data units (log axes already undone)
  QString aside;   // a companion series' value shown with this one ("raw 0.2263")
  bool secondaryAxis = false;
  bool nearest = false;  // the series closest to the pointer: emphasised
  QPointF position;      // where the point is drawn, chart coordinates
};

// The rows at chart position `pointer`: for each visible line or area series of `chart` (not
// scatter markers, not those tagged "ampNoHover"), its point nearest in x, if that point lies
// within `maxDx` pixels of the pointer's x (a run that has not reached this step has no row).
// `toData` undoes the view's log transform for a series. A series tagged "ampAside" (the raw
// loss under the smoothed one) joins its run's other row as an aside, not a row of its own.
// Rows come sorted as they are drawn: primary-axis values high to low, then secondary-axis ones.
QList<ReadoutRow> readoutRowsAt(QChart* chart, const QPointF& pointer, double maxDx,
                                const std::function<double(const QAbstractSeries*, double)>& toData);

// Rich text of the readout: a header ("step 120") and one line per row with a colour swatch.
// Rows whose x differs from the header's say where their value is from. At most `maxRows`.
QString readoutHtml(const QString& xLabel, const QList<ReadoutRow>& rows, int maxRows = 10);

class HoverReadout : public QGraphicsItem {
 public:
  explicit HoverReadout(QGraphicsItem* parent);

  // Shows the crosshair at chart x `lineX` (NaN: none, e.g. heat maps) across `plot` with a dot
  // per row, and the text box beside `pointer`: inside `plot` where it fits, else inside
  // `bounds` (the whole chart; a narrow grid cell's plot is narrower than three runs' rows).
  void showReadout(const QRectF& plot, const QRectF& bounds, const QPointF& pointer, double lineX,
                   const QString& html, const QList<ReadoutRow>& dots);
  void setLook(const QFont& font, const QColor& text, const QColor& background, const QColor& line);
  QString html() const { return m_html; }
  QRectF boxRect() const { return m_box; }

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QRectF m_plot;
  QRectF m_box;
  double m_lineX = 0;
  bool m_hasLine = false;
  QString m_html;
  QList<ReadoutRow> m_dots;
  QTextDocument m_doc;
  QColor m_text, m_background, m_line;
};

}  // namespace amp::ui
