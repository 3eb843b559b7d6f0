#include "ui/charts/chart_legend.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QSet>
#include <algorithm>

#include "ui/charts/heat_map_item.h"

namespace amp::ui {

namespace {

constexpr double kGlyphWidth = 22;  // a line sample long enough to show its dash pattern
constexpr double kGap = 4;          // glyph to text
constexpr double kSpacing = 14;     // between entries
constexpr double kRowGap = 2;

bool isSeparator(QChar c) {
  return c.isSpace() || c == u'/' || c == u'·' || c == u':' || c == u'-' || c == u'_' || c == u'|' ||
         c == u',';
}

// Length of the shared part of every name, cut back to just after a separator.
int sharedPrefix(const QStringList& names) {
  int n = int(names.first().size());
  for (const QString& s : names) {
    int i = 0;
    while (i < n && i < s.size() && s[i] == names.first()[i]) ++i;
    n = i;
  }
  while (n > 0 && !isSeparator(names.first()[n - 1])) --n;
  return n;
}

QStringList reversed(const QStringList& names) {
  QStringList out;
  for (const QString& s : names) {
    QString r(s);
    std::reverse(r.begin(), r.end());
    out << r;
  }
  return out;
}

QString trimSeparators(QString s) {
  while (!s.isEmpty() && isSeparator(s.back())) s.chop(1);
  while (!s.isEmpty() && isSeparator(s.front())) s.remove(0, 1);
  return s;
}

}  // namespace

LegendNames splitLegendNames(const QStringList& names, const QList<int>& ids) {
  LegendNames out;
  out.distinct = names;
  if (names.size() >= 2) {
    const int pre = sharedPrefix(names);
    // A shared tail is dropped only when there is no shared head: "pure-fp16/pure_fp16" and
    // "pure-fp16/amp_fp16" read "pure-fp16: pure_fp16, amp_fp16", not "pure-fp16 … fp16: pure, amp".
    const int suf = pre > 0 ? 0 : sharedPrefix(reversed(names));
    bool restsOk = true;
    QStringList rests;
    for (const QString& s : names) {
      const int keep = int(s.size()) - pre - suf;
      const QString rest = keep > 0 ? trimSeparators(s.mid(pre, keep)) : QString();
      restsOk = restsOk && !rest.isEmpty();
      rests << rest;
    }
    if (restsOk && (pre > 0 || suf > 0)) {
      const QString head = trimSeparators(names.first().left(pre));
      const QString tail = trimSeparators(names.first().right(suf));
      out.common = head.isEmpty() ? QStringLiteral("… ") + tail
                   : tail.isEmpty() ? head
                                    : head + QStringLiteral(" … ") + tail;
      out.distinct = rests;
    }
  }
  // Twins with one name: their ids keep them apart.
  QHash<QString, int> seen;
  for (const QString& s : out.distinct) ++seen[s];
  for (int i = 0; i < out.distinct.size(); ++i)
    if (seen.value(out.distinct[i]) > 1) out.distinct[i] += QStringLiteral(" #%1").arg(ids.value(i, i + 1));
  return out;
}

ChartLegend::ChartLegend(QGraphicsItem* parent) : QGraphicsObject(parent) {
  m_font.setPointSize(8);
  setAcceptHoverEvents(false);  // the view hit-tests: its own mouse handling comes first
}

void ChartLegend::setEntries(const QString& heading, const QList<LegendEntry>& entries) {
  m_heading = heading;
  m_entries = entries;
  m_rects.clear();
  m_drawn.clear();
  update();
}

QStringList ChartLegend::drawnTexts() const {
  QStringList out;
  if (!m_heading.isEmpty() && !m_headingRect.isEmpty()) out << m_heading;
  for (int i = 0; i < m_drawn.size(); ++i)
    if (!m_rects.value(i).isEmpty()) out << m_drawn[i];
  if (!m_more.isEmpty()) out << m_more;
  return out;
}

void ChartLegend::setFont(const QFont& font) {
  m_font = font;
  update();
}

void ChartLegend::setTextColor(const QColor& color) {
  m_textColor = color;
  update();
}

void ChartLegend::setHighlightedRun(int runId) {
  if (runId == m_highlighted) return;
  m_highlighted = runId;
  update();
}

double ChartLegend::layoutFor(double width, double maxHeight) {
  prepareGeometryChange();
  const QFontMetricsF fm(m_font);
  QFont bold = m_font;
  bold.setBold(true);
  const QFontMetricsF fmBold(bold);
  const double rowHeight = std::max(fm.height(), fmBold.height()) + kRowGap;
  m_width = width;
  m_rects.clear();
  m_drawn.clear();
  m_more.clear();
  m_moreRect = m_headingRect = QRectF();
  double x = 0, y = 0;
  if (!m_heading.isEmpty() && !m_entries.isEmpty()) {
    const QString text = fmBold.elidedText(m_heading + QLatin1Char(':'), Qt::ElideRight, width);
    m_headingRect = QRectF(0, 0, fmBold.horizontalAdvance(text), rowHeight);
    x = m_headingRect.width() + kSpacing * 0.6;
  }
  const int maxRows = std::max(1, int((maxHeight + kRowGap) / rowHeight));
  int row = 0;
  for (int i = 0; i < m_entries.size(); ++i) {
    // A label wider than a whole row (rare) is elided to the row; otherwise it stays whole.
    const double textRoom = std::max(10.0, width - kGlyphWidth - kGap);
    const QString text = fm.elidedText(m_entries[i].label, Qt::ElideMiddle, textRoom);
    const double w = kGlyphWidth + kGap + fmBold.horizontalAdvance(text);
    if (x > 0 && x + w > width) {
      ++row;
      x = 0;
      y += rowHeight;
    }
    if (row >= maxRows) {
      // Out of room: the rest is counted on the last row's end.
      m_more = tr("+%1 more").arg(m_entries.size() - i);
      for (int j = i; j < m_entries.size(); ++j) {
        m_rects << QRectF();
        m_drawn << QString();
      }
      y -= rowHeight;
      const double mw = fm.horizontalAdvance(m_more);
      m_moreRect = QRectF(std::max(0.0, width - mw), y, mw, rowHeight);
      // Entries under the "+N more" text make way for it.
      for (QRectF& r : m_rects)
        if (!r.isEmpty() && r.intersects(m_moreRect)) r = QRectF();
      break;
    }
    m_rects << QRectF(x, y, w, rowHeight);
    m_drawn << text;
    x += w + kSpacing;
  }
  m_height = m_entries.isEmpty() ? 0 : y + rowHeight;
  update();
  return m_height;
}

int ChartLegend::entryAt(const QPointF& pos) const {
  for (int i = 0; i < m_rects.size(); ++i)
    if (!m_rects[i].isEmpty() && m_rects[i].contains(pos)) return i;
  return -1;
}

void ChartLegend::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing);
  QFont bold = m_font;
  bold.setBold(true);
  if (!m_headingRect.isEmpty()) {
    painter->setFont(bold);
    painter->setPen(m_textColor);
    painter->drawText(m_headingRect, Qt::AlignVCenter | Qt::AlignLeft, m_heading + QLatin1Char(':'));
  }
  for (int i = 0; i < m_entries.size() && i < m_rects.size(); ++i) {
    const QRectF r = m_rects[i];
    if (r.isEmpty()) continue;
    const LegendEntry& e = m_entries[i];
    QColor color = e.color;
    QColor text = m_textColor;
    if (e.hidden) {
      color.setAlphaF(0.3f);
      text.setAlphaF(0.45f);
    }
    const bool highlighted = e.runId >= 0 && e.runId == m_highlighted;
    const double cy = r.center().y();
    const QRectF glyph(r.left(), cy - 5, kGlyphWidth, 10);
    if (e.glyph == LegendEntry::Glyph::Line) {
      QPen pen(color, highlighted ? 3.5 : 2.2, e.style);
      pen.setCapStyle(Qt::FlatCap);
      painter->setPen(pen);
      painter->drawLine(QPointF(glyph.left() + 1, cy), QPointF(glyph.right() - 1, cy));
    } else if (e.glyph == LegendEntry::Glyph::Gradient) {
      painter->setPen(QPen(m_textColor, 0.5));
      painter->setBrush(heatGradient(glyph.topLeft(), glyph.topRight()));
      painter->drawRect(glyph.adjusted(0, 1, 0, -1));
      painter->setBrush(Qt::NoBrush);
    } else {
      painter->setPen(QPen(color.darker(130), 1));
      painter->setBrush(color);
      const QRectF m(glyph.center().x() - 4, cy - 4, 8, 8);
      if (e.glyph == LegendEntry::Glyph::Dot)
        painter->drawEllipse(m);
      else
        painter->drawPolygon(QPolygonF({QPointF(m.center().x(), m.top()), m.bottomRight(), m.bottomLeft()}));
      painter->setBrush(Qt::NoBrush);
    }
    QFont font = highlighted ? bold : m_font;
    font.setStrikeOut(e.hidden);
    painter->setFont(font);
    painter->setPen(text);
    painter->drawText(QRectF(glyph.right() + kGap, r.top(), r.width() - kGlyphWidth - kGap + 2, r.height()),
                      Qt::AlignVCenter | Qt::AlignLeft, m_drawn.value(i));
  }
  if (!m_more.isEmpty()) {
    painter->setFont(m_font);
    painter->setPen(m_textColor);
    painter->drawText(m_moreRect, Qt::AlignVCenter | Qt::AlignRight, m_more);
  }
  painter->restore();
}

}  // namespace amp::ui
