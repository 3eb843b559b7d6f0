// The fp8 underflow / overflow heat map (issue 39): one run's quantised tensors as rows, in
// model order (layers as the forward pass meets them, each layer's x, w, dy), its steps as
// columns, each cell coloured by the share of the tensor's non-zero values that quantising
// flushed to zero, or (toggled) the share it clipped, or its SQNR in dB; the "what if" recipe's
// figures in place of the run's own where the run measured one (fp8.what_if). A colour bar
// says what the colours mean; hovering a cell names the tensor, the step, both shares and the
// SQNR. Painted by the panel itself (no Qt Charts), so every export draws the same picture.
#pragma once

#include <QImage>
#include <QStringList>
#include <QVector>
#include <string>

#include "ui/charts/chart_panel.h"

class QCheckBox;
class QComboBox;
class QLabel;

namespace amp::ui {

class Fp8HeatMapPanel : public ChartPanel {
  Q_OBJECT

 public:
  enum class Metric { Underflow, Overflow, Sqnr };
  enum class Rows { All, Inputs, Weights, Gradients };  // x, w, dy

  explicit Fp8HeatMapPanel(QWidget* parent = nullptr);

  // The run shown (by id); the newest visible run with fp8 records when not shown.
  void setSelectedRun(int runId);
  int selectedRun() const { return m_selectedId; }
  void setMetric(Metric metric);
  Metric metric() const { return m_metric; }
  void setRows(Rows rows);
  Rows rows() const { return m_rows; }
  // Colours from the run's "what if" recipe (fp8.what_if) instead of its own; ignored when the
  // run measured none.
  void setWhatIf(bool on);
  bool whatIf() const { return m_whatIf; }
  bool hasWhatIf() const;

  // What is drawn (tests, exports): the rows top to bottom, the step of each column, a cell's
  // value in the chosen metric (NaN: no record), the image (one pixel per cell, before scaling),
  // the colour bar's ends, and the hover text of a cell.
  QStringList rowNames() const;
  QVector<double> columnSteps() const { return m_steps; }
  double cellValue(int row, int column) const;
  QImage image() const { return m_image; }
  double colourMin() const { return m_colourMin; }
  double colourMax() const { return m_colourMax; }
  QString cellText(int row, int column) const;
  // The cell under a point of the painted map (widget coordinates of the map), or {-1, -1}.
  QPoint cellAt(const QPointF& pos) const;
  QWidget* mapWidget() const;
  QString hoverText() const { return m_hoverText; }  // the tooltip shown last ("" = none)
  // The row labels the last paint drew, top to bottom: each tensor's name where rows are as tall
  // as the text, else one per layer (tests: a GPT's ~30 rows at 1024x640 x1.5).
  QStringList drawnRowLabels() const { return m_drawnLabels; }
  QString runName() const;

  void render(QPainter* painter, const QRectF& target) override;

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  struct Cell {
    bool has = false;
    bool allZero = false;  // no non-zero value to lose (a gradient nothing reached)
    float underflow = 0, overflow = 0, sqnr = 0;
    bool hasWhatIf = false;
    float wUnderflow = 0, wOverflow = 0, wSqnr = 0;
  };
  const RunData* selected() const;
  void rebuild();          // rows, cells and image from scratch
  void appendNewSteps();   // new steps of the same run
  void rebuildImage();
  double valueOf(const Cell& c) const;
  QList<int> shownRows() const;  // indices into m_tensors of the rows shown
  void paintMap(QPainter* p, const QRectF& target, bool header) const;
  QRectF cellsRect(const QRectF& target, bool header) const;
  void hoverAt(const QPointF& pos, const QPoint& globalPos);

  QComboBox* m_runBox;
  QComboBox* m_metricBox;
  QComboBox* m_rowsBox;
  QCheckBox* m_whatIfBox;
  QWidget* m_map;  // a PaintedCanvas
  int m_selectedId = -1;
  Metric m_metric = Metric::Underflow;
  Rows m_rows = Rows::All;
  bool m_whatIf = false;

  const RunData* m_builtRun = nullptr;
  std::size_t m_builtSteps = 0;
  QStringList m_tensors;                 // every quantised tensor, model order
  QHash<QString, QString> m_formats;     // tensor -> "e4m3"
  std::vector<std::string> m_tensorKeys; // the same, as the records name them
  QVector<double> m_steps;               // one per column
  QVector<QVector<Cell>> m_cells;        // [tensor][column]
  QImage m_image;
  double m_colourMin = 0, m_colourMax = 1;
  QString m_hoverText;
  bool m_anyAllZero = false;  // some cell is drawn grey: the colour bar explains it
  mutable QStringList m_drawnLabels;
};

}  // namespace amp::ui
