#include "ui/charts/hover_readout.h"

#include <QAbstractTextDocumentLayout>
#include <QAbstractAxis>
#include <QAreaSeries>
#include <QChart>
#include <QLineSeries>
#include <QPainter>
#include <algorithm>
#include <cmath>

namespace amp::ui {

namespace {

QString number(double v) { return QString::number(v, 'g', 5); }

QString xText(double x) {
  return QString::number(x, 'f', std::abs(x - std::round(x)) < 1e-9 ? 0 : 2);
}

}  // namespace

QList<ReadoutRow> readoutRowsAt(QChart* chart, const QPointF& pointer, double maxDx,
                                const std::function<double(const QAbstractSeries*, double)>& toData) {
  QList<ReadoutRow> rows;
  QHash<QString, int> seriesPerRun;
  QList<QString> runOfRow, asideOf;
  double bestD2 = qInf();
  int best = -1;
  for (QAbstractSeries* s : chart->series()) {
    if (!s->isVisible() || s->property("ampNoHover").toBool()) continue;
    const auto* area = qobject_cast<const QAreaSeries*>(s);
    const auto* line = area ? area->upperSeries() : qobject_cast<const QLineSeries*>(s);
    if (!line || line->count() == 0) continue;  // scatter markers are not QLineSeries
    const QList<QPointF> points = line->points();
    const double cx = chart->mapToValue(pointer, s).x();
    // Points are sorted by x: the nearest is at the lower bound or just before it.
    const auto it = std::lower_bound(points.begin(), points.end(), cx,
                                     [](const QPointF& p, double x) { return p.x() < x; });
    qsizetype i = it - points.begin();
    if (i == points.size() || (i > 0 && cx - points[i - 1].x() <= points[i].x() - cx)) --i;
    // Decimated data holds each pixel column's minimum and maximum: of the points as near in x
    // (to a pixel), the one nearest the pointer in y.
    QPointF at = chart->mapToPosition(points[i], s);
    const double nearestDx = std::abs(at.x() - pointer.x());
    const qsizetype from = std::max<qsizetype>(0, i - 3), to = std::min(points.size(), i + 4);
    for (qsizetype j = from; j < to; ++j) {
      const QPointF pj = chart->mapToPosition(points[j], s);
      if (std::abs(pj.x() - pointer.x()) <= nearestDx + 1.0 && std::abs(pj.y() - pointer.y()) < std::abs(at.y() - pointer.y())) {
        i = j;
        at = pj;
      }
    }
    if (nearestDx > maxDx) continue;
    QPointF value = points[i];
    if (area && area->lowerSeries() && area->lowerSeries()->count() > i)
      value.ry() -= area->lowerSeries()->at(i).y();  // the layer, not the stack
    ReadoutRow row;
    QString run = s->property("ampRun").toString();
    if (run.isEmpty()) run = s->name();
    const QString what = s->property("ampValue").toString();
    row.label = run;
    if (!what.isEmpty()) row.label += QStringLiteral(" · ") + what;
    row.color = area ? area->brush().color() : line->pen().color();
    row.color.setAlpha(255);
    row.x = value.x();
    row.y = area ? value.y() : toData(s, value.y());
    row.position = at;
    for (const QAbstractAxis* axis : s->attachedAxes())
      row.secondaryAxis = row.secondaryAxis || axis->alignment() == Qt::AlignRight;
    const double dx = at.x() - pointer.x(), dy = at.y() - pointer.y();
    if (dx * dx + dy * dy < bestD2) {
      bestD2 = dx * dx + dy * dy;
      best = int(rows.size());
    }
    rows.append(row);
    runOfRow.append(run);
    asideOf.append(s->property("ampAside").toString());
  }
  // Asides join their run's main row (the raw loss beside the smoothed one); one without a
  // main row stays a row of its own.
  for (int i = 0; i < rows.size();) {
    int main = -1;
    if (!asideOf[i].isEmpty())
      for (int j = 0; j < rows.size() && main < 0; ++j)
        if (asideOf[j].isEmpty() && runOfRow[j] == runOfRow[i]) main = j;
    if (main < 0) {
      ++seriesPerRun[runOfRow[i]];
      ++i;
      continue;
    }
    rows[main].aside = QStringLiteral("%1 %2").arg(asideOf[i], number(rows[i].y));
    const int mainAfter = main > i ? main - 1 : main;
    if (best == i)
      best = mainAfter;
    else if (best > i)
      --best;
    rows.removeAt(i);
    runOfRow.removeAt(i);
    asideOf.removeAt(i);
  }
  // A run with a single series here needs no "· loss": the chart's title says what it is.
  for (int i = 0; i < rows.size(); ++i)
    if (seriesPerRun.value(runOfRow[i]) == 1) rows[i].label = runOfRow[i];
  if (best >= 0) rows[best].nearest = true;
  std::stable_sort(rows.begin(), rows.end(), [](const ReadoutRow& a, const ReadoutRow& b) {
    if (a.secondaryAxis != b.secondaryAxis) return !a.secondaryAxis;
    return a.y > b.y;
  });
  return rows;
}

QString readoutHtml(const QString& xLabel, const QList<ReadoutRow>& rows, int maxRows) {
  if (rows.isEmpty()) return {};
  double headerX = rows.front().x;
  for (const ReadoutRow& r : rows)
    if (r.nearest) headerX = r.x;
  QString html = QStringLiteral("<b>%1 %2</b><table cellspacing='0' cellpadding='0'>")
                     .arg(xLabel.toHtmlEscaped(), xText(headerX));
  const int shown = std::min<int>(maxRows, int(rows.size()));
  for (int i = 0; i < shown; ++i) {
    const ReadoutRow& r = rows[i];
    QString label = r.label.toHtmlEscaped();
    if (r.x != headerX) label += QStringLiteral(" <i>(%1)</i>").arg(xText(r.x));
    QString value = number(r.y);
    if (r.nearest) {
      label = QStringLiteral("<b>%1</b>").arg(label);
      value = QStringLiteral("<b>%1</b>").arg(value);
    }
    if (!r.aside.isEmpty()) value += QStringLiteral(" <i>(%1)</i>").arg(r.aside.toHtmlEscaped());
    html += QStringLiteral("<tr><td><span style='color:%1'>&#9632;</span>&nbsp;%2</td>"
                           "<td align='right'>&nbsp;&nbsp;%3</td></tr>")
                .arg(r.color.name(), label, value);
  }
  html += QStringLiteral("</table>");
  if (rows.size() > shown) html += QObject::tr("<i>+%1 more</i>").arg(rows.size() - shown);
  return html;
}

HoverReadout::HoverReadout(QGraphicsItem* parent) : QGraphicsItem(parent) {
  setZValue(200);  // above the legend and caption
  setAcceptedMouseButtons(Qt::NoButton);
  m_doc.setDocumentMargin(5);
  hide();
}

void HoverReadout::setLook(const QFont& font, const QColor& text, const QColor& background, const QColor& line) {
  m_doc.setDefaultFont(font);
  m_text = text;
  m_background = background;
  m_line = line;
  if (!m_html.isEmpty()) m_doc.setHtml(m_html);
}

void HoverReadout::showReadout(const QRectF& plot, const QRectF& bounds, const QPointF& pointer, double lineX,
                               const QString& html, const QList<ReadoutRow>& dots) {
  prepareGeometryChange();
  m_plot = plot;
  m_hasLine = std::isfinite(lineX);
  m_lineX = lineX;
  m_dots = dots;
  if (html != m_html) {
    m_html = html;
    m_doc.setHtml(html);
  }
  const QSizeF size = m_doc.size();
  // Beside the pointer, on the side with room; never over the plot's edges.
  constexpr double kGap = 14;
  double x = pointer.x() + kGap;
  if (x + size.width() > plot.right()) x = pointer.x() - kGap - size.width();
  const QRectF room = size.width() <= plot.width() ? plot : bounds;
  x = std::clamp(x, room.left(), std::max(room.left(), room.right() - size.width()));
  // Clear of the values it reads out: in the half of the plot away from their dots.
  double dotsY = pointer.y();
  if (!dots.isEmpty()) {
    dotsY = 0;
    for (const ReadoutRow& d : dots) dotsY += d.position.y();
    dotsY /= double(dots.size());
  }
  double y = dotsY > plot.center().y() ? plot.top() + 4 : plot.bottom() - size.height() - 4;
  const QRectF roomY = size.height() <= plot.height() ? plot : bounds;
  y = std::clamp(y, roomY.top(), std::max(roomY.top(), roomY.bottom() - size.height()));
  m_box = QRectF(QPointF(x, y), size);
  show();
  update();
}

QRectF HoverReadout::boundingRect() const { return m_plot.united(m_box).adjusted(-6, -6, 6, 6); }

void HoverReadout::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing);
  if (m_hasLine) {
    QPen pen(m_line, 1, Qt::DashLine);
    pen.setCosmetic(true);
    painter->setPen(pen);
    painter->drawLine(QPointF(m_lineX, m_plot.top()), QPointF(m_lineX, m_plot.bottom()));
  }
  for (const ReadoutRow& dot : m_dots) {
    painter->setPen(QPen(m_background, 1.5));
    painter->setBrush(dot.color);
    const double r = dot.nearest ? 5 : 3.5;
    painter->drawEllipse(dot.position, r, r);
  }
  QColor fill = m_background;
  fill.setAlphaF(0.93f);
  painter->setPen(QPen(m_line, 1));
  painter->setBrush(fill);
  painter->drawRoundedRect(m_box, 3, 3);
  painter->translate(m_box.topLeft());
  QAbstractTextDocumentLayout::PaintContext context;
  context.palette.setColor(QPalette::Text, m_text);
  m_doc.documentLayout()->draw(painter, context);
  painter->restore();
}

}  // namespace amp::ui
