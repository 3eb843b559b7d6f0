// The widget of a chart panel that paints itself instead of showing a chart view (the fp8 heat
// map, the fp8 block scales): it paints through the panel, reports the pointer to it, and offers
// the chart views' export menu, which a painted panel has no view to carry, plus the panel's own
// entries. One widget for both, so their hover and export behave alike.
#pragma once

#include <QContextMenuEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWidget>
#include <functional>

#include "ui/charts/chart_panel.h"

namespace amp::ui {

class PaintedCanvas : public QWidget {
 public:
  struct Hooks {
    std::function<void(QPainter*, const QRectF&)> paint;
    std::function<void(const QPointF&, const QPoint&)> hover;  // local and global position
    std::function<void()> leave;
    std::function<void(QMenu&)> moreActions;  // after the export entries (may be empty)
  };
  PaintedCanvas(ChartPanel* panel, Hooks hooks) : QWidget(panel), m_panel(panel), m_hooks(std::move(hooks)) {
    setMouseTracking(true);
    setMinimumHeight(120);
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    m_hooks.paint(&p, QRectF(rect()));
  }
  void mouseMoveEvent(QMouseEvent* e) override { m_hooks.hover(e->position(), e->globalPosition().toPoint()); }
  void leaveEvent(QEvent*) override {
    m_hooks.leave();
    QToolTip::hideText();
  }
  void contextMenuEvent(QContextMenuEvent* e) override {
    QMenu menu(this);
    menu.addAction(tr("Export as PNG…"), m_panel, [this] { m_panel->exportInteractively(ExportFormat::Png); });
    menu.addAction(tr("Export as SVG…"), m_panel, [this] { m_panel->exportInteractively(ExportFormat::Svg); });
    menu.addAction(tr("Export as PDF…"), m_panel, [this] { m_panel->exportInteractively(ExportFormat::Pdf); });
    if (m_hooks.moreActions) {
      menu.addSeparator();
      m_hooks.moreActions(menu);
    }
    menu.exec(e->globalPos());
  }

 private:
  ChartPanel* m_panel;
  Hooks m_hooks;
};

}  // namespace amp::ui
