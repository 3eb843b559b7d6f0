// A layout that places its items left to right and wraps them onto further rows when the width
// runs out (as text wraps). The runs panel's controls sat in one row whose minimum width (about
// 1000 px at presentation scale 1.5) forced any dock holding it, and so the window, to be at
// least that wide; wrapped, the panel fits a side column.
#pragma once

#include <QLayout>
#include <QList>

namespace amp::ui {

class FlowLayout : public QLayout {
 public:
  explicit FlowLayout(int hSpacing = 6, int vSpacing = 4);
  ~FlowLayout() override;

  // An item that takes the row's leftover width (a filter box); at least its minimum width.
  void addStretchedWidget(QWidget* widget);

  void addItem(QLayoutItem* item) override;
  int count() const override { return int(m_items.size()); }
  QLayoutItem* itemAt(int index) const override { return m_items.value(index); }
  QLayoutItem* takeAt(int index) override;
  Qt::Orientations expandingDirections() const override { return {}; }
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize minimumSize() const override;
  QSize sizeHint() const override;
  void setGeometry(const QRect& rect) override;

 private:
  // Lays the items out in `rect` (or only measures, when !apply); returns the height used.
  int arrange(const QRect& rect, bool apply) const;

  QList<QLayoutItem*> m_items;
  QLayoutItem* m_stretched = nullptr;
  int m_hSpacing, m_vSpacing;
};

}  // namespace amp::ui
