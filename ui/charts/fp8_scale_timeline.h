// The fp8 scale timeline (issue 39): for one quantised tensor, each visible fp8 run's amax per
// step (solid), the amax its delayed scale came from (the history window's max, dashed), and
// the scale actually used as a thick step line drawn where it acts: at format max ÷ scale, the
// largest magnitude that survives (above it values clip); the band below it down to the format's
// smallest subnormal ÷ scale is what the format holds after the scale (below, values flush to
// zero). A log2 axis; the injected spike (fp8.inject_spike) and the steps that clipped
// (overflow > 0) are marked. Two recipes' runs overlay in their colours.
#pragma once

#include <QPointF>
#include <vector>

#include "ui/charts/chart_panel.h"

class QAreaSeries;
class QComboBox;
class QLineSeries;
class QScatterSeries;

namespace amp::ui {

class Fp8ScaleTimeline : public ChartPanel {
  Q_OBJECT

 public:
  explicit Fp8ScaleTimeline(QWidget* parent = nullptr);

  // "fc2.x"; the spiked tensor of the first run that injects one, else the first, when unknown.
  void setSelectedTensor(const QString& tensor);
  QString selectedTensor() const { return m_tensor; }
  QStringList tensors() const;  // what the tensor box offers

  // What is drawn for a run (tests): "amax", "history", "scale" (max ÷ scale, the step line),
  // "floor" (min subnormal ÷ scale), "clipped", "spike": the series' points in axis units (log2
  // of the value while the axis is log2, as it is by default).
  QList<QPointF> seriesPoints(int runId, const QString& which) const;
  QStringList shownRuns() const;  // names of the runs drawn

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  struct Set {
    const RunData* run = nullptr;
    QAreaSeries* band = nullptr;
    QLineSeries* bandUpper = nullptr;
    QLineSeries* bandLower = nullptr;
    QLineSeries* scale = nullptr;
    QLineSeries* amax = nullptr;
    QLineSeries* history = nullptr;
    QScatterSeries* clipped = nullptr;
    QScatterSeries* spike = nullptr;
    std::size_t builtSteps = 0;
  };
  void fillTensorBox();

  QComboBox* m_tensorBox;
  QString m_tensor;
  std::vector<Set> m_sets;
};

}  // namespace amp::ui
