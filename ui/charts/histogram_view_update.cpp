// HistogramView's refresh: the latest frame's bars and caption, the heat map over all frames,
// the empty states, hover texts and the two-chart export.
#include <QAreaSeries>
#include <QCoreApplication>
#include <QFontMetricsF>
#include <QLineSeries>
#include <QValueAxis>
#include <cmath>
#include <tuple>

#include "ui/charts/heat_map_item.h"
#include "ui/charts/histogram_bins.h"
#include "ui/charts/histogram_view.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {

QString percent(double f) {
  if (f == 0) return QStringLiteral("0%");
  if (f < 1e-4) return QStringLiteral("<0.01%");
  return QString::number(f * 100, 'g', 3) + QLatin1Char('%');
}

// "underflow" counts values still non-zero but below fp16's range; values already flushed to
// zero by an earlier rounding sit in the zero bin, so the zero share is always shown beside it:
// a gradient that is all zeros must not read "underflow 0%" as if nothing was lost.
QString fractionsLine(const QString& label, const ExponentHistogram& h) {
  QString line = QStringLiteral("%1: zero %2 · underflow %3 · subnormal %4 · overflow %5")
                     .arg(label, percent(h.fraction(h.counts[std::size_t(kHistBinZero)])),
                          percent(h.fraction(h.underflow)), percent(h.fraction(h.subnormal)),
                          percent(h.fraction(h.overflow)));
  if (h.nonFinite > 0) line += QStringLiteral(" · non-finite %1").arg(percent(h.fraction(h.nonFinite)));
  return line;
}

// A bf16 run's line: bf16 keeps fp32's exponent range, so the fp16 range counts are what fp16
// *would* lose, said as such beside the zero and non-finite shares bf16 actually has.
QString bf16Line(const QString& label, const ExponentHistogram& h) {
  return QCoreApplication::translate("amp::ui::HistogramView", "%1, in bf16: zero %2 · non-finite %3 · in fp16 it would be: underflow %4 · subnormal %5 · overflow %6")
                     .arg(label, percent(h.fraction(h.counts[std::size_t(kHistBinZero)])), percent(h.fraction(h.nonFinite)),
                          percent(h.fraction(h.underflow)), percent(h.fraction(h.subnormal)),
                          percent(h.fraction(h.overflow)));
}

// What rounding did, when the engine measured it (fractions of all values); otherwise the
// zero bin's share, said to be only that.
QString roundingLine(const HistogramRecord& r) {
  const std::int64_t total = r.scaled.total;
  if (r.flushedToZero >= 0 && total > 0) {
    // The rounding measured is to the 16-bit compute dtype, also for gradients stored in fp32
    // (AMP's weight gradients are 16-bit products widened), so the line names no storage dtype.
    return QCoreApplication::translate("amp::ui::HistogramView", "rounding in 16 bits: flushed to 0: %1 · rounded to inf: %2")
        .arg(percent(double(r.flushedToZero) / double(total)),
             percent(double(std::max<std::int64_t>(r.roundedToInf, 0)) / double(total)));
  }
  return QCoreApplication::translate("amp::ui::HistogramView",
                                     "exactly zero: %1 (rounding to zero not measured for this tensor)")
      .arg(percent(r.scaled.fraction(r.scaled.counts[std::size_t(kHistBinZero)])));
}

// Bars as one area outline: for each bin (left,0) (left,f) (right,f) (right,0).
QList<QPointF> barOutline(const ExponentHistogram& h) {
  QList<QPointF> points;
  points.reserve(kHistBins * 4);
  for (int b = 0; b < kHistBins; ++b) {
    const double f = h.fraction(h.counts[std::size_t(b)]);
    const double left = binLeft(b), right = left + binWidth(b);
    points << QPointF(left, 0) << QPointF(left, f) << QPointF(right, f) << QPointF(right, 0);
  }
  return points;
}

QString scaleText(float scale) {
  int e = 0;
  const double m = std::frexp(double(scale), &e);
  if (m == 0.5) return powerOfTwo(e - 1);  // an exact power of two, as loss scales are
  return QString::number(scale, 'g', 4);
}

// The tallest bar's fraction of the values (the y range makes room for it).
double highestFraction(const ExponentHistogram& h) {
  double highest = 0;
  for (std::int64_t n : h.counts) highest = std::max(highest, h.fraction(n));
  return highest;
}

const ExponentHistogram& domainOf(const HistogramRecord& r, HistogramView::Domain d) {
  return d == HistogramView::Domain::Unscaled ? r.unscaled : r.scaled;
}

}  // namespace

void HistogramView::showEmpty(const QString& message) {
  m_shown.reset();
  if (m_compare) m_compare->setVisible(false);
  for (QAreaSeries* a : {m_scaled, m_unscaled}) {
    if (!a) continue;
    a->upperSeries()->clear();
    a->lowerSeries()->clear();
  }
  for (QAreaSeries* band : {m_fp16Normal, m_fp16Subnormal, m_bf16Normal})
    if (band) setBackgroundBand(band, 0, 0, 0, 0);
  placeFp8Bands({});
  m_view->setCaption({});
  m_view->setTitle(tr("Exponent histogram"));
  m_view->setPlaceholder(message);
  m_heatView->setPlaceholder(message.isEmpty() ? QString() : tr("(no frames)"));
  m_heat->setImage(QImage(), {});
  m_heatRun = nullptr;
  m_view->applyAutoRange(kHistAxisMin, kHistAxisMax);
  const RunData* run = selected();
  const auto [first, last] = stepExtent(run ? QVector<const RunData*>{run} : QVector<const RunData*>{});
  m_heatView->applyAutoRange(first, last);
}

void HistogramView::updateSeries() {
  const RunData* run = selected();
  if (!run) return showEmpty(tr("no runs to show"));
  if (run->histograms.empty()) {
    const int every = run->config.train.histogramEvery;
    return showEmpty(every > 0 ? tr("no histograms yet — they are recorded every %1 steps").arg(every)
                               : tr("histograms are off for this run (train.histogram_every = 0)"));
  }
  updateTensorList(run);
  const std::vector<HistogramFrame>& frames = framesOf(run);
  if (frames.empty()) return showEmpty(tr("no fp8 histograms yet — they are recorded on histogram steps"));
  const HistogramFrame& frame = frames.back();
  const HistogramRecord* rec = findRecord(frame);
  if (!rec) return showEmpty(tr("this tensor is not in the latest frame"));
  m_view->setPlaceholder({});
  m_heatView->setPlaceholder({});
  updateComparison(run);  // first: the bars' y range makes room for its outline
  updateBars(run, rec, frame);
  updateHeatMap(run);
}

void HistogramView::updateComparison(const RunData* shown) {
  const RunData* other = nullptr;
  for (const RunData* r : visibleRuns())
    if (r->id == m_compareId && r != shown) other = r;
  // An fp8 tensor's frames are built from the other run's records too.
  std::vector<HistogramFrame> otherFp8;
  if (other && isFp8Key(m_tensorKey)) otherFp8 = fp8Frames(*other);
  const std::vector<HistogramFrame>* otherFrames = other ? (isFp8Key(m_tensorKey) ? &otherFp8 : &other->histograms) : nullptr;
  const HistogramRecord* rec = otherFrames && !otherFrames->empty() ? findRecord(otherFrames->back()) : nullptr;
  m_compare->setVisible(rec != nullptr);
  m_view->setLegendEntryVisible(m_compare, rec != nullptr);
  m_compareHighest = 0;
  if (!rec) return;
  // The same values as the bars: unscaled when only those are shown, else as stored.
  const ExponentHistogram& h = m_domain == Domain::Unscaled ? rec->unscaled : rec->scaled;
  m_compare->replace(barOutline(h));
  m_compareHighest = highestFraction(h);
  const QColor color = runColor(other, 0);
  m_compare->setPen(pen(color.darker(110), 2.2));
  m_compare->setName(tr("%1, step %2").arg(other->name).arg(otherFrames->back().step));
  tagSeries(m_compare, other->name, tr("fraction"));
}

void HistogramView::updateBars(const RunData* run, const HistogramRecord* rec, const HistogramFrame& frame) {
  m_shown = *rec;
  const QColor color = runColor(run, 0);
  // An fp8 tensor has one side: its values times their fp8 scale, as the format receives them.
  const bool fp8 = isFp8Key(m_tensorKey);
  const bool both = m_domain == Domain::Both && !fp8;
  m_scaled->setVisible(m_domain != Domain::Unscaled || fp8);
  m_unscaled->setVisible(m_domain != Domain::Scaled && !fp8);
  m_view->setLegendEntryVisible(m_unscaled, !fp8);
  if (m_scaled->isVisible()) {
    m_scaled->upperSeries()->replace(barOutline(rec->scaled));
    m_scaled->lowerSeries()->clear();
    QColor fill = color;
    fill.setAlphaF(0.55f);
    m_scaled->setBrush(fill);
    m_scaled->setPen(pen(color.darker(120), 1.0));
    m_scaled->setName(tr("scaled"));
    tagSeries(m_scaled, run->name, tr("fraction, scaled"));
  }
  if (m_unscaled->isVisible()) {
    m_unscaled->upperSeries()->replace(barOutline(rec->unscaled));
    m_unscaled->lowerSeries()->clear();
    QColor fill = both ? m_view->textColor() : color;
    fill.setAlphaF(both ? 0.10f : 0.55f);
    m_unscaled->setBrush(fill);
    m_unscaled->setPen(
        pen(both ? m_view->textColor() : color.darker(120), 1.2, both ? Qt::DashLine : Qt::SolidLine));
    m_unscaled->setName(tr("unscaled"));
    tagSeries(m_unscaled, run->name, tr("fraction, unscaled"));
  }
  // Below the plot (it covered 20-40% of it): three lines, the run and what rounding did first.
  QStringList caption;
  // Both sides the same under a scale other than 1 (weights, activations, a TensorBoard import:
  // a log keeps no scaled copy): the values were not multiplied by it, so no loss scale is
  // claimed for them, and their fractions are said once.
  const bool sameSides = frame.scale != 1.0f && rec->scaled.counts == rec->unscaled.counts;
  if (sameSides)
    caption << tr("%1 · %2 values · not loss-scaled (scaled and unscaled are the same) · %3")
                   .arg(run->name, QString::fromLatin1(dtypeName(rec->dtype).data()), roundingLine(*rec));
  else
    caption << tr("%1 · %2 values · loss scale %3 · %4")
                   .arg(run->name, QString::fromLatin1(dtypeName(rec->dtype).data()), scaleText(frame.scale),
                        roundingLine(*rec));
  // In the run's own format: a bf16 run's caption read "as fp16: underflow 100%" beside "flushed
  // to 0: 0%". bf16 has fp32's exponent range, so what fp16 would lose is said as a what-if.
  const bool bf16Run = run->config.mode == PrecisionMode::AmpBf16;
  const double barsHeight = m_renderSize.isEmpty() ? m_view->height() : m_renderSize.height();
  const bool brief = barsHeight < kBriefCaptionBelowPx * m_view->presentationScale();
  for (const auto& [domain, name, h] : {std::tuple{Domain::Scaled, tr("scaled"), &rec->scaled},
                                        std::tuple{Domain::Unscaled, tr("unscaled"), &rec->unscaled}}) {
    if (m_domain != Domain::Both && m_domain != domain) continue;
    if (brief && caption.size() >= 2) break;
    if (sameSides && caption.size() >= 2) break;
    const QString label = sameSides ? tr("values") : name;
    caption << (bf16Run ? bf16Line(label, *h) : fractionsLine(tr("%1, as fp16").arg(label), *h));
  }
  if (fp8) {
    m_view->setCaption(fitCaption(fp8Caption(run, *rec, frame)));
    const bool blocks = rec->tensor.rfind("fp8blocks:", 0) == 0;
    const QString name = QString::fromStdString(rec->tensor.substr(rec->tensor.find(':') + 1));
    m_scaled->setName(blocks ? tr("blocks") : tr("× its scale"));
    m_view->setTitle(blocks ? tr("%1 (fp8 %2): block scales, step %3").arg(name, histogramKindLabel(rec->kind)).arg(frame.step)
                            : tr("%1 (fp8 %2) after its scale, step %3").arg(name, histogramKindLabel(rec->kind)).arg(frame.step));
  } else {
    m_view->setCaption(fitCaption(caption.join(QLatin1Char('\n'))));
    m_view->setTitle(tr("%1 %2, step %3")
                         .arg(QString::fromStdString(rec->tensor), histogramKindLabel(rec->kind))
                         .arg(frame.step));
  }
  m_view->applyAutoRange(kHistAxisMin, kHistAxisMax);
  if (m_view->isAutoY()) {
    const double highest = std::max({m_compareHighest, highestFraction(rec->scaled), highestFraction(rec->unscaled)});
    // A fraction never exceeds 1 (an all-zero gradient's axis read "2"); 4% headroom keeps the
    // tallest bar off the frame.
    m_view->setNiceRange(m_view->yAxis(), 0, std::min(1.0, std::max(highest, 1e-3) * 1.04));
  }
  if (fp8) {
    for (QAreaSeries* band : {m_fp16Normal, m_fp16Subnormal, m_bf16Normal}) {
      setBackgroundBand(band, 0, 0, 0, 0);
      m_view->setLegendEntryVisible(band, false);
    }
    const QString key = QString::fromLatin1(histogramKindName(rec->kind).data()) + QLatin1Char('|') +
                        QString::fromStdString(rec->tensor);
    // Block scales: their own exponents, against no value format's range.
    placeFp8Bands(rec->tensor.rfind("fp8blocks:", 0) == 0 ? QString() : m_fp8Formats.value(key));
    return;
  }
  for (QAreaSeries* band : {m_fp16Normal, m_fp16Subnormal, m_bf16Normal}) m_view->setLegendEntryVisible(band, true);
  placeFp8Bands({});
  placeRangeBands(bf16Run);
}

void HistogramView::placeRangeBands(bool bf16Run) {
  const double top = m_view->yAxis()->max();
  auto place = [&](QAreaSeries* band, double left, double right, bool own) {
    // Faint as a band (the bars go over it), stronger as a thin strip, which must still show.
    QColor color = band->property("ampBandColor").value<QColor>();
    if (!own) color.setAlpha(130);
    if (band->brush().color() != color) band->setBrush(color);
    if (own) setBackgroundBand(band, left, right, -10, 10);  // cut to the axes: full height
    else setBackgroundBand(band, left, right, top * 0.965, top * 2);  // a strip along the top
  };
  place(m_fp16Normal, kFp16NormalExp, kFp16OverflowExp, !bf16Run);
  place(m_fp16Subnormal, kFp16SubnormalExp, kFp16NormalExp, !bf16Run);
  // bf16's normal range, from 2^-126 to past 2^127, spans the whole axis.
  place(m_bf16Normal, kHistAxisMin, kHistAxisMax, bf16Run);
}

void HistogramView::updateHeatMap(const RunData* run) {
  const std::vector<HistogramFrame>& all = framesOf(run);
  const std::size_t frames = all.size();
  if (m_heatRun == run && m_heatKey == m_tensorKey && m_heatFrames == frames && m_heatDomain == m_domain)
    return;  // nothing new: the image stands
  m_heatRun = run;
  m_heatKey = m_tensorKey;
  m_heatFrames = frames;
  m_heatDomain = m_domain;
  const Domain shown = m_domain == Domain::Unscaled ? Domain::Unscaled : Domain::Scaled;
  std::vector<const ExponentHistogram*> columns;
  columns.reserve(frames);
  for (const HistogramFrame& f : all) {
    const HistogramRecord* r = findRecord(f);
    columns.push_back(r ? &domainOf(*r, shown) : nullptr);
  }
  const double first = double(all.front().step);
  const double last = double(all.back().step);
  const int every = std::max(1, run->config.train.histogramEvery);
  m_heatColumn = frames > 1 ? (last - first) / double(frames - 1) : double(every);
  if (!(m_heatColumn > 0)) m_heatColumn = 1;
  m_heatX0 = first - m_heatColumn / 2;
  const double x1 = last + m_heatColumn / 2;
  std::int64_t maxCount = 0;
  m_heat->setImage(buildExponentHeatMap(columns, &maxCount),
                   QRectF(QPointF(m_heatX0, kHistAxisMax), QPointF(x1, kHistMinExp)));
  // The colour bar: what a cell's colour counts, from 1 to the map's largest (issue 25).
  QList<LegendEntry> keys;
  // fp16's limit lines say nothing of an fp8 tensor after its scale: hidden for those.
  const bool fp8 = isFp8Key(m_tensorKey);
  for (QLineSeries* line : m_rangeLines) line->setVisible(!fp8);
  for (const QLineSeries* line : m_rangeLines)
    if (!fp8) keys << LegendEntry{line->name(), line->pen().color(), line->pen().style()};
  keys << LegendEntry{heatScaleLabel(maxCount), QColor(), Qt::SolidLine, LegendEntry::Glyph::Gradient};
  m_heatView->setRunLegend({}, keys);
  for (QLineSeries* line : m_rangeLines) {
    const double y = line->property("ampExponent").toDouble();
    line->replace({QPointF(m_heatX0, y), QPointF(x1, y)});
  }
  QString title = fp8 ? tr("Over time, after the fp8 scale (log count)")
                 : shown == Domain::Unscaled ? tr("Over time, unscaled (log count)")
                                             : tr("Over time, scaled (log count)");
  // The lines are fp16's limits; bf16's range is the whole axis, so none of them bounds a bf16 run.
  if (run->config.mode == PrecisionMode::AmpBf16) title += tr(" · lines: fp16's limits");
  m_heatView->setTitle(title);
  // Steps start at 1: a first column centred on an early step would open the axis at -10 (one
  // frame of a histogram_every of 20); the axis starts at step 0 and cuts that half column.
  m_heatView->applyAutoRange(std::max(0.0, m_heatX0), x1);
}

QString HistogramView::barsHoverText(const QPointF& value) const {
  const int bin = binAt(value.x());
  if (bin < 0 || !m_shown) return {};
  QString range = binName(bin);
  if (bin < kHistExpBins)
    range = QStringLiteral("[%1, %2)").arg(binName(bin), powerOfTwo(kHistMinExp + bin + 1));
  QString text = QStringLiteral("<b>%1</b>").arg(range.toHtmlEscaped());
  for (const auto& [label, h] :
       {std::pair{tr("scaled"), &m_shown->scaled}, std::pair{tr("unscaled"), &m_shown->unscaled}})
    text += QStringLiteral("<br/>%1: %2 (%3)")
                .arg(label, percent(h->fraction(h->counts[std::size_t(bin)])))
                .arg(h->counts[std::size_t(bin)]);
  return text;
}

QString HistogramView::heatHoverText(const QPointF& value) const {
  const int bin = binAt(value.y());
  if (!m_heatRun || bin < 0) return {};
  const long long column = std::llround(std::floor((value.x() - m_heatX0) / m_heatColumn));
  const std::vector<HistogramFrame>& all = framesOf(m_heatRun);
  if (column < 0 || column >= (long long)all.size()) return {};
  const HistogramFrame& f = all[std::size_t(column)];
  const HistogramRecord* r = findRecord(f);
  if (!r) return {};
  const ExponentHistogram& h =
      domainOf(*r, m_heatDomain == Domain::Unscaled ? Domain::Unscaled : Domain::Scaled);
  const std::int64_t n = h.counts[std::size_t(bin)];
  return tr("<b>step %1</b><br/>%2: %3 values (%4)")
      .arg(f.step)
      .arg(binName(bin))
      .arg(n)
      .arg(percent(h.fraction(n)));
}

// A caption line wider than the chart was cut at its right edge (the dashboard export, x1.5):
// such lines break between their " · " parts, the continuation indented.
QString HistogramView::fitCaption(const QString& text) const {
  QFont font = m_view->font();
  font.setPointSizeF(8 * m_view->presentationScale());  // ChartView's caption font
  const QFontMetricsF fm(font);
  const double width = (m_renderSize.isEmpty() ? m_view->width() : m_renderSize.width()) - 16;
  if (width <= 50) return text;
  QStringList out;
  const QString sep = QStringLiteral(" · ");
  for (const QString& line : text.split(QLatin1Char('\n'))) {
    if (fm.horizontalAdvance(line) <= width) {
      out << line;
      continue;
    }
    QString current;
    for (const QString& part : line.split(sep)) {
      const QString next = current.isEmpty() ? part : current + sep + part;
      if (!current.isEmpty() && fm.horizontalAdvance(next) > width) {
        out << current;
        current = QStringLiteral("   ") + part;
      } else {
        current = next;
      }
    }
    if (!current.isEmpty()) out << current;
  }
  return out.join(QLatin1Char('\n'));
}

void HistogramView::render(QPainter* painter, const QRectF& target) {
  const double split = target.height() * 0.58;
  // The caption fitted to the export's bar chart, then to the screen again.
  m_renderSize = QSizeF(target.width(), split);
  refreshNow();
  m_shown.reset();
  updateSeries();
  m_view->renderChart(painter, QRectF(target.topLeft(), QSizeF(target.width(), split)));
  m_heatView->renderChart(
      painter, QRectF(target.left(), target.top() + split, target.width(), target.height() - split));
  m_renderSize = {};
  updateSeries();
}

}  // namespace amp::ui
