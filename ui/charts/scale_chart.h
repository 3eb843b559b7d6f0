// Loss scale per run on a log2 axis (labelled 2¹⁶ ...): the scaler's halvings on overflow and
// doublings after every growth interval of clean steps, a marker at every skipped step, and
// the growth tracker's progress as an inline label at the end of each run's line ("tracker
// 1234/2000"); optionally the tracker itself as a thin dashed line on a right-hand axis
// (fraction of the interval).
#pragma once

#include <vector>

#include "ui/charts/chart_panel.h"

class QCheckBox;
class QGraphicsSimpleTextItem;
class QLineSeries;
class QScatterSeries;

namespace amp::ui {

class ScaleChart : public ChartPanel {
  Q_OBJECT

 public:
  explicit ScaleChart(QWidget* parent = nullptr);

  void setTrackerLineVisible(bool visible);
  bool isTrackerLineVisible() const { return m_trackerVisible; }

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  struct RunSeriesSet {
    const RunData* run = nullptr;
    QLineSeries* scale = nullptr;
    QScatterSeries* skipped = nullptr;
    QLineSeries* tracker = nullptr;
    QGraphicsSimpleTextItem* label = nullptr;  // "tracker 1234/2000" at the line's end
    std::vector<double> trackerFraction;       // growthTracker / growthInterval, grown incrementally
  };
  static bool usesScaler(const RunData* run);
  QString legendName(const RunData* run) const;
  QString trackerText(const RunData* run) const;
  void placeLabels();

  QCheckBox* m_trackerBox;
  QScatterSeries* m_skippedKey = nullptr;
  QValueAxis* m_trackerAxis = nullptr;
  std::vector<RunSeriesSet> m_sets;
  bool m_trackerVisible = false;
};

}  // namespace amp::ui
