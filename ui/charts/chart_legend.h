// The legend of a chart that compares runs, drawn by us rather than by QLegend: QLegend puts
// every entry in one row and elides each label to fit, so five runs read "■ ■ ■ ■ t…" and
// three twins "spirals… spirals… spirals…". This one wraps the entries over as many rows as
// they need, shows a prefix all names share once as a heading (the varying part stays whole),
// draws each run's line style, greys out hidden runs, and tells the view which run a click or
// hover hit (click: hide/show, hover: highlight). It lives in the chart's scene, so every
// export (PNG/SVG/PDF) carries the names too.
#pragma once

#include <QColor>
#include <QFont>
#include <QGraphicsObject>
#include <QList>
#include <QString>

namespace amp::ui {

struct LegendEntry {
  // Gradient: a colour bar of the heat maps' scale (heatColor), low on the left.
  enum class Glyph { Line, Dot, Triangle, Gradient };
  QString label;
  QColor color;
  Qt::PenStyle style = Qt::SolidLine;
  Glyph glyph = Glyph::Line;
  int runId = -1;       // -1: a key ("test loss"), not a run: clicks do nothing
  bool hidden = false;  // a run hidden from the charts: drawn greyed, a click shows it again
};

class ChartLegend : public QGraphicsObject {
  Q_OBJECT

 public:
  explicit ChartLegend(QGraphicsItem* parent = nullptr);

  void setEntries(const QString& heading, const QList<LegendEntry>& entries);
  const QList<LegendEntry>& entries() const { return m_entries; }
  QString heading() const { return m_heading; }
  // The label texts as drawn (after any eliding), heading first when there is one.
  QStringList drawnTexts() const;
  bool isEmpty() const { return m_entries.isEmpty(); }

  void setFont(const QFont& font);
  QFont font() const { return m_font; }
  void setTextColor(const QColor& color);
  void setHighlightedRun(int runId);  // drawn bold; -1 for none

  // Lays the entries out in rows of at most `width` and returns the height they need (at most
  // `maxHeight`: entries beyond it are summed up as "+N more").
  double layoutFor(double width, double maxHeight);
  // The entry (index into entries()) under `pos` in item coordinates, or -1.
  int entryAt(const QPointF& pos) const;
  QRectF entryRect(int index) const { return m_rects.value(index); }

  QRectF boundingRect() const override { return QRectF(0, 0, m_width, m_height); }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QString m_heading;
  QList<LegendEntry> m_entries;
  QList<QRectF> m_rects;     // per entry; empty rect when not shown (overflow)
  QStringList m_drawn;       // per entry, the text drawn
  QString m_more;            // "+3 more" or ""
  QRectF m_moreRect, m_headingRect;
  QFont m_font;
  QColor m_textColor = Qt::black;
  int m_highlighted = -1;
  double m_width = 0, m_height = 0;
};

// Splits run names into what they share and what differs: {"spirals · fp32", "spirals · fp16"}
// gives {"spirals ·", {"fp32", "fp16"}}. The shared part ends at a separator (space, "/", "·",
// ":", "-", "_") and is only taken when every name keeps a non-empty rest; identical names get
// " #<id>" appended so that twins stay apart.
struct LegendNames {
  QString common;
  QStringList distinct;
};
LegendNames splitLegendNames(const QStringList& names, const QList<int>& ids);

}  // namespace amp::ui
