// TensorBoard's "distributions" idea for exponents: one small heat map per recorded tensor of
// the focused run (x = recorded steps, y = binary exponent, colour = log count, the same image
// as the exponent panel's "over time" chart), in a grid that scrolls, each titled with the
// tensor's name and kind, with fp16's normal / subnormal limits as thin lines. One look shows
// which layer's gradients sink below fp16's range first.
#pragma once

#include <QHash>
#include <QImage>
#include <QStringList>

#include "ui/charts/chart_panel.h"

class QComboBox;
class QScrollArea;

namespace amp::ui {

class LayerGridPanel : public ChartPanel {
  Q_OBJECT

 public:
  explicit LayerGridPanel(QWidget* parent = nullptr);

  // The run shown (by id); the newest visible run with histograms when not shown.
  void setSelectedRun(int runId);
  int selectedRun() const { return m_selectedId; }
  // The cells' titles in grid order ("0.weight · weight grad"), for tests and exports.
  QStringList cellTitles() const { return m_titles; }
  // Grid columns at the current width.
  int columnCount() const;

  void render(QPainter* painter, const QRectF& target) override;

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  class Grid;
  const RunData* selected() const;
  void paintGrid(QPainter* painter, const QRectF& target, int columns) const;

  QComboBox* m_runBox;
  QScrollArea* m_scroll;
  Grid* m_grid;
  int m_selectedId = -1;
  // What the images were built from, so that a refresh without new frames costs nothing.
  const RunData* m_builtRun = nullptr;
  std::size_t m_builtFrames = 0;
  QStringList m_titles;
  QList<QImage> m_images;
  double m_firstStep = 0, m_lastStep = 0;
};

}  // namespace amp::ui
