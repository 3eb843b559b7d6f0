#include "ui/flow_layout.h"

#include <QWidget>
#include <QWidgetItem>
#include <algorithm>

namespace amp::ui {

FlowLayout::FlowLayout(int hSpacing, int vSpacing) : m_hSpacing(hSpacing), m_vSpacing(vSpacing) {}

FlowLayout::~FlowLayout() {
  while (QLayoutItem* item = takeAt(0)) delete item;
}

void FlowLayout::addItem(QLayoutItem* item) { m_items.append(item); }

void FlowLayout::addStretchedWidget(QWidget* widget) {
  addChildWidget(widget);
  m_stretched = new QWidgetItem(widget);
  addItem(m_stretched);
}

QLayoutItem* FlowLayout::takeAt(int index) {
  if (index < 0 || index >= m_items.size()) return nullptr;
  QLayoutItem* item = m_items.takeAt(index);
  if (item == m_stretched) m_stretched = nullptr;
  return item;
}

int FlowLayout::heightForWidth(int width) const { return arrange(QRect(0, 0, width, 0), false); }

// As narrow as the widest item: everything else wraps.
QSize FlowLayout::minimumSize() const {
  QSize size;
  for (const QLayoutItem* item : m_items)
    if (!item->isEmpty()) size = size.expandedTo(item->minimumSize());
  const QMargins m = contentsMargins();
  return size + QSize(m.left() + m.right(), m.top() + m.bottom());
}

// One row of everything at its preferred size.
QSize FlowLayout::sizeHint() const {
  int width = 0, height = 0;
  for (const QLayoutItem* item : m_items) {
    if (item->isEmpty()) continue;
    const QSize s = item->sizeHint();
    width += (width ? m_hSpacing : 0) + s.width();
    height = std::max(height, s.height());
  }
  const QMargins m = contentsMargins();
  return QSize(width + m.left() + m.right(), height + m.top() + m.bottom());
}

void FlowLayout::setGeometry(const QRect& rect) {
  QLayout::setGeometry(rect);
  arrange(rect, true);
}

int FlowLayout::arrange(const QRect& rect, bool apply) const {
  const QRect area = rect.marginsRemoved(contentsMargins());
  struct Placed {
    QLayoutItem* item;
    int width;
  };
  QList<QList<Placed>> rows(1);
  int x = 0;
  for (QLayoutItem* item : m_items) {
    if (item->isEmpty()) continue;
    const int w = std::min(item == m_stretched ? item->minimumSize().width() : item->sizeHint().width(),
                           std::max(1, area.width()));
    if (x > 0 && x + m_hSpacing + w > area.width()) {
      rows.append(QList<Placed>());
      x = 0;
    }
    x += (x ? m_hSpacing : 0) + w;
    rows.last().append({item, w});
  }
  int y = area.top();
  for (QList<Placed>& row : rows) {
    if (row.isEmpty()) continue;
    int used = 0, height = 0;
    for (const Placed& p : row) {
      used += (used ? m_hSpacing : 0) + p.width;
      height = std::max(height, p.item->sizeHint().height());
    }
    // The stretched item takes what the row leaves over (up to its preferred width and beyond).
    for (Placed& p : row)
      if (p.item == m_stretched) p.width += std::max(0, area.width() - used);
    if (apply) {
      int left = area.left();
      for (const Placed& p : row) {
        const int h = std::min(height, std::max(p.item->minimumSize().height(), p.item->sizeHint().height()));
        p.item->setGeometry(QRect(left, y + (height - h) / 2, p.width, h));
        left += p.width + m_hSpacing;
      }
    }
    y += height + m_vSpacing;
  }
  const QMargins m = contentsMargins();
  return y - m_vSpacing - area.top() + m.top() + m.bottom();
}

}  // namespace amp::ui
