// HistogramView's fp8 part (issue 39): a quantised tensor's exponents after its scale
// (Fp8TensorRecord::scaledExponents: the values as the format receives them), drawn against the
// E4M3, E5M2 and E2M1 ranges, so a reader sees the scale move the values into the band. The
// tensor's own format is drawn full height (normal and subnormal ranges), the other two formats'
// normal ranges as strips along the top, as fp16 and bf16 are for 16-bit runs.
#include <QAreaSeries>
#include <QCoreApplication>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "engine/amp/fp8_context.h"
#include "ui/charts/fp8_series.h"
#include "ui/charts/histogram_bins.h"
#include "ui/charts/histogram_view.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {

const QLatin1String kFp8Prefix("fp8:");

HistogramKind kindOfRole(const std::string& tensor) {
  if (tensor.ends_with(".dy")) return HistogramKind::ActivationGrad;
  if (tensor.ends_with(".w")) return HistogramKind::Weight;
  return HistogramKind::Activation;
}

QString percentText(double f) {
  if (f == 0) return QStringLiteral("0%");
  if (f < 1e-4) return QStringLiteral("<0.01%");
  return QString::number(f * 100, 'g', 3) + QLatin1Char('%');
}

struct FormatStyle {
  const char* format;
  QColor colour;
};
const FormatStyle kFormats[] = {{"e4m3", QColor(148, 103, 189)}, {"e5m2", QColor(23, 150, 190)}, {"e2m1", QColor(188, 150, 34)}};

}  // namespace

bool HistogramView::isFp8Key(const QString& key) {
  return key.contains(QLatin1String("|fp8:")) || key.contains(QLatin1String("|fp8blocks:"));
}

namespace {
// "fp8:2.x" -> "2.x", "fp8blocks:2.x" -> "2.x".
std::string fp8TensorName(const std::string& recordTensor) {
  const auto colon = recordTensor.find(':');
  return colon == std::string::npos ? recordTensor : recordTensor.substr(colon + 1);
}
bool isBlocksRecord(const std::string& recordTensor) { return recordTensor.rfind("fp8blocks:", 0) == 0; }
}  // namespace

std::vector<HistogramFrame> HistogramView::fp8Frames(const RunData& run, QHash<QString, QString>* formats) {
  std::vector<HistogramFrame> frames;
  for (const StepMetrics& m : run.steps) {
    HistogramFrame f{m.step, 1.0f, {}};
    for (const Fp8TensorRecord& x : m.fp8) {
      if (x.scaledExponents.empty() && x.count == 0) continue;
      if (x.scaledExponents.empty()) continue;  // not a histogram step
      HistogramRecord r;
      r.tensor = std::string("fp8:") + x.tensor;
      r.kind = kindOfRole(x.tensor);
      r.dtype = DType::F32;
      ExponentHistogram h;
      std::int64_t nonzero = 0;
      for (const auto& [e, n] : x.scaledExponents) {
        const int bin = std::clamp(e - kHistMinExp, 0, kHistExpBins - 1);
        h.counts[std::size_t(bin)] += n;
        nonzero += n;
      }
      h.counts[std::size_t(kHistBinZero)] += std::max<std::int64_t>(0, x.count - nonzero);
      h.total = std::max(x.count, nonzero);
      r.scaled = h;
      r.unscaled = h;
      if (formats)
        formats->insert(QString::fromLatin1(histogramKindName(r.kind).data()) + QLatin1Char('|') +
                            QString::fromStdString(r.tensor),
                        QString::fromStdString(x.format));
      f.records.push_back(std::move(r));
      // Block recipes: the histogram of the block scales' exponents (log2 of each block's scale),
      // as a tensor of its own: an outlier's block stands apart from the others.
      if (!x.blockExponents.empty()) {
        HistogramRecord b;
        b.tensor = std::string("fp8blocks:") + x.tensor;
        b.kind = kindOfRole(x.tensor);
        b.dtype = DType::F32;
        ExponentHistogram bh;
        for (const auto& [e, n] : x.blockExponents) {
          bh.counts[std::size_t(std::clamp(e - kHistMinExp, 0, kHistExpBins - 1))] += n;
          bh.total += n;
        }
        b.scaled = bh;
        b.unscaled = bh;
        if (formats)
          formats->insert(QString::fromLatin1(histogramKindName(b.kind).data()) + QLatin1Char('|') +
                              QString::fromStdString(b.tensor),
                          QString::fromStdString(x.format));
        f.records.push_back(std::move(b));
      }
    }
    if (!f.records.empty()) frames.push_back(std::move(f));
  }
  return frames;
}

const std::vector<HistogramFrame>& HistogramView::framesOf(const RunData* run) const {
  if (!isFp8Key(m_tensorKey)) return run->histograms;
  if (run != m_fp8Run || run->steps.size() != m_fp8Steps) {
    m_fp8Run = run;
    m_fp8Steps = run->steps.size();
    m_fp8Frames = fp8Frames(*run, &m_fp8Formats);
  }
  return m_fp8Frames;
}

void HistogramView::addFp8Bands() {
  m_fp8Bands.clear();
  for (const FormatStyle& s : kFormats) {
    Fp8Band b;
    b.format = QString::fromLatin1(s.format);
    auto make = [&](const QString& name, int alpha) {
      auto* upper = new QLineSeries;
      auto* lower = new QLineSeries;
      auto* area = new QAreaSeries(upper, lower);
      upper->setParent(area);
      lower->setParent(area);
      area->setName(name);
      area->setProperty("ampNoHover", true);
      area->setProperty("ampNoAutoRange", true);
      m_view->addSeries(area);
      QColor c = s.colour;
      c.setAlpha(alpha);
      area->setBrush(c);
      area->setPen(Qt::NoPen);
      area->setProperty("ampBandColor", c);
      legibleSwatch(area, c);
      m_view->setLegendEntryVisible(area, false);
      setBackgroundBand(area, 0, 0, 0, 0);
      return area;
    };
    b.normal = make(tr("%1 normal").arg(fp8FormatLabel(b.format)), 46);
    b.subnormal = make(tr("%1 subnormal").arg(fp8FormatLabel(b.format)), 22);
    m_fp8Bands.push_back(b);
  }
}

void HistogramView::placeFp8Bands(const QString& format) {
  m_fp8FormatShown = format;
  const double top = m_view->yAxis()->max();
  int strip = 0;
  for (const Fp8Band& b : m_fp8Bands) {
    if (!b.normal || !b.subnormal) continue;  // removed with the view's series (ChartPanel::setRuns)
    const auto range = fp8FormatRange(b.format);
    const bool own = b.format == format;
    if (format.isEmpty() || !range) {
      setBackgroundBand(b.normal, 0, 0, 0, 0);
      setBackgroundBand(b.subnormal, 0, 0, 0, 0);
      m_view->setLegendEntryVisible(b.normal, false);
      m_view->setLegendEntryVisible(b.subnormal, false);
      continue;
    }
    // Bin e holds [2^e, 2^(e+1)): the normal range from the smallest normal's bin up to the
    // largest finite value's bin, the subnormals from the smallest subnormal's bin.
    const double normalLeft = binLeft(range->minNormalExp - kHistMinExp);
    const double normalRight = binLeft(range->maxExp - kHistMinExp) + 1;
    const double subLeft = binLeft(range->minSubnormalExp - kHistMinExp);
    QColor c = b.normal->property("ampBandColor").value<QColor>();
    if (own) {
      b.normal->setBrush(c);
      setBackgroundBand(b.normal, normalLeft, normalRight, -10, 10);
      setBackgroundBand(b.subnormal, subLeft, normalLeft, -10, 10);
    } else {
      c.setAlpha(130);
      b.normal->setBrush(c);
      const double hi = top * (1 - 0.035 * strip), lo = top * (0.965 - 0.035 * strip);
      ++strip;
      setBackgroundBand(b.normal, normalLeft, normalRight, lo, hi);
      setBackgroundBand(b.subnormal, 0, 0, 0, 0);
    }
    m_view->setLegendEntryVisible(b.normal, true);
    m_view->setLegendEntryVisible(b.subnormal, own);
  }
}

std::pair<double, double> HistogramView::fp8BandExtent(const QString& format, bool subnormal) const {
  for (const Fp8Band& b : m_fp8Bands) {
    if (b.format != format) continue;
    const QAreaSeries* area = subnormal ? b.subnormal : b.normal;
    for (const BackgroundBand& band : m_backgroundBands)
      if (band.area == area && band.left < band.right) return {band.left, band.right};
  }
  return {0, 0};
}

QString HistogramView::fp8Caption(const RunData* run, const HistogramRecord& rec, const HistogramFrame& frame) const {
  const std::string name = fp8TensorName(rec.tensor);
  if (isBlocksRecord(rec.tensor)) {
    int lo = 0, hi = 0;
    bool any = false;
    for (int b = 0; b < kHistExpBins; ++b)
      if (rec.scaled.counts[std::size_t(b)] > 0) {
        if (!any) lo = kHistMinExp + b;
        hi = kHistMinExp + b;
        any = true;
      }
    return tr("%1 · %2's block scales (%3): %4 blocks, log2 of their scales from %5 to %6")
        .arg(run->name, QString::fromStdString(name), QString::fromStdString(describeFp8Recipe(run->config.fp8)))
        .arg(rec.scaled.total)
        .arg(lo)
        .arg(hi);
  }
  const Fp8TensorRecord* x = nullptr;
  for (auto it = run->steps.rbegin(); it != run->steps.rend() && !x; ++it)
    if (it->step == frame.step)
      for (const Fp8TensorRecord& r : it->fp8)
        if (r.tensor == name) x = &r;
  const QString key = QString::fromLatin1(histogramKindName(rec.kind).data()) + QLatin1Char('|') +
                      QString::fromStdString(rec.tensor);
  const QString format = m_fp8Formats.value(key);
  QStringList lines;
  if (x)
    lines << tr("%1 · values × their %2 scale (%3) · quantising flushed %4 to zero, clipped %5 · SQNR %6 dB")
                 .arg(run->name, fp8FormatLabel(format), QString::number(x->scale, 'g', 4),
                      percentText(x->underflow), percentText(x->overflow), QString::number(x->sqnrDb, 'f', 1));
  if (const auto range = fp8FormatRange(format)) {
    const ExponentHistogram& h = rec.scaled;
    std::int64_t normal = 0, sub = 0, below = 0, above = 0;
    for (int b = 0; b < kHistExpBins; ++b) {
      const int e = kHistMinExp + b;
      const std::int64_t n = h.counts[std::size_t(b)];
      if (e > range->maxExp) above += n;
      else if (e >= range->minNormalExp) normal += n;
      else if (e >= range->minSubnormalExp) sub += n;
      else below += n;
    }
    lines << tr("in %1: normal %2 · subnormal %3 · below its range %4 · above it %5 · zero before %6")
                 .arg(fp8FormatLabel(format), percentText(h.fraction(normal)), percentText(h.fraction(sub)),
                      percentText(h.fraction(below)), percentText(h.fraction(above)),
                      percentText(h.fraction(h.counts[std::size_t(kHistBinZero)])));
  }
  return lines.join(QLatin1Char('\n'));
}

}  // namespace amp::ui
