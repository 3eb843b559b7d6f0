// The data and the model's decision regions, as TensorFlow Playground shows them: the training
// points of a 2-D classification set (spirals, circles, blobs) in their classes' colours, over
// the classes the selected run's model predicts across the plane, shaded by its confidence and
// updated while it trains. Switching between a run's fp16 and fp32 variants shows whether AMP
// learned the same boundary.
#pragma once

#include <memory>

#include "ui/charts/chart_panel.h"

class QComboBox;
class QScatterSeries;

namespace amp {
struct DecisionMap;
}

namespace amp::ui {

class HeatMapItem;

class DecisionChart : public ChartPanel {
  Q_OBJECT

 public:
  explicit DecisionChart(QWidget* parent = nullptr);

  void setSelectedRun(int runId);  // -1: the newest run that has a map
  const RunData* shownRun() const;
  // The colour of class k (blue, orange, then a palette).
  static QColor classColor(int k);
  // The regions as drawn: one pixel per cell, class colour over `background` by confidence.
  static QImage regionImage(const DecisionMap& map, const QColor& background);

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  QString hoverText(const QPointF& value) const;
  void addClassSeries(int classes);  // scatter series for classes up to `classes`

  QComboBox* m_runBox;
  HeatMapItem* m_regions = nullptr;
  QList<QScatterSeries*> m_points;  // one per class
  int m_selectedId = -1;
  std::shared_ptr<const DecisionMap> m_drawn;  // the map the image shows
  std::shared_ptr<const DecisionMap> m_rangedFor;  // the map the axes were fitted to
  const void* m_drawnPoints = nullptr;         // the points the scatter series hold
  bool m_drawnDark = false;
};

}  // namespace amp::ui
