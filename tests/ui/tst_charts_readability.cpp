// Charts readable in a small window (issue item 8, the charts' part) and on other x axes: no
// tick label elided to "…" at 1024x640 or 1280x800, no meaningless ticks on empty charts, the
// scale chart's tracker labels clear of its title, and x by step, epoch or training time.
#include <QAbstractSeries>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QCategoryAxis>
#include <QGraphicsScene>
#include <cmath>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QTest>
#include <QXYSeries>
#include <QValueAxis>
#include <memory>

#include "ui/charts/accuracy_chart.h"
#include "ui/charts/chart_legend.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/layer_grid_panel.h"
#include "ui/charts/loss_chart.h"
#include "ui/charts/memory_chart.h"
#include "ui/charts/scale_chart.h"
#include "ui/charts/synthetic_runs.h"
#include "ui/charts/throughput_chart.h"
#include "ui/run_data.h"
#include "ui/runs_model.h"
#include "ui/theme.h"

using namespace amp;
using namespace amp::ui;

class TestChartsReadability : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<RunData>> m_runs;

  QVector<const RunData*> makeRuns(int count, std::int64_t steps = 2000) {
    m_runs.clear();
    QVector<const RunData*> out;
    const PrecisionMode modes[] = {PrecisionMode::Fp32, PrecisionMode::AmpFp16, PrecisionMode::AmpBf16,
                                   PrecisionMode::PureFp16};
    for (int i = 0; i < count; ++i) {
      auto run = std::make_unique<RunData>();
      run->id = i + 1;
      run->batchesPerEpoch = 50;
      fillSyntheticRun(*run, {.name = QStringLiteral("run %1").arg(i + 1),
                              .mode = modes[i % 4],
                              .steps = steps,
                              .histogramEvery = 200,
                              .evalEvery = 200,
                              .seed = std::uint64_t(i + 1),
                              .color = runColor(i)});
      out.append(run.get());
      m_runs.push_back(std::move(run));
    }
    return out;
  }

  // Shows the dashboard on its loss-scale chart, laid out; nullptr if the window never showed.
  static ChartView* showScaleChart(Dashboard& d) {
    d.show();
    if (!QTest::qWaitForWindowExposed(&d)) return nullptr;
    d.showChart(QStringLiteral("scale"));
    d.refresh();
    QApplication::processEvents();
    return d.scaleChart()->chartView();
  }

  // Every text Qt Charts drew for the axes (tick labels, titles) in the panel's views.
  static QStringList axisTexts(ChartView* view) {
    QStringList out;
    for (QGraphicsItem* item : view->scene()->items()) {
      if (!item->isVisible()) continue;
      if (auto* t = dynamic_cast<QGraphicsTextItem*>(item)) out << t->toPlainText();
    }
    return out;
  }

 private slots:
  // The dashboard as it sits in the main window: docks take ~40% of the width; at 1920x1080 a
  // lesson's result panel above it and the runs dock below leave it 560 px (issue 25: the
  // accuracy and throughput ticks read "…" there).
  void noElidedTickLabels_data() {
    QTest::addColumn<QSize>("dashboard");
    QTest::newRow("1024x640") << QSize(635, 525);
    QTest::newRow("1280x800") << QSize(794, 656);
    QTest::newRow("1920x1080 under a lesson's result") << QSize(1495, 560);
  }
  void noElidedTickLabels() {
    QFETCH(QSize, dashboard);
    Dashboard d;
    d.resize(dashboard);
    d.setRuns(makeRuns(4));
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    QApplication::processEvents();
    QStringList elided;
    for (const QString& name : {QStringLiteral("loss"), QStringLiteral("scale"), QStringLiteral("accuracy"),
                                QStringLiteral("throughput"), QStringLiteral("memory")}) {
      d.showChart(name);  // its tab, when the dashboard is too small for the grid
      QApplication::processEvents();
      ChartPanel* p = d.panel(name);
      QList<ChartView*> views{p->chartView()};
      if (auto* m = qobject_cast<MemoryChart*>(p)) views << m->peakView();
      for (ChartView* v : views) {
        if (!v->isVisible()) continue;  // e.g. the memory panel's bars in a narrow cell
        const QStringList texts = axisTexts(v);
        for (const QString& text : texts)
          if (text.contains(QChar(0x2026)) || text.contains(QLatin1String("..."))) {
            elided << QStringLiteral("%1: [%2]").arg(name, texts.join(QLatin1String(" | ")));
            break;
          }
      }
    }
    QVERIFY2(elided.isEmpty(), qPrintable(elided.join(QLatin1String("\n"))));
  }

  void emptyChartsShowNoTicks() {
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns({});
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    for (const QString& name : {QStringLiteral("loss"), QStringLiteral("scale"), QStringLiteral("accuracy"),
                                QStringLiteral("throughput"), QStringLiteral("memory")}) {
      ChartView* v = d.panel(name)->chartView();
      QVERIFY2(!v->placeholder().isEmpty(), qPrintable(name));
      QVERIFY2(!v->xAxis()->labelsVisible(), qPrintable(name));
      QVERIFY2(!v->yAxis()->labelsVisible(), qPrintable(name));
    }
    // Data arrives: the ticks come back.
    d.setRuns(makeRuns(1, 200));
    d.refresh();
    QVERIFY(d.lossChart()->chartView()->xAxis()->labelsVisible());
    QVERIFY(d.lossChart()->chartView()->yAxis()->labelsVisible());
  }

  // The growth tracker's labels ("×2 after 1988 more clean steps") sit inside the plot, under
  // the title.
  void trackerLabelsClearOfTitle() {
    Dashboard d;
    d.resize(1024, 560);
    d.setRuns(makeRuns(8));  // four runs with a scaler: their labels have to make way
    ChartView* v = showScaleChart(d);
    QVERIFY(v);
    const QRectF plot = v->chart()->plotArea();
    int labels = 0;
    for (QGraphicsItem* item : v->scene()->items()) {
      auto* t = dynamic_cast<QGraphicsSimpleTextItem*>(item);
      if (!t || !t->isVisible() || !t->text().startsWith(QStringLiteral("×2 after"))) continue;
      ++labels;
      const QRectF r = t->sceneBoundingRect();
      QVERIFY2(r.top() >= plot.top() - 0.5, qPrintable(t->text()));
      QVERIFY2(r.bottom() <= plot.bottom() + 0.5, qPrintable(t->text()));
    }
    QVERIFY(labels > 0);
  }

  // Issue 25: a loss scale that stays at 2^16 (or 2^0) was drawn on the frame's edge, where it
  // reads as the frame. Every point of the scale lines keeps clear of the plot's top and bottom.
  void scaleLinesClearOfTheFrame() {
    Dashboard d;
    d.resize(1280, 800);
    const QVector<const RunData*> runs = makeRuns(4, 300);
    // Run 2 (fp16) as the underflow lesson's unscaled run: its scale 2^0 for the whole run, below
    // the other fp16 run's 2^16 (a 16-power span, where a quarter power of margin was 1.5%).
    for (double& scale : m_runs[1]->series.scale) scale = 1.0;
    d.setRuns(runs);
    ChartView* v = showScaleChart(d);
    QVERIFY(v);
    const QRectF plot = v->chart()->plotArea();
    QVERIFY(plot.height() > 50);
    int points = 0;
    for (QAbstractSeries* s : v->chart()->series()) {
      auto* xy = qobject_cast<QXYSeries*>(s);
      if (!xy || !xy->isVisible() || xy->property("ampNoAutoRange").toBool()) continue;
      for (const QPointF& p : xy->points()) {
        const QPointF at = v->chart()->mapToPosition(p, xy);
        ++points;
        QVERIFY2(at.y() >= plot.top() + 0.04 * plot.height() && at.y() <= plot.bottom() - 0.04 * plot.height(),
                 qPrintable(QStringLiteral("%1 at y %2, plot %3..%4").arg(xy->name()).arg(at.y()).arg(plot.top()).arg(plot.bottom())));
      }
    }
    QVERIFY(points > 0);
  }

  // Issue 42 item 5: the CLI's dashboard export had two of its six panels look empty: a loss
  // scale flat at 2^16 with "2^16" the axis' only label, and "no test set evaluated yet" over
  // runs that had long finished.
  void exportedPanelsOfFinishedRunsSayWhatTheyShow() {
    Dashboard d;
    d.resize(1800, 1050);
    const QVector<const RunData*> runs = makeRuns(2, 20);
    for (auto& r : m_runs) {
      for (double& scale : r->series.scale) scale = 65536.0;
      r->series.testStep.clear();
      r->series.testLoss.clear();
      r->series.testAcc.clear();
      r->hasTestSet.reset();  // as loaded from a CLI folder
      r->status = RunStatus::Finished;
      r->config.data.name = "spirals";
    }
    d.setRuns(runs);
    ChartView* v = showScaleChart(d);
    QVERIFY(v);
    QStringList labels;
    for (QAbstractAxis* a : v->chart()->axes(Qt::Vertical))
      if (auto* c = qobject_cast<QCategoryAxis*>(a); c && c->isVisible()) labels << c->categoriesLabels();
    QVERIFY2(labels.size() >= 3, qPrintable(labels.join(QStringLiteral(", "))));
    d.showChart(QStringLiteral("accuracy"));
    d.refresh();
    const QString said = d.panel(QStringLiteral("accuracy"))->chartView()->placeholder();
    QVERIFY2(!said.contains(QStringLiteral("yet")) && said.contains(QStringLiteral("was evaluated")), qPrintable(said));
    for (auto& r : m_runs) r->config.data.name = "synthetic";  // the recipe's: it has none at all
    d.refresh();
    QVERIFY(d.panel(QStringLiteral("accuracy"))->chartView()->placeholder().contains(QStringLiteral("no test set in")));
  }

  // Issue 42 item 5: the app's dashboard export at presentation scale 1.5 dropped the accuracy
  // chart's test-loss axis (its dashed lines then read against the accuracy's): the chart in an
  // export's cell at x1.5 carries the same labels as at x1. (The histogram's cut labels in the
  // same export are the histogram view's.)
  void anExportAtPresentationScaleKeepsTheTestLossAxis() {
    const QVector<const RunData*> runs = makeRuns(2, 400);
    auto texts = [&runs](double scale) {
      Dashboard d;
      d.resize(1800, 1050);
      d.setRuns(runs);
      d.setPresentationScale(scale);
      d.refresh();
      QTemporaryDir dir;
      const QString path = dir.filePath(QStringLiteral("dash.svg"));
      // A dashboard export's cell: a third of 1800 by half of 1050.
      if (!d.exportChart(QStringLiteral("accuracy"), path, QStringLiteral("svg"), QSize(596, 505))) return QStringList();
      QFile f(path);
      f.open(QIODevice::ReadOnly);
      const QString svg = QString::fromUtf8(f.readAll());
      QStringList out;
      static const QRegularExpression text(QStringLiteral("<text[^>]*>([^<]*)</text>"));
      for (auto it = text.globalMatch(svg); it.hasNext();) out << it.next().captured(1).trimmed();
      return out;
    };
    const QStringList x1 = texts(1.0), x15 = texts(1.5);
    QVERIFY(!x1.isEmpty());
    // The test-loss axis' ticks: the labels of the x1 export that sit on it, found again.
    QStringList missing;
    for (const QString& t : x1)
      if (!t.isEmpty() && x1.count(t) > x15.count(t)) missing << t;
    missing.removeDuplicates();
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QStringLiteral(" | "))));
  }

  // Issue 42 item 7: accuracies of 82.7% and 82.9% filled an 82.7-82.9 axis, so 0.2 points looked
  // like the chart's whole height; and one run's orange test-loss dots had a grey legend key.
  void smallDifferencesLookSmall() {
    Dashboard d;
    d.resize(1280, 800);
    const QVector<const RunData*> runs = makeRuns(1, 400);
    RunData& r = *m_runs[0];
    for (int i = 0; i < r.series.testAcc.size(); ++i) r.series.testAcc[i] = 0.827 + 0.002 * (i % 2);
    d.setRuns(runs);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.showChart(QStringLiteral("accuracy"));
    d.refresh();
    QValueAxis* y = d.panel(QStringLiteral("accuracy"))->chartView()->yAxis();
    QVERIFY2(y->max() - y->min() >= 10 && y->min() <= 82.7 && y->max() >= 82.9 && y->max() <= 100,
             qPrintable(QStringLiteral("%1..%2").arg(y->min()).arg(y->max())));
    d.showChart(QStringLiteral("loss"));
    d.refresh();
    const QList<LegendEntry> keys = d.lossChart()->chartView()->runLegend()->entries();
    bool found = false;
    for (const LegendEntry& e : keys)
      if (e.label.startsWith(QStringLiteral("test loss"))) {
        found = true;
        QCOMPARE(e.color, r.color.darker(115));
      }
    QVERIFY(found);
  }

  // Issue 25 item 15: the accuracy chart's first and last evaluation dots sat on the frame, cut
  // in half. Every dot is whole inside the plot.
  void accuracyDotsAreWhole() {
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns(makeRuns(2, 2000));  // evaluated every 200 steps, the last at step 2000
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.showChart(QStringLiteral("accuracy"));
    d.refresh();
    ChartView* v = d.accuracyChart()->chartView();
    const QRectF plot = v->chart()->plotArea();
    int dots = 0;
    for (QAbstractSeries* s : v->chart()->series()) {
      auto* xy = qobject_cast<QXYSeries*>(s);
      if (!xy || !xy->isVisible() || !xy->pointsVisible()) continue;
      const double r = xy->markerSize() / 2;
      for (const QPointF& p : xy->points()) {
        const QPointF at = v->chart()->mapToPosition(p, xy);
        ++dots;
        QVERIFY2(plot.adjusted(r, r, -r, -r).contains(at),
                 qPrintable(QStringLiteral("%1: dot at (%2, %3), plot %4..%5").arg(xy->name()).arg(at.x()).arg(at.y())
                                .arg(plot.left()).arg(plot.right())));
      }
    }
    QVERIFY(dots >= 10);
    // Narrow, at x1.5 (a projector's 1024x640): both y axes keep their titles, so the solid and
    // the dashed lines say what they are (both were hidden: no y label, test loss without axis).
    d.setPresentationScale(1.5);
    d.resize(640, 480);
    QApplication::processEvents();
    d.refresh();
    QVERIFY(v->yAxis()->isTitleVisible());
    QVERIFY(v->secondaryYAxis() && v->secondaryYAxis()->isTitleVisible());
  }

  // TensorBoard's distributions: a "layers" tab with one heat map per tensor of the focused run.
  // Issue 25 item 10: throughput was raw per-step samples/s, runs drawn over each other. Each run
  // is now smoothed over a faint raw line, and the legend gives its rate and its ratio to its
  // group's fp32 run.
  void throughputIsSmoothedAndComparableAtAGlance() {
    QVector<const RunData*> runs = makeRuns(3, 600);
    for (auto& r : m_runs) r->group = QStringLiteral("twins");
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns(runs);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.showChart(QStringLiteral("throughput"));
    d.refresh();
    ChartView* view = d.throughputChart()->chartView();
    auto series = [view](int runId, const QString& what) -> QXYSeries* {
      for (QAbstractSeries* s : view->chart()->series())
        if (s->property("ampRunId").toInt() == runId && s->property("ampValue").toString() == what)
          return qobject_cast<QXYSeries*>(s);
      return nullptr;
    };
    auto variation = [](const QXYSeries* s) {
      double sum = 0;
      const QList<QPointF> p = s->points();
      for (int i = 1; i < p.size(); ++i) sum += std::abs(p[i].y() - p[i - 1].y());
      return sum;
    };
    QXYSeries* raw = series(2, QStringLiteral("samples/s (raw)"));
    QXYSeries* smooth = series(2, QStringLiteral("samples/s (smoothed)"));
    QVERIFY(raw && smooth);
    QVERIFY(smooth->pen().widthF() > raw->pen().widthF());
    QVERIFY(smooth->pen().color().alphaF() > 2 * raw->pen().color().alphaF());
    QVERIFY2(variation(smooth) < 0.3 * variation(raw),
             qPrintable(QStringLiteral("%1 vs %2").arg(variation(smooth)).arg(variation(raw))));
    const QStringList legend = view->runLegend()->drawnTexts();
    const QString all = legend.join(QStringLiteral(" | "));
    QCOMPARE(legend.filter(QStringLiteral("× fp32")).size(), 2);  // the fp16 and bf16 runs
    QVERIFY2(legend.filter(QStringLiteral("/s")).size() == 3, qPrintable(all));
    // The ratio is the runs table's speed-up, in its words (issue 38: the legend gave the smoothed
    // rates' ratio at the runs' ends, another figure than the table's and the lesson's).
    RunsModel table;
    for (auto& r : m_runs) table.addRun(r.get());
    const QString speedUp = table.index(1, RunsModel::SpeedUp).data().toString();
    QVERIFY2(speedUp.endsWith(QChar(0x00D7)) && !speedUp.contains(QLatin1Char('~')), qPrintable(speedUp));  // steady: clean
    QVERIFY2(all.contains(speedUp + QStringLiteral(" fp32")), qPrintable(speedUp + QStringLiteral(" | ") + all));
  }

  // A ratio the step times cannot back reads as the runs table says it: "~1.9× fp32 (noisy)".
  void throughputLegendFlagsANoisyRatioAsTheTableDoes() {
    makeRuns(2, 600);
    for (auto& r : m_runs) r->group = QStringLiteral("twins");
    // Every other fp16 step twice as long (a busy process beside it): its quartiles 2x apart.
    QVector<double>& ms = m_runs[1]->series.stepMs;
    for (qsizetype i = 1; i < ms.size(); i += 2) ms[i] *= 2;
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns({m_runs[0].get(), m_runs[1].get()});
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.showChart(QStringLiteral("throughput"));
    d.refresh();
    const QString all = d.throughputChart()->chartView()->runLegend()->drawnTexts().join(QStringLiteral(" | "));
    RunsModel table;
    for (auto& r : m_runs) table.addRun(r.get());
    const QString speedUp = table.index(1, RunsModel::SpeedUp).data().toString();
    QVERIFY2(speedUp.startsWith(QLatin1Char('~')) && speedUp.endsWith(QStringLiteral("× (noisy)")), qPrintable(speedUp));
    const QString inLegend = speedUp.chopped(int(QStringLiteral(" (noisy)").size())) + QStringLiteral(" fp32 (noisy)");
    QVERIFY2(all.contains(inLegend), qPrintable(inLegend + QStringLiteral(" | ") + all));
  }

  void layersGridShowsEveryTensor() {
    Dashboard d;
    d.resize(1280, 800);
    const QVector<const RunData*> runs = makeRuns(2, 1000);
    d.setRuns(runs);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.showChart(QStringLiteral("layers"));
    d.refresh();
    LayerGridPanel* grid = d.layerGrid();
    QTRY_VERIFY(grid->isVisible());
    const std::vector<HistogramRecord>& records = runs[1]->histograms.back().records;  // newest run
    QCOMPARE(grid->cellTitles().size(), int(records.size()));
    QVERIFY(grid->cellTitles().first().startsWith(QString::fromStdString(records.front().tensor)));
    QVERIFY(grid->columnCount() >= 2);  // a grid, not a list, at this width
    d.setFocusRun(1);
    QCOMPARE(grid->selectedRun(), 1);
    QCOMPARE(grid->cellTitles().size(), int(runs[0]->histograms.back().records.size()));
  }

  void xAxisByEpochAndTime() {
    Dashboard d;
    d.resize(1280, 800);
    const QVector<const RunData*> runs = makeRuns(2, 1000);
    d.setRuns(runs);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    ChartView* loss = d.lossChart()->chartView();
    QVERIFY(loss->xAxis()->max() >= 1000);
    d.setXAxisMode(XAxisMode::Epoch);
    d.refresh();
    const double epochs = runs[0]->series.epoch.last();  // 1000 steps / 50 per epoch
    QCOMPARE(epochs, 20.0);
    for (ChartPanel* p : {static_cast<ChartPanel*>(d.lossChart()), static_cast<ChartPanel*>(d.scaleChart()),
                          static_cast<ChartPanel*>(d.throughputChart()), static_cast<ChartPanel*>(d.memoryChart()),
                          static_cast<ChartPanel*>(d.accuracyChart())}) {
      QValueAxis* x = p->chartView()->xAxis();
      QVERIFY2(x->max() >= epochs && x->max() <= epochs * 1.25, qPrintable(p->name()));
      QCOMPARE(x->titleText(), QStringLiteral("epoch"));
    }
    d.setXAxisMode(XAxisMode::WallTime);
    d.refresh();
    const double seconds = std::max(runs[0]->series.wallS.last(), runs[1]->series.wallS.last());
    QValueAxis* x = loss->xAxis();
    QVERIFY2(x->max() >= seconds && x->max() <= seconds * 1.25,
             qPrintable(QStringLiteral("%1 vs %2").arg(x->max()).arg(seconds)));
    QCOMPARE(x->titleText(), QStringLiteral("training time (s)"));
    // Sub-unit ticks print decimals: no "0 0 1 1 1".
    if (x->tickInterval() < 1) QVERIFY(x->labelFormat() != QStringLiteral("%.0f"));
  }
};

QTEST_MAIN(TestChartsReadability)
#include "tst_charts_readability.moc"
