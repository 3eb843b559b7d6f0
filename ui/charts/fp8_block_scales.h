// The fp8 block scales view (issue 39): for one quantised tensor of a block recipe at one
// histogram step, two maps over the tensor's shape side by side: the log2 of each block's scale
// (MXFP8's E8M0 exponents, NVFP4's E4M3 scales, the 1x128 / 128x128 fp32 scales) and the log2 of
// each block's amax (the tensor's own magnitudes at block resolution), each with its colour bar,
// so an outlier's block shows in both: the largest amax, the scale that had to fit it. A big
// tensor's grid is grouped (Fp8BlockGrid::cellRows/cellCols, by the block of largest amax);
// hovering a cell names the block, its rows and columns in the tensor, its scale and amax.
// Painted by the panel itself, so every export (PNG, SVG, PDF) draws the same picture.
#pragma once

#include <QImage>
#include <QStringList>
#include <QVector>

#include "engine/amp/fp8_record.h"
#include "ui/charts/chart_panel.h"

class QComboBox;

namespace amp::ui {

class Fp8BlockScalesPanel : public ChartPanel {
  Q_OBJECT

 public:
  enum class Map { Scale, Amax };

  explicit Fp8BlockScalesPanel(QWidget* parent = nullptr);

  // The run shown (by id); a run without block grids (a per-tensor recipe) falls back to the
  // newest visible run that has them.
  void setSelectedRun(int runId);
  // "2.x"; unknown: the run's spiked tensor (fp8.inject_spike) if it has grids, else the first.
  void setSelectedTensor(const QString& tensor);
  QString selectedTensor() const { return m_tensor; }
  QStringList tensors() const { return m_tensorList; }  // those with grids, model order
  // A histogram step with a grid; unknown (or never chosen): the spike's step, else the latest.
  void setSelectedStep(long long step);
  long long selectedStep() const { return m_step; }
  QVector<long long> steps() const { return m_stepList; }
  QString runName() const;

  // What is drawn (tests, exports): the grid shown (nullptr: none), a cell's value (log2; NaN
  // outside), each map's image (one pixel per cell, rows of the tensor down, columns across),
  // its colour bar's ends, the cell under a point of the painted panel, and a cell's hover text.
  const Fp8BlockGrid* grid() const { return m_grid.empty() ? nullptr : &m_grid; }
  double cellValue(Map map, int row, int column) const;
  QImage image(Map map) const { return map == Map::Scale ? m_scaleImage : m_amaxImage; }
  std::pair<double, double> colourRange(Map map) const;
  // {column, row} of the cell of `map` under `pos` (widget coordinates of the map widget), or {-1, -1}.
  QPoint cellAt(Map map, const QPointF& pos) const;
  QString cellText(int row, int column) const;
  QWidget* mapWidget() const;
  QString hoverText() const { return m_hoverText; }

  void render(QPainter* painter, const QRectF& target) override;

  // The grid shown as data: CSV (one line per cell: its block row and column, the tensor rows
  // and columns it covers, log2 of the scale and of the amax) or JSON (the run, tensor, step and
  // the fp8 JSON's block_grid). saveGrid picks by the path's suffix (.csv / .json) and writes it
  // whole or not at all; false with the reason in `error`. The canvas's context menu offers both
  // beside PNG, SVG and PDF.
  QByteArray gridData(bool json) const;
  bool saveGrid(const QString& path, QString* error = nullptr) const;

 protected:
  void rebuildSeries() override;
  void updateSeries() override;

 private:
  struct Layout {
    QRectF scale, amax;        // the two maps' cell areas
    QRectF scaleBar, amaxBar;  // their colour bars
  };
  const RunData* selected() const;
  void refill();        // tensor and step lists, then the grid and images
  void pickGrid();
  void rebuildImages();
  Layout layoutIn(const QRectF& target, bool header) const;
  void paintPanel(QPainter* p, const QRectF& target, bool header) const;
  void paintMap(QPainter* p, Map map, const QRectF& cells, const QRectF& bar, const QRectF& area) const;
  void hoverAt(const QPointF& pos, const QPoint& globalPos);
  QString scaleTitle() const;

  QComboBox* m_runBox;
  QComboBox* m_tensorBox;
  QComboBox* m_stepBox;
  QWidget* m_canvas;  // a PaintedCanvas
  int m_selectedId = -1;
  QString m_tensor;
  long long m_step = -1;
  bool m_stepChosen = false;  // the user picked a step: new steps do not move it

  const RunData* m_builtRun = nullptr;
  std::size_t m_builtSteps = 0;
  QStringList m_tensorList;
  QVector<long long> m_stepList;
  Fp8BlockGrid m_grid;  // a copy: the run's steps may move while it trains
  QString m_format;                      // the tensor's value format ("e4m3")
  QImage m_scaleImage, m_amaxImage;
  double m_scaleMin = 0, m_scaleMax = 1, m_amaxMin = 0, m_amaxMax = 1;
  bool m_anyZero = false;  // an all-zero block is drawn grey
  QString m_hoverText;
};

}  // namespace amp::ui
