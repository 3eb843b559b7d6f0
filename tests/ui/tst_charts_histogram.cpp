// The exponent histogram tells what rounding did (issue item 7): a gradient whose values all
// underflowed to zero reads "zero 100%" and "flushed to 0: 100%", never "underflow 0%" alone,
// and its "fraction of values" axis stops at 1.
#include <QTest>
#include <QApplication>
#include <QFontMetricsF>
#include <QAreaSeries>
#include <QChart>
#include <QLineSeries>
#include <QValueAxis>

#include "ui/charts/chart_legend.h"
#include "ui/charts/histogram_bins.h"
#include "ui/charts/histogram_view.h"
#include "ui/run_data.h"

using namespace amp;
using namespace amp::ui;

class TestChartsHistogram : public QObject {
  Q_OBJECT

  // One step's histogram of 1000 gradient values all equal to `value`, of a run in `mode`.
  // flushed: what rounding to 16 bits flushed to zero (-1: not measured).
  static RunData gradientRun(PrecisionMode mode, DType dtype, double value, std::int64_t flushed) {
    RunData run;
    run.id = 1;
    run.name = QStringLiteral("underflow/fp16_noscale");
    run.config.mode = mode;
    run.config.train.histogramEvery = 1;
    StepMetrics m;
    m.step = 1;
    HistogramRecord r;
    r.tensor = "0.weight";
    r.kind = HistogramKind::WeightGrad;
    r.dtype = dtype;
    for (int i = 0; i < 1000; ++i) {
      r.scaled.add(value);
      r.unscaled.add(value);
    }
    r.flushedToZero = flushed;
    r.roundedToInf = flushed >= 0 ? 0 : -1;
    m.histograms.push_back(r);
    run.append(m);
    return run;
  }
  // Shows `view` at `size` on `run` alone, refreshed; false if the window never showed.
  static bool showOn(HistogramView& view, RunData& run, QSize size = {700, 600}) {
    view.resize(size);
    view.setRuns({&run});
    view.show();
    if (!QTest::qWaitForWindowExposed(&view)) return false;
    view.refreshNow();
    return true;
  }
  static RunData zeroGradientRun(std::int64_t flushed) {
    return gradientRun(PrecisionMode::AmpFp16, DType::F16, 0.0, flushed);
  }

 private slots:
  // Issue 40: a histogram whose scaled and unscaled sides are the same (a TensorBoard import's,
  // weights, activations) was captioned "loss scale 2¹⁶" at a step that used that scale.
  void noLossScaleIsClaimedForValuesThatWereNotScaled() {
    RunData run = gradientRun(PrecisionMode::AmpFp16, DType::F32, 1e-3, -1);
    StepMetrics m;
    m.step = 2;
    m.scale = 65536;
    HistogramRecord same = run.histograms.back().records.back();  // scaled == unscaled
    same.tensor = "imported";
    HistogramRecord scaled = same;
    scaled.tensor = "scaled";
    scaled.scaled = ExponentHistogram{};
    for (int i = 0; i < 1000; ++i) scaled.scaled.add(1e-3 * 65536);
    m.histograms = {scaled, same};
    run.append(m);
    HistogramView view;
    QVERIFY(showOn(view, run));
    view.setSelectedTensor(QStringLiteral("weight_grad|imported"));
    view.refreshNow();
    QString caption = view.captionText();
    QVERIFY2(caption.contains(QStringLiteral("not loss-scaled")) && !caption.contains(QStringLiteral("loss scale 2¹⁶")),
             qPrintable(caption));
    view.setSelectedTensor(QStringLiteral("weight_grad|scaled"));
    view.refreshNow();
    caption = view.captionText();
    QVERIFY2(caption.contains(QStringLiteral("loss scale 2¹⁶")), qPrintable(caption));
  }

  void allZeroGradientIsHonest() {
    RunData run = zeroGradientRun(1000);
    HistogramView view;
    QVERIFY(showOn(view, run));
    const QString caption = view.captionText();
    QVERIFY2(caption.contains("zero 100%"), qPrintable(caption));
    QVERIFY2(caption.contains("flushed to 0: 100%"), qPrintable(caption));
    QVERIFY2(caption.contains("rounded to inf: 0%"), qPrintable(caption));
    auto* y = qobject_cast<QValueAxis*>(view.chartView()->yAxis());
    QVERIFY(y);
    QVERIFY2(y->max() <= 1.0, qPrintable(QString::number(y->max())));
    QVERIFY(y->max() >= 1.0);  // the full bar is shown
  }

  // Issue 25 item 9: the caption covered 20-40% of the plot at every size (all of it in a small
  // window). It sits below the plot now, at any size, with every line still in it.
  void captionCoversNoPartOfThePlot() {
    RunData run = zeroGradientRun(1000);
    for (const QSize size : {QSize(700, 600), QSize(480, 300), QSize(1200, 420)}) {
      HistogramView view;
      QVERIFY(showOn(view, run, size));
      QApplication::processEvents();
      QChart* chart = view.chartView()->chart();
      const QRectF plot = chart->mapRectToScene(chart->plotArea());
      const QRectF caption = view.chartView()->captionSceneRect();
      QVERIFY(!caption.isEmpty());
      QVERIFY2(!caption.intersects(plot), qPrintable(QStringLiteral("%1x%2: caption (%3,%4 %5x%6) over plot (%7,%8 %9x%10)")
                                                         .arg(size.width()).arg(size.height())
                                                         .arg(caption.x()).arg(caption.y()).arg(caption.width()).arg(caption.height())
                                                         .arg(plot.x()).arg(plot.y()).arg(plot.width()).arg(plot.height())));
      QVERIFY(plot.height() > 40);
      // Three lines (rounding, scaled, unscaled); two where the plot is short (the domain box
      // shows the unscaled ones), never fewer.
      // A line wider than the chart continues on an indented line of its own (not cut).
      const bool brief = view.chartView()->height() < HistogramView::kBriefCaptionBelowPx;
      int lines = 0;
      for (const QString& l : view.captionText().split(QLatin1Char('\n'))) lines += l.startsWith(QLatin1String("   ")) ? 0 : 1;
      QCOMPARE(lines, brief ? 2 : 3);
      QFont font = view.chartView()->font();
      font.setPointSizeF(8);
      for (const QString& l : view.captionText().split(QLatin1Char('\n')))
        QVERIFY2(QFontMetricsF(font).horizontalAdvance(l) <= size.width(), qPrintable(l));
      QVERIFY(view.captionText().contains(QStringLiteral("rounding in 16 bits")));
    }
  }

  // Issue 25 item 6: in the bf16-no-scaler lesson the bf16 run's gradients near 2^-30 looked "out
  // of range" (bf16's range was a thin strip along the top), and its caption said "as fp16:
  // underflow 100%" beside "flushed to 0: 0%". A run's own format now gets the full-height band,
  // and its caption speaks of that format.
  void aBf16RunShowsBf16sRangeAndSpeaksOfBf16() {
    // Whether the named band spans the plot's full height (else a strip along its top).
    auto fullHeight = [](HistogramView& view, const QString& prefix) {
      auto* y = qobject_cast<QValueAxis*>(view.chartView()->yAxis());
      for (QAbstractSeries* s : view.chartView()->chart()->series())
        if (auto* area = qobject_cast<QAreaSeries*>(s); area && s->name().startsWith(prefix)) {
          const QList<QPointF> lo = area->lowerSeries()->points(), hi = area->upperSeries()->points();
          if (lo.isEmpty() || hi.isEmpty()) return -1;
          return int(lo.first().y() <= y->min() && hi.first().y() >= y->max());
        }
      return -1;
    };
    for (const PrecisionMode mode : {PrecisionMode::AmpBf16, PrecisionMode::AmpFp16}) {
      const bool bf16 = mode == PrecisionMode::AmpBf16;
      // Gradients at 2^-30: below fp16's smallest subnormal, deep inside bf16's range.
      RunData run = gradientRun(mode, DType::F32, 1e-9, 0);
      HistogramView view;
      QVERIFY(showOn(view, run));
      const QString caption = view.captionText();
      QCOMPARE(caption.contains(QStringLiteral("in bf16: zero 0%")), bf16);
      QCOMPARE(caption.contains(QStringLiteral("as fp16")), !bf16);
      QVERIFY2(caption.contains(QStringLiteral("underflow 100%")), qPrintable(caption));  // fp16's loss, said either way
      QCOMPARE(fullHeight(view, QStringLiteral("bf16 normal")), int(bf16));
      QCOMPARE(fullHeight(view, QStringLiteral("fp16 normal")), int(!bf16));
      QCOMPARE(fullHeight(view, QStringLiteral("fp16 subnormal")), int(!bf16));
    }
  }

  // Issue 25 item 16: the heat map had no colour bar, so its colours meant nothing to a class.
  // Its legend holds one, labelled from 1 to the map's largest count (1000 values in one bin).
  void theHeatMapHasAColourBar() {
    RunData run = zeroGradientRun(1000);
    HistogramView view;
    QVERIFY(showOn(view, run));
    const QList<LegendEntry> entries = view.heatMapView()->runLegend()->entries();
    const auto bar = std::find_if(entries.begin(), entries.end(),
                                  [](const LegendEntry& e) { return e.glyph == LegendEntry::Glyph::Gradient; });
    QVERIFY(bar != entries.end());
    QVERIFY2(bar->label.contains(QLocale().toString(1000)), qPrintable(bar->label));
  }

  // Issue 42 item 7: a short run's heat map had its x axis from -10 (one frame at step 1, a
  // column as wide as histogram_every); the axis starts at step 0, and the frame stays on it.
  void theHeatMapAxisStartsAtStepZeroOnAShortRun() {
    RunData run = zeroGradientRun(1000);
    run.config.train.histogramEvery = 20;
    HistogramView view;
    QVERIFY(showOn(view, run));
    const QValueAxis* x = view.heatMapView()->xAxis();
    QVERIFY2(x->min() >= 0.0, qPrintable(QString::number(x->min())));
    QVERIFY(x->max() > 1.0);
  }

  // Beyond the anchors of issue 25: fp16 and bf16 histograms of one tensor together. The bf16
  // run's bars (values near 2^-30) with the fp16 run's histogram of the same tensor (all zero)
  // as an outline, the y range making room for both.
  void anotherRunsHistogramOfTheSameTensorAsAnOutline() {
    RunData bf16 = gradientRun(PrecisionMode::AmpBf16, DType::F32, 1e-9, 0);
    RunData fp16 = zeroGradientRun(1000);
    fp16.id = 2;
    fp16.name = QStringLiteral("fp16_noscale");
    HistogramView view;
    view.resize(700, 600);
    view.setRuns({&bf16, &fp16});
    view.setSelectedRun(bf16.id);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refreshNow();
    QVERIFY(view.comparedOutline().isEmpty());  // none until asked for
    view.setComparedRun(fp16.id);
    const QList<QPointF> outline = view.comparedOutline();
    QVERIFY(!outline.isEmpty());
    double tallest = 0, tallestX = 0;
    for (const QPointF& p : outline)
      if (p.y() > tallest) tallest = p.y(), tallestX = p.x();
    QCOMPARE(tallest, 1.0);  // every fp16 value is zero: one full bar...
    const double zeroLeft = binLeft(kHistBinZero);  // ...in the zero bin
    QVERIFY2(tallestX >= zeroLeft && tallestX <= zeroLeft + binWidth(kHistBinZero), qPrintable(QString::number(tallestX)));
    QVERIFY(qobject_cast<QValueAxis*>(view.chartView()->yAxis())->max() >= 1.0);
    view.setComparedRun(-1);
    QVERIFY(view.comparedOutline().isEmpty());
  }

  void notMeasuredSaysSo() {
    RunData run = zeroGradientRun(-1);
    HistogramView view;
    QVERIFY(showOn(view, run));
    const QString caption = view.captionText();
    QVERIFY2(caption.contains("exactly zero: 100%"), qPrintable(caption));
    QVERIFY2(caption.contains("not measured"), qPrintable(caption));
    QVERIFY(!caption.contains("flushed to 0"));
  }
};

QTEST_MAIN(TestChartsHistogram)
#include "tst_charts_histogram.moc"
