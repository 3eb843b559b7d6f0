#include "ui/charts/heat_map_item.h"

#include <QChart>
#include <QLocale>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "ui/charts/histogram_bins.h"

namespace amp::ui {

HeatMapItem::HeatMapItem(QChart* chart, QAbstractSeries* anchor)
    : QGraphicsItem(chart), m_chart(chart), m_anchor(anchor) {
  // Above the plot background (z 0) and below grid lines (2) and series (4): range lines show.
  setZValue(1.5);
}

void HeatMapItem::setImage(const QImage& image, const QRectF& valueRect) {
  m_image = image;
  m_valueRect = valueRect;
  geometryChanged();
}

void HeatMapItem::geometryChanged() {
  prepareGeometryChange();
  update();
}

QRectF HeatMapItem::boundingRect() const { return m_chart->plotArea(); }

void HeatMapItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  if (m_image.isNull() || !m_anchor) return;
  const QPointF topLeft = m_chart->mapToPosition(m_valueRect.topLeft(), m_anchor);
  const QPointF bottomRight = m_chart->mapToPosition(m_valueRect.bottomRight(), m_anchor);
  painter->save();
  painter->setClipRect(m_chart->plotArea());
  // Cells stay crisp: each is a measured bin, not a sample of something smooth.
  painter->setRenderHint(QPainter::SmoothPixmapTransform, false);
  painter->drawImage(QRectF(topLeft, bottomRight).normalized(), m_image);
  painter->restore();
}

QColor heatColor(double t) {
  // Five stops of matplotlib's viridis: readable in grey scale and for colour-blind viewers.
  static const QColor stops[] = {QColor(0x44, 0x01, 0x54), QColor(0x3b, 0x52, 0x8b), QColor(0x21, 0x91, 0x8c),
                                 QColor(0x5e, 0xc9, 0x62), QColor(0xfd, 0xe7, 0x25)};
  t = std::clamp(t, 0.0, 1.0) * 4.0;
  const int i = std::min(3, int(t));
  const double f = t - i;
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * f),
                          float(a.greenF() + (b.greenF() - a.greenF()) * f),
                          float(a.blueF() + (b.blueF() - a.blueF()) * f));
}

QLinearGradient heatGradient(const QPointF& from, const QPointF& to) {
  QLinearGradient g(from, to);
  for (int k = 0; k <= 4; ++k) g.setColorAt(k / 4.0, heatColor(k / 4.0));  // heatColor's stops
  return g;
}

QString heatScaleLabel(std::int64_t maxCount) {
  return QObject::tr("values per cell: 1 → %1 (log)").arg(QLocale().toString(qlonglong(std::max<std::int64_t>(1, maxCount))));
}

QImage buildExponentHeatMap(const std::vector<const ExponentHistogram*>& columns, std::int64_t* maxCountOut) {
  const int top = int(kHistAxisMax);  // row 0 holds axis unit [top - 1, top)
  const int rows = top - kHistMinExp;
  const int width = std::max<int>(1, int(columns.size()));
  QImage image(width, rows, QImage::Format_ARGB32);
  image.fill(Qt::transparent);
  std::int64_t maxCount = 0;
  for (const ExponentHistogram* h : columns)
    if (h) maxCount = std::max(maxCount, *std::max_element(h->counts.begin(), h->counts.end()));
  if (maxCountOut) *maxCountOut = maxCount;
  if (maxCount == 0) return image;
  const double norm = std::log1p(double(maxCount));
  for (int x = 0; x < int(columns.size()); ++x) {
    const ExponentHistogram* h = columns[std::size_t(x)];
    if (!h) continue;
    for (int bin = 0; bin < kHistBins; ++bin) {
      const std::int64_t n = h->counts[std::size_t(bin)];
      if (n == 0) continue;
      const QRgb rgb = heatColor(std::log1p(double(n)) / norm).rgb();
      const int first = int(binLeft(bin)), last = int(binLeft(bin) + binWidth(bin));
      for (int unit = first; unit < last; ++unit) {
        const int row = top - 1 - unit;
        if (row >= 0 && row < rows) image.setPixel(x, row, rgb);
      }
    }
  }
  return image;
}

}  // namespace amp::ui
