// The fp8 views (issue 39) against figures computed here from the records they draw:
// - the heat map's rows are the tensors in model order (the engine records dy in backward, in
//   reverse: a map in record order puts fc2.dy above fc1.dy), each cell coloured by that
//   tensor's share at that step, its hover naming tensor, step, both shares and the SQNR;
// - the scale timeline's step line sits at format max / scale of each step (E4M3 448, E5M2
//   57344) on the log2 axis, the history line at the history amax, the spike and the clipped
//   steps marked, two runs overlaid.
#include <QApplication>
#include <QFileInfo>
#include <QSet>
#include <QImage>
#include <QPainter>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

#include "ui/charts/dashboard.h"
#include "ui/charts/fp8_heat_map.h"
#include "ui/charts/fp8_scale_timeline.h"
#include "ui/charts/fp8_series.h"
#include "ui/charts/heat_map_item.h"
#include "ui/charts/histogram_bins.h"
#include "ui/charts/histogram_view.h"
#include "ui/charts/memory_chart.h"
#include "ui/run_data.h"

using namespace amp;
using namespace amp::ui;

namespace {

// The figures of tensor `t` (0-based position in model order) at `step`: distinct per cell, so a
// cell drawn from the wrong row or column shows.
double underflowOf(int t, std::int64_t step) { return 0.01 * (t + 1) + 0.001 * double(step); }
double overflowOf(int t, std::int64_t step) { return step == 3 && t == 1 ? 0.25 : 0.0; }
double sqnrOf(int t, std::int64_t step) { return 20.0 + t - 0.5 * double(step); }
double scaleOf(std::int64_t step, double factor) { return step == 1 ? 1.0 : factor * std::ldexp(1.0, int(step)); }

const char* const kModelOrder[] = {"fc1.x", "fc1.w", "fc1.dy", "fc2.x", "fc2.w", "fc2.dy"};

Fp8TensorRecord record(int t, std::int64_t step, double scaleFactor) {
  Fp8TensorRecord r;
  r.tensor = kModelOrder[t];
  r.format = QString::fromLatin1(kModelOrder[t]).endsWith(QLatin1String(".dy")) ? "e5m2" : "e4m3";
  r.amax = 3.0 * double(step) * (t + 1);
  r.scale = scaleOf(step, scaleFactor);
  r.historyAmax = step == 1 ? std::nan("") : 2.5 * double(step) * (t + 1);
  r.underflow = underflowOf(t, step);
  r.overflow = overflowOf(t, step);
  r.sqnrDb = sqnrOf(t, step);
  r.count = 1000;
  r.hasWhatIf = true;
  r.whatIfUnderflow = 0.5 * underflowOf(t, step);
  r.whatIfOverflow = 0;
  r.whatIfSqnrDb = sqnrOf(t, step) + 10;
  return r;
}

// A two-layer fp8 run of `steps` steps, records in the order the engine makes them: forward
// (fc1.x, fc1.w, fc2.x, fc2.w), then backward (fc2.dy, fc1.dy).
RunData fp8Run(int id, const QString& name, int steps, double scaleFactor = 1.0) {
  RunData run;
  run.id = id;
  run.name = name;
  run.config.mode = PrecisionMode::Fp8;
  run.config.fp8.recipe = "delayed";
  run.config.fp8.injectSpike = "4:fc1.w:100";
  run.config.fp8.whatIf = "mxfp8";
  for (int s = 1; s <= steps; ++s) {
    StepMetrics m;
    m.step = s;
    m.loss = 1.0;
    for (int t : {0, 1, 3, 4, 5, 2}) m.fp8.push_back(record(t, s, scaleFactor));
    run.append(m);
  }
  return run;
}

}  // namespace

class TestFp8Views : public QObject {
  Q_OBJECT

 private slots:
  void tensorsAreListedInModelOrder() {
    const RunData run = fp8Run(1, QStringLiteral("fp8"), 3);
    QStringList expected;
    for (const char* t : kModelOrder) expected << QString::fromLatin1(t);
    QCOMPARE(fp8TensorsInModelOrder(run), expected);
    const Fp8TensorSeries s = fp8Series(run, QStringLiteral("fc2.w"));
    QCOMPARE(s.size(), 3);
    QCOMPARE(s.format, QStringLiteral("e4m3"));
    QCOMPARE(s.underflow[2], underflowOf(4, 3));
  }

  void heatMapRowsAreTensorsInModelOrderAndCellsTheirShares() {
    RunData run = fp8Run(7, QStringLiteral("lesson/fp8_delayed"), 5);
    Fp8HeatMapPanel panel;
    panel.resize(900, 500);
    panel.setRuns({&run});
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.refreshNow();
    QStringList expected;
    for (const char* t : kModelOrder) expected << QString::fromLatin1(t);
    QCOMPARE(panel.rowNames(), expected);
    QCOMPARE(panel.columnSteps(), (QVector<double>{1, 2, 3, 4, 5}));
    // Every cell: the share of its own tensor and step, and the pixel its colour on the bar.
    const QImage image = panel.image();
    QCOMPARE(image.size(), QSize(5, 6));
    QCOMPARE(panel.colourMin(), 0.0);
    QCOMPARE(panel.colourMax(), 0.1);  // the largest share, 0.065, rounded up to 10%
    for (int row = 0; row < 6; ++row)
      for (int col = 0; col < 5; ++col) {
        const double want = underflowOf(row, col + 1);
        QVERIFY2(std::abs(panel.cellValue(row, col) - want) < 1e-6,
                 qPrintable(QStringLiteral("row %1 col %2: %3 vs %4").arg(row).arg(col).arg(panel.cellValue(row, col)).arg(want)));
        const QColor c = image.pixelColor(col, row), e = heatColor(want / 0.1);
        QVERIFY2(std::abs(c.red() - e.red()) <= 1 && std::abs(c.green() - e.green()) <= 1 && std::abs(c.blue() - e.blue()) <= 1,
                 qPrintable(QStringLiteral("pixel row %1 col %2").arg(row).arg(col)));
      }
    // The hover of a cell, found by position in the painted map: tensor, step, both shares, SQNR.
    QWidget* map = panel.mapWidget();
    QPoint hit(-1, -1);
    for (int y = 0; y < map->height() && hit.x() < 0; y += 2)
      for (int x = 0; x < map->width(); x += 2)
        if (panel.cellAt(QPointF(x, y)) == QPoint(3, 5)) {  // column 3 (step 4), row 5 (fc2.dy)
          hit = QPoint(x, y);
          break;
        }
    QVERIFY(hit.x() >= 0);
    QTest::mouseMove(map, hit);
    QTRY_VERIFY(!panel.hoverText().isEmpty());
    const QString hover = panel.hoverText();
    QVERIFY2(hover.contains(QStringLiteral("fc2.dy")) && hover.contains(QStringLiteral("step 4")), qPrintable(hover));
    QVERIFY2(hover.contains(QStringLiteral("E5M2")), qPrintable(hover));
    QVERIFY2(hover.contains(QStringLiteral("flushed to zero 6.4%")), qPrintable(hover));  // 0.06 + 0.004
    QVERIFY2(hover.contains(QStringLiteral("clipped 0%")), qPrintable(hover));
    QVERIFY2(hover.contains(QStringLiteral("SQNR 23.0 dB")), qPrintable(hover));  // 20 + 5 - 2
    QVERIFY2(hover.contains(QStringLiteral("what-if mxfp8")), qPrintable(hover));

    // Toggled to overflow: the one clipped cell (fc1.w at step 3) alone is lit.
    panel.setMetric(Fp8HeatMapPanel::Metric::Overflow);
    QCOMPARE(panel.cellValue(1, 2), 0.25);
    QCOMPARE(panel.cellValue(0, 2), 0.0);
    QCOMPARE(panel.colourMax(), 0.5);
    // SQNR, and the what-if recipe's figures in place of the run's own.
    panel.setMetric(Fp8HeatMapPanel::Metric::Sqnr);
    QCOMPARE(panel.cellValue(2, 0), sqnrOf(2, 1));
    QVERIFY(panel.hasWhatIf());
    panel.setWhatIf(true);
    QCOMPARE(panel.cellValue(2, 0), sqnrOf(2, 1) + 10);
    panel.setMetric(Fp8HeatMapPanel::Metric::Underflow);
    QVERIFY(std::abs(panel.cellValue(4, 1) - 0.5 * underflowOf(4, 2)) < 1e-6);
    panel.setWhatIf(false);
    // Rows filtered to the gradients: the dy rows, still in model order.
    panel.setRows(Fp8HeatMapPanel::Rows::Gradients);
    QCOMPARE(panel.rowNames(), (QStringList{QStringLiteral("fc1.dy"), QStringLiteral("fc2.dy")}));
    QVERIFY(std::abs(panel.cellValue(1, 0) - underflowOf(5, 1)) < 1e-6);

    // Steps that arrive later become new columns.
    StepMetrics m;
    m.step = 6;
    for (int t : {0, 1, 3, 4, 5, 2}) m.fp8.push_back(record(t, 6, 1.0));
    run.append(m);
    panel.refreshNow();
    QCOMPARE(panel.columnSteps().size(), 6);
    QVERIFY(std::abs(panel.cellValue(0, 5) - underflowOf(2, 6)) < 1e-6);
  }

  // A GPT's ~30 quantised tensors in a short map (1024x640 at x1.5 leaves it ~230 px): one
  // label per layer, not every third tensor's name; a tall map names every tensor.
  void heatMapLabelsLayersWhenRowsAreThinnerThanText() {
    RunData run;
    run.id = 9;
    run.name = QStringLiteral("gpt");
    run.config.mode = PrecisionMode::Fp8;
    QStringList layers;
    for (int b = 0; b < 2; ++b)
      for (const char* l : {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"})
        layers << QStringLiteral("transformer.h.%1.%2").arg(b).arg(QLatin1String(l));
    layers << QStringLiteral("lm_head");
    for (int s = 1; s <= 3; ++s) {
      StepMetrics m;
      m.step = s;
      for (const QString& l : layers)
        for (const char* role : {".x", ".w", ".dy"}) {
          Fp8TensorRecord r;
          r.tensor = (l + QLatin1String(role)).toStdString();
          r.format = "e2m1";
          r.amax = 1;
          r.underflow = 0.01 * s;
          m.fp8.push_back(r);
        }
      run.append(m);
    }
    Fp8HeatMapPanel panel;
    panel.setPresentationScale(1.5);
    panel.resize(700, 260);
    panel.setRuns({&run});
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.refreshNow();
    panel.mapWidget()->repaint();
    QCOMPARE(panel.rowNames().size(), 27);
    const QStringList shortMap = panel.drawnRowLabels();
    QVERIFY2(shortMap.size() >= 5, qPrintable(shortMap.join(QLatin1Char('|'))));
    for (const QString& label : shortMap)
      QVERIFY2(layers.contains(label), qPrintable(label));  // layers, not "….c_attn.x"
    QCOMPARE(shortMap.first(), layers.first());
    panel.resize(700, 1400);
    panel.mapWidget()->repaint();
    QCOMPARE(panel.drawnRowLabels(), panel.rowNames());
  }

  void timelineStepLineIsFormatMaxOverTheScaleUsed() {
    RunData a = fp8Run(1, QStringLiteral("fp8/delayed"), 6, 1.0);
    RunData b = fp8Run(2, QStringLiteral("fp8/current"), 6, 0.25);
    b.config.fp8.injectSpike.clear();
    Fp8ScaleTimeline chart;
    chart.resize(900, 520);
    chart.setRuns({&a, &b});
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.refreshNow();
    // The spiked tensor is chosen first.
    QCOMPARE(chart.selectedTensor(), QStringLiteral("fc1.w"));
    QCOMPARE(chart.shownRuns(), (QStringList{QStringLiteral("fp8/delayed"), QStringLiteral("fp8/current")}));
    for (const RunData* run : {&a, &b}) {
      const double factor = run == &a ? 1.0 : 0.25;
      const QList<QPointF> scale = chart.seriesPoints(run->id, QStringLiteral("scale"));
      QCOMPARE(scale.size(), 12);  // two points a step
      for (int s = 1; s <= 6; ++s) {
        const double want = std::log2(448.0 / scaleOf(s, factor));
        for (int k : {0, 1}) {
          const QPointF p = scale[2 * (s - 1) + k];
          QCOMPARE(p.x(), s + (k ? 0.5 : -0.5));
          QVERIFY2(std::abs(p.y() - want) < 1e-9, qPrintable(QStringLiteral("step %1: %2 vs %3").arg(s).arg(p.y()).arg(want)));
        }
      }
      const QList<QPointF> floor = chart.seriesPoints(run->id, QStringLiteral("floor"));
      QCOMPARE(floor.size(), 12);
      QVERIFY(std::abs(floor[4].y() - std::log2(std::ldexp(1.0, -9) / scaleOf(3, factor))) < 1e-9);
      const QList<QPointF> amax = chart.seriesPoints(run->id, QStringLiteral("amax"));
      QCOMPARE(amax.size(), 6);
      QVERIFY(std::abs(amax[2].y() - std::log2(3.0 * 3 * 2)) < 1e-9);  // fc1.w is tensor 1
      const QList<QPointF> history = chart.seriesPoints(run->id, QStringLiteral("history"));
      QCOMPARE(history.size(), 5);  // step 1 has none
      QCOMPARE(history.first().x(), 2.0);
      QVERIFY(std::abs(history.first().y() - std::log2(2.5 * 2 * 2)) < 1e-9);
      // fc1.w clipped at step 3.
      const QList<QPointF> clipped = chart.seriesPoints(run->id, QStringLiteral("clipped"));
      QCOMPARE(clipped.size(), 1);
      QCOMPARE(clipped.first().x(), 3.0);
    }
    QCOMPARE(chart.seriesPoints(1, QStringLiteral("spike")).size(), 1);
    QCOMPARE(chart.seriesPoints(1, QStringLiteral("spike")).first().x(), 4.0);
    QVERIFY(chart.seriesPoints(2, QStringLiteral("spike")).isEmpty());
    // A gradient: E5M2's max.
    chart.setSelectedTensor(QStringLiteral("fc2.dy"));
    const QList<QPointF> dy = chart.seriesPoints(1, QStringLiteral("scale"));
    QVERIFY(!dy.isEmpty());
    QVERIFY(std::abs(dy[2].y() - std::log2(57344.0 / scaleOf(2, 1.0))) < 1e-9);
  }

  // Exponent histograms of an fp8 run's quantised tensors: the values after their scale, against
  // the tensor's own format's range full height (E4M3 for x: normal 2^-6..448, i.e. the bins of
  // exponents -6..8; subnormal -9..-7; E5M2 for dy: -14..15 and -16..-15), not fp16's.
  void histogramShowsFp8TensorsAgainstTheirFormatsRange() {
    RunData run = fp8Run(5, QStringLiteral("fp8"), 2);
    StepMetrics m;
    m.step = 3;
    HistogramRecord g;  // the run's ordinary frame at the same step
    g.tensor = "0.weight";
    g.kind = HistogramKind::WeightGrad;
    for (int i = 0; i < 10; ++i) g.scaled.add(1e-3), g.unscaled.add(1e-3);
    m.histograms.push_back(g);
    for (int t : {0, 1, 3, 4, 5, 2}) {
      Fp8TensorRecord r = record(t, 3, 1.0);
      // 100 values: 10 zeros, 60 at 2^2, 25 at 2^-7 (subnormal in E4M3), 5 at 2^-12 (below it)
      r.count = 100;
      r.scaledExponents = {{2, 60}, {-7, 25}, {-12, 5}};
      if (t == 3) r.blockExponents = {{-3, 40}, {10, 1}};  // an outlier's block, 2^13 above the rest
      m.fp8.push_back(r);
    }
    run.append(m);
    HistogramView view;
    view.resize(900, 700);
    view.setRuns({&run});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refreshNow();
    view.setSelectedTensor(QStringLiteral("activation|fp8:fc2.x"));
    view.refreshNow();
    QCOMPARE(view.selectedTensor(), QStringLiteral("activation|fp8:fc2.x"));
    QCOMPARE(view.fp8FormatShown(), QStringLiteral("e4m3"));
    QCOMPARE(view.fp8BandExtent(QStringLiteral("e4m3"), false), (std::pair<double, double>{-6, 9}));
    QCOMPARE(view.fp8BandExtent(QStringLiteral("e4m3"), true), (std::pair<double, double>{-9, -6}));
    const QString caption = view.captionText();
    QVERIFY2(caption.contains(QStringLiteral("in E4M3: normal 60% · subnormal 25% · below its range 5% · above it 0% · zero before 10%")),
             qPrintable(caption));
    view.setSelectedTensor(QStringLiteral("activation_grad|fp8:fc2.dy"));
    view.refreshNow();
    QCOMPARE(view.fp8FormatShown(), QStringLiteral("e5m2"));
    QCOMPARE(view.fp8BandExtent(QStringLiteral("e5m2"), false), (std::pair<double, double>{-14, 16}));
    QCOMPARE(view.fp8BandExtent(QStringLiteral("e5m2"), true), (std::pair<double, double>{-16, -14}));
    // The block scales of a block recipe's tensor: their exponents as bars, no value format's band.
    view.setSelectedTensor(QStringLiteral("activation|fp8blocks:fc2.x"));
    view.refreshNow();
    QCOMPARE(view.selectedTensor(), QStringLiteral("activation|fp8blocks:fc2.x"));
    QCOMPARE(view.fp8FormatShown(), QString());
    QVERIFY2(view.captionText().contains(QStringLiteral("41 blocks, log2 of their scales from -3 to 10")),
             qPrintable(view.captionText()));
        // An ordinary tensor: fp16's bands again, no fp8 band.
    view.setSelectedTensor(QStringLiteral("weight_grad|0.weight"));
    view.refreshNow();
    QCOMPARE(view.fp8FormatShown(), QString());
    QCOMPARE(view.fp8BandExtent(QStringLiteral("e4m3"), false), (std::pair<double, double>{0, 0}));
  }

  // The memory chart names an fp8 run's weights for what the engine counts in them (1-byte or
  // 4-bit codes with their scales) and its masters fp32; a bf16 run keeps the plain names.
  void memoryChartNamesFp8WeightsScalesAndMasters() {
    RunData fp8 = fp8Run(1, QStringLiteral("fp8"), 3);
    RunData fp4 = fp8Run(2, QStringLiteral("nvfp4"), 3);
    fp4.config.fp8.recipe = "nvfp4";
    RunData bf16 = fp8Run(3, QStringLiteral("bf16"), 3);
    bf16.config.mode = PrecisionMode::AmpBf16;
    MemoryChart chart;
    chart.resize(1000, 400);
    chart.setRuns({&fp8, &fp4, &bf16});
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    const int weights = int(MemCategory::Weights), masters = int(MemCategory::MasterWeights);
    chart.setSelectedRun(1);
    chart.refreshNow();
    QCOMPARE(chart.areaNames().value(weights), QStringLiteral("fp8 weights + scales"));
    QCOMPARE(chart.areaNames().value(masters), QStringLiteral("fp32 masters"));
    chart.setSelectedRun(2);
    chart.refreshNow();
    QCOMPARE(chart.areaNames().value(weights), QStringLiteral("fp4 weights + scales"));
    QVERIFY(MemoryChart::categoryName(weights, &fp4, false).contains(QStringLiteral("E4M3 scale per 16")));
    chart.setSelectedRun(3);
    chart.refreshNow();
    QCOMPARE(chart.areaNames().value(weights), QStringLiteral("weights"));
    QCOMPARE(chart.areaNames().value(masters), QStringLiteral("master"));
  }

  void viewsAreDashboardTabsAndExport() {
    RunData run = fp8Run(3, QStringLiteral("fp8"), 4);
    Dashboard d;
    d.resize(1200, 800);
    d.setRuns({&run});
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    QVERIFY(d.chartNames().contains(QStringLiteral("fp8-scale")));
    QVERIFY(d.chartNames().contains(QStringLiteral("fp8-heat")));
    QTemporaryDir dir;
    for (const QString& name : {QStringLiteral("fp8-scale"), QStringLiteral("fp8-heat")})
      for (const char* ext : {"png", "svg", "pdf"}) {
        const QString path = dir.filePath(name + QLatin1Char('.') + QLatin1String(ext));
        QString error;
        QVERIFY2(d.exportChart(name, path, {}, QSize(900, 500), 96, &error), qPrintable(error));
        QVERIFY(QFileInfo(path).size() > 1000);
      }
    // The exported heat map shows its cells: more than a handful of colours.
    QImage png(dir.filePath(QStringLiteral("fp8-heat.png")));
    QSet<QRgb> colours;
    for (int y = 0; y < png.height(); y += 3)
      for (int x = 0; x < png.width(); x += 3) colours.insert(png.pixel(x, y));
    QVERIFY(colours.size() > 10);
  }
};

QTEST_MAIN(TestFp8Views)
#include "tst_fp8_views.moc"
