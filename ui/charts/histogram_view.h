// Exponent histograms of one run's gradients and activations: the latest recorded frame as bars
// over binary exponents 2⁻⁴⁰..2¹⁷ plus zero/inf/nan, with the run's own 16-bit format's range as
// full-height bands and the other format's as a strip along the top: fp16's subnormal and normal
// ranges for fp16 (and fp32) runs, bf16's normal range (from 2⁻¹²⁶: the whole axis) for bf16
// runs, so bf16 gradients near 2⁻³⁰ read as in range. The caption gives the fractions in the
// run's own format; below, the same tensor over time as a heat map (one column per frame,
// colour = log count) with the fp16 range lines.
// When the panel is too short for both charts to be legible (a 1280x800 window), it shows one at
// a time and a tab bar picks which.
#pragma once

#include <QHash>
#include <QPointer>

#include <optional>
#include <vector>

#include "engine/train/step_metrics.h"
#include "ui/charts/chart_panel.h"

class QAreaSeries;
class QComboBox;
class QTabBar;
class QLineSeries;

namespace amp::ui {

class HeatMapItem;
struct HistogramFrame;

class HistogramView : public ChartPanel {
  Q_OBJECT

 public:
  enum class Domain { Scaled, Unscaled, Both };
  explicit HistogramView(QWidget* parent = nullptr);

  void setSelectedRun(int runId);
  int selectedRun() const { return m_selectedId; }
  // "<kind>|<tensor>", e.g. "weight_grad|2.weight"; the first tensor when unknown.
  void setSelectedTensor(const QString& key);
  QString selectedTensor() const { return m_tensorKey; }
  void setDomain(Domain domain);
  Domain domain() const { return m_domain; }
  // Another run's histogram of the same tensor, drawn as an outline over the bars: fp16 and
  // bf16 (or fp32) runs of one experiment compared at a glance. -1: none.
  void setComparedRun(int runId);
  int comparedRun() const { return m_compareId; }
  // The outline drawn (empty when none): for tests.
  QList<QPointF> comparedOutline() const;
  // fp8 runs (issue 39): each quantised tensor's exponents after its scale, keyed
  // "<kind>|fp8:<tensor>" ("activation|fp8:2.x"), drawn against the fp8 / fp4 ranges: the
  // tensor's own format (E4M3, E5M2, E2M1) as full-height bands, the other two as strips.
  static bool isFp8Key(const QString& key);
  // The format whose range is drawn full height ("e4m3"), "" while an fp16/bf16 tensor is shown;
  // and a band's [left, right) on the exponent axis as placed (empty when hidden): for tests.
  QString fp8FormatShown() const { return m_fp8FormatShown; }
  std::pair<double, double> fp8BandExtent(const QString& format, bool subnormal) const;
  ChartView* heatMapView() const { return m_heatView; }
  int heatAxisLabels() const { return m_heatAxisLabels; }
  // The bar chart's caption as shown: run, dtype, zero / underflow / subnormal / overflow
  // fractions, and what rounding flushed to zero or to inf ("" when nothing is shown).
  QString captionText() const { return m_view->caption(); }
  // True when the panel is too short for both charts and shows one of them, chosen by a tab bar.
  bool isCompact() const { return m_compact; }
  static constexpr int kCompactBelowPx = 480;
  // A bar chart shorter than this (x the presentation scale) keeps two caption lines (what
  // rounding did, and the scaled values' fractions): three left its plot a 30 px sliver at
  // 1024x640 x1.5. The domain box still shows the unscaled values.
  static constexpr int kBriefCaptionBelowPx = 330;

  void render(QPainter* painter, const QRectF& target) override;
  // The compact layout's threshold grows with the scale: re-chosen here, not only on resize.
  void setPresentationScale(double factor) override;

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void rebuildSeries() override;
  void updateSeries() override;
  QList<ChartView*> views() const override { return {m_view, m_heatView}; }

 private:
  const RunData* selected() const;
  const HistogramRecord* findRecord(const HistogramFrame& frame) const;
  void updateTensorList(const RunData* run);
  void updateBars(const RunData* run, const HistogramRecord* rec, const HistogramFrame& frame);
  void updateHeatMap(const RunData* run);
  void showEmpty(const QString& message);
  void updateCompactLayout();
  QString barsHoverText(const QPointF& value) const;
  QString heatHoverText(const QPointF& value) const;
  static QString tensorKey(const HistogramRecord& r);
  static void setBand(QAreaSeries* area, double left, double right, double bottom, double top);
  // A background band (the fp16 ranges, the bf16 strip): remembered, and drawn cut to the axes'
  // ranges, again whenever they change. Why: Qt Charts clips series to the plot when it paints
  // to the screen or an image, but QSvgGenerator writes no clip paths, so a band drawn past the
  // axes spilled over the title and the neighbouring charts in SVG exports.
  void setBackgroundBand(QAreaSeries* area, double left, double right, double bottom, double top);
  void clipBackgroundBands();
  void legibleSwatch(QAreaSeries* area, QColor color);
  struct BackgroundBand {
    QPointer<QAreaSeries> area;  // null once the view removed it (a new set of runs)
    double left, right, bottom, top;
  };
  std::vector<BackgroundBand> m_backgroundBands;

  QComboBox* m_runBox;
  QComboBox* m_tensorBox;
  QComboBox* m_domainBox;
  QComboBox* m_compareBox;
  QPointer<QLineSeries> m_compare;
  int m_compareId = -1;
  double m_compareHighest = 0;  // its tallest bar (the y range makes room)
  void updateComparison(const RunData* shown);
  ChartView* m_heatView;
  int m_heatAxisLabels = 6;  // exponent labels the heat map shows (its height)
  QTabBar* m_chartTabs;  // compact mode: bars or over time
  bool m_compact = false;
  HeatMapItem* m_heat = nullptr;

  QPointer<QAreaSeries> m_scaled;
  QPointer<QAreaSeries> m_unscaled;
  // The range bands: full height for the run's own format, a strip along the top for the other.
  QPointer<QAreaSeries> m_fp16Normal;
  QPointer<QAreaSeries> m_fp16Subnormal;
  QPointer<QAreaSeries> m_bf16Normal;
  void placeRangeBands(bool bf16Run);
  std::vector<QLineSeries*> m_rangeLines;  // heat map: fp16 thresholds

  int m_selectedId = -1;
  QString m_tensorKey;
  Domain m_domain = Domain::Both;
  // What the heat map image was built from, to rebuild it only when that changes.
  const RunData* m_heatRun = nullptr;
  QString m_heatKey;
  std::size_t m_heatFrames = 0;
  Domain m_heatDomain = Domain::Both;
  double m_heatX0 = 0;                     // step where the first image column starts
  double m_heatColumn = 1;                 // steps per image column
  std::size_t m_tensorListFrames = 0;      // frames seen when the tensor list was filled
  std::optional<HistogramRecord> m_shown;  // a copy: the run's frames may reallocate

  // fp8 (histogram_view_fp8.cpp): frames built from the run's fp8 records on histogram steps.
  static std::vector<HistogramFrame> fp8Frames(const RunData& run, QHash<QString, QString>* formats = nullptr);
  // The frames the selected tensor lives in: the run's own, or its fp8 frames (cached).
  const std::vector<HistogramFrame>& framesOf(const RunData* run) const;
  void addFp8Bands();
  void placeFp8Bands(const QString& format);  // "" hides them
  QString fp8Caption(const RunData* run, const HistogramRecord& rec, const HistogramFrame& frame) const;
  mutable std::vector<HistogramFrame> m_fp8Frames;
  mutable const RunData* m_fp8Run = nullptr;
  mutable std::size_t m_fp8Steps = 0;
  mutable QHash<QString, QString> m_fp8Formats;  // key -> "e4m3"
  struct Fp8Band {
    QString format;
    QPointer<QAreaSeries> normal;     // null once the view removed its series (a new set of
    QPointer<QAreaSeries> subnormal;  // runs) until rebuildSeries makes them again
  };
  std::vector<Fp8Band> m_fp8Bands;
  QString m_fp8FormatShown;
  // While render() paints an export: the bar chart's size there, which the caption fits (its
  // brief form below kBriefCaptionBelowPx, its lines wrapped at " · " to the width); empty on
  // screen, where the view's own size counts.
  QSizeF m_renderSize;
  QString fitCaption(const QString& text) const;
};

}  // namespace amp::ui
