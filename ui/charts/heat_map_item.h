// A heat map for Qt Charts, which has no such series: a QImage drawn inside a chart's plot area
// at given value coordinates, so it follows the axes (zoom, pan, resize) and is painted by
// every export like the rest of the chart. Also builds the exponent-over-time image.
#pragma once

#include <QGraphicsItem>
#include <QImage>
#include <QLinearGradient>
#include <vector>

#include "engine/telemetry/exponent_histogram.h"

class QAbstractSeries;
class QChart;

namespace amp::ui {

class HeatMapItem : public QGraphicsItem {
 public:
  // `anchor` is a series attached to the chart's x and y axes (maps values to positions).
  HeatMapItem(QChart* chart, QAbstractSeries* anchor);

  // valueRect: left/right = x range, top = highest y, bottom = lowest y (axis units).
  void setImage(const QImage& image, const QRectF& valueRect);
  void setAnchor(QAbstractSeries* anchor) { m_anchor = anchor; }
  void geometryChanged();  // the plot area or an axis range moved

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QChart* m_chart;
  QAbstractSeries* m_anchor;
  QImage m_image;
  QRectF m_valueRect;
};

// One column per histogram (left to right), one row per axis unit from kHistAxisMax at the top
// down to kHistMinExp (see histogram_bins.h), colour = log(1 + count) on a viridis-like scale
// normalised to the largest count; empty cells stay transparent. nullptr columns stay empty.
// `maxCount`, when given, receives that largest count (the colour bar's top).
QImage buildExponentHeatMap(const std::vector<const ExponentHistogram*>& columns,
                            std::int64_t* maxCount = nullptr);

// The colour bar's words for a map normalised to `maxCount`: "values per cell: 1 → 4096 (log)".
QString heatScaleLabel(std::int64_t maxCount);

// The colour for t in [0, 1] on that scale (also used for a legend).
QColor heatColor(double t);
// The whole scale as a gradient from `from` (t = 0) to `to` (t = 1): the colour bars.
QLinearGradient heatGradient(const QPointF& from, const QPointF& to);

}  // namespace amp::ui
