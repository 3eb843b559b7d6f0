// The charts' run legends and run focus, offscreen on made-up runs (no training): names stay
// readable at any run count and in exports, legend clicks hide/show a run, hovering highlights
// it, 16 colours then line styles, and the histogram and memory panels follow a chosen run.
#include <QAbstractSeries>
#include <QFile>
#include <QLineSeries>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QTest>
#include <memory>
#include <set>

#include "ui/charts/chart_legend.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/histogram_view.h"
#include "ui/charts/loss_chart.h"
#include "ui/charts/memory_chart.h"
#include "ui/charts/scale_chart.h"
#include "ui/charts/synthetic_runs.h"
#include "ui/run_data.h"
#include "ui/theme.h"

using namespace amp;
using namespace amp::ui;

class TestChartsLegend : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<RunData>> m_runs;

  QVector<const RunData*> makeRuns(const QStringList& names, std::int64_t steps = 300) {
    m_runs.clear();
    QVector<const RunData*> out;
    for (int i = 0; i < names.size(); ++i) {
      auto run = std::make_unique<RunData>();
      run->id = i + 1;
      fillSyntheticRun(*run, {.name = names[i],
                              .mode = i % 2 ? PrecisionMode::AmpFp16 : PrecisionMode::Fp32,
                              .steps = steps,
                              .histogramEvery = 50,
                              .evalEvery = 100,
                              .seed = std::uint64_t(i + 1),
                              .color = runColor(i)});
      out.append(run.get());
      m_runs.push_back(std::move(run));
    }
    return out;
  }

  static QString svgOf(ChartPanel* panel) {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chart.svg"));
    if (!panel->exportTo(path)) return {};
    QFile f(path);
    f.open(QIODevice::ReadOnly);
    return QString::fromUtf8(f.readAll());
  }

  static QLineSeries* seriesOf(ChartView* view, int runId, const QString& name) {
    for (QAbstractSeries* s : view->chart()->series())
      if (s->property("ampRunId").toInt() == runId && s->name() == name) return qobject_cast<QLineSeries*>(s);
    return nullptr;
  }

  static QPoint legendPoint(ChartView* view, int entry) {
    ChartLegend* legend = view->runLegend();
    return view->mapFromScene(legend->mapToScene(legend->entryRect(entry).center()));
  }

 private slots:
  // Issue item 1: three twin runs read "spirals… spirals… spirals…" and a chart exported alone
  // had colour squares only. The exported loss chart must carry what tells the runs apart.
  void exportedChartCarriesDistinctNames() {
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns(makeRuns({"spirals-mlp · fp32", "spirals-mlp · AMP fp16", "spirals-mlp · AMP bf16"}));
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    const QString svg = svgOf(d.lossChart());
    QVERIFY(!svg.isEmpty());
    for (const char* part : {"fp32", "AMP fp16", "AMP bf16"})
      QVERIFY2(svg.contains(QString::fromUtf8(part)), part);
  }

  // Many runs of different lessons in a narrow grid cell: every name is drawn whole (rows wrap).
  void legendWrapsInsteadOfEliding() {
    Dashboard d;
    d.resize(1280, 800);
    const QStringList names = {"underflow/fp32",     "underflow/fp16_noscale", "underflow/fp16_dynamic",
                               "overflow/fp16_static", "overflow/fp16_dynamic", "overflow/bf16",
                               "spirals · fp32",     "spirals · AMP fp16"};
    d.setRuns(makeRuns(names));
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    ChartLegend* legend = d.lossChart()->chartView()->runLegend();
    QVERIFY(legend->isVisible());
    const QStringList drawn = legend->drawnTexts();
    for (const QString& name : names) QVERIFY2(drawn.contains(name), qPrintable(drawn.join(" | ")));
    for (const QString& text : drawn) QVERIFY2(!text.contains(QChar(0x2026)), qPrintable(text));
    // The legend sits below the plot, not over it.
    const QRectF plot = d.lossChart()->chartView()->chart()->plotArea();
    QVERIFY(legend->mapToScene(legend->boundingRect()).boundingRect().top() > plot.bottom());
    // And an export at twice the size shows them all as well.
    const QString svg = svgOf(d.lossChart());
    for (const QString& name : names) QVERIFY2(svg.contains(name.toHtmlEscaped()), qPrintable(name));
  }

  // Issue 25 item 4: in the underflow lesson fp32 and fp16 with loss scaling coincide and the
  // blue fp32 line was invisible under the orange one. The covered run is drawn wide beneath (a
  // halo) and the legend says which runs coincide and how closely.
  void coincidingRunsStayVisibleAndAreNamed() {
    QVector<const RunData*> runs = makeRuns({"lesson/fp32", "lesson/fp16_noscale", "lesson/fp16_dynamic"});
    // fp16_dynamic retraces fp32 to within 0.01%; fp16_noscale goes its own way.
    RunData* same = m_runs[2].get();
    for (int i = 0; i < same->series.size(); ++i) same->series.loss[i] = m_runs[0]->series.loss[i] * 1.0001;
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns(runs);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    ChartView* view = d.lossChart()->chartView();
    const QStringList drawn = view->runLegend()->drawnTexts();
    QVERIFY2(drawn.contains(QStringLiteral("fp16_dynamic = fp32 (±0.01%)")), qPrintable(drawn.join(" | ")));
    QVERIFY2(drawn.contains(QStringLiteral("fp16_noscale")), qPrintable(drawn.join(" | ")));
    const qreal fp32 = seriesOf(view, 1, QStringLiteral("lesson/fp32"))->pen().widthF();
    const qreal noscale = seriesOf(view, 2, QStringLiteral("lesson/fp16_noscale"))->pen().widthF();
    const qreal dynamic = seriesOf(view, 3, QStringLiteral("lesson/fp16_dynamic"))->pen().widthF();
    QVERIFY2(fp32 >= 2.5 * dynamic, qPrintable(QStringLiteral("%1 vs %2").arg(fp32).arg(dynamic)));
    QCOMPARE(noscale, dynamic);
    // Once they part (a run diverging from fp32 by 2% at one step), each is drawn as usual.
    same->series.loss[100] *= 1.02;
    d.refresh();
    QCOMPARE(seriesOf(view, 1, QStringLiteral("lesson/fp32"))->pen().widthF(), dynamic);
    QVERIFY(view->runLegend()->drawnTexts().contains(QStringLiteral("fp16_dynamic")));
  }

  // Issue 42 item 4: two-workers' 2-rank scale curve lies exactly on the 1-rank one, which it
  // hid, with no "=" in the legend as the loss chart has.
  void coincidingScalesStayVisibleAndAreNamed() {
    QVector<const RunData*> runs = makeRuns({"two-workers/1_rank", "two-workers/2_ranks"});
    for (auto& r : m_runs) {
      r->config.mode = PrecisionMode::AmpFp16;
      r->config.scaler.kind = ScalerKind::Dynamic;
    }
    m_runs[1]->series.scale = m_runs[0]->series.scale;  // the same decisions, step for step
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns(runs);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    ChartView* view = d.scaleChart()->chartView();
    const QStringList drawn = view->runLegend()->drawnTexts();
    QVERIFY2(std::any_of(drawn.begin(), drawn.end(), [](const QString& t) { return t.startsWith(QStringLiteral("2_ranks")) && t.contains(QStringLiteral("= 1_rank (identical)")); }),
             qPrintable(drawn.join(" | ")));
    auto scaleLine = [view](int runId) -> QLineSeries* {
      for (QAbstractSeries* s : view->chart()->series())
        if (s->property("ampRunId").toInt() == runId && !s->name().contains(QLatin1Char('(')))
          if (auto* line = qobject_cast<QLineSeries*>(s)) return line;
      return nullptr;
    };
    QVERIFY(scaleLine(1) && scaleLine(2));
    const qreal one = scaleLine(1)->pen().widthF(), two = scaleLine(2)->pen().widthF();
    QVERIFY2(one >= 2.5 * two, qPrintable(QStringLiteral("%1 vs %2").arg(one).arg(two)));
  }

  void twinsWithOneNameStayApart() {
    const LegendNames split = splitLegendNames({"spirals", "spirals", "spirals"}, {4, 5, 6});
    QCOMPARE(split.distinct, QStringList({"spirals #4", "spirals #5", "spirals #6"}));
    const LegendNames shared = splitLegendNames({"spirals-mlp · fp32", "spirals-mlp · AMP fp16"}, {1, 2});
    QCOMPARE(shared.common, QStringLiteral("spirals-mlp"));
    QCOMPARE(shared.distinct, QStringList({"fp32", "AMP fp16"}));
    // A lesson's variants keep their whole labels: the heading read "pure-fp16 … fp16" over
    // "pure" and "amp" when the shared "_fp16" tail was cut too.
    const LegendNames lesson = splitLegendNames({"pure-fp16/pure_fp16", "pure-fp16/amp_fp16"}, {1, 2});
    QCOMPARE(lesson.common, QStringLiteral("pure-fp16"));
    QCOMPARE(lesson.distinct, QStringList({"pure_fp16", "amp_fp16"}));
    // With no shared head, a shared tail is still said once.
    const LegendNames tails = splitLegendNames({"fp32 run", "bf16 run"}, {1, 2});
    QCOMPARE(tails.distinct, QStringList({"fp32", "bf16"}));
  }

  // Colours repeated after about 8 runs: 16 distinct, then run 17 keeps colour 1 but is dashed.
  void sixteenColoursThenLineStyles() {
    std::set<QRgb> colours;
    for (int i = 0; i < 16; ++i) colours.insert(runColor(i).rgb());
    QCOMPARE(int(colours.size()), 16);
    QStringList names;
    for (int i = 0; i < 17; ++i) names << QStringLiteral("run %1").arg(i + 1);
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns(makeRuns(names, 100));
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    QLineSeries* first = seriesOf(d.lossChart()->chartView(), 1, "run 1");
    QLineSeries* seventeenth = seriesOf(d.lossChart()->chartView(), 17, "run 17");
    QVERIFY(first && seventeenth);
    QCOMPARE(first->pen().color().rgb(), seventeenth->pen().color().rgb());
    QCOMPARE(first->pen().style(), Qt::SolidLine);
    QVERIFY(seventeenth->pen().style() != Qt::SolidLine);
  }

  // Click a legend entry: the dashboard asks to toggle that run; hover: it is highlighted.
  void legendClickAndHover() {
    Dashboard d;
    d.resize(1280, 800);
    const QVector<const RunData*> runs = makeRuns({"fp32", "AMP fp16", "AMP bf16"});
    d.setRuns(runs);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    ChartView* view = d.lossChart()->chartView();
    QTRY_VERIFY(!view->runLegend()->entryRect(1).isEmpty());
    QSignalSpy toggled(&d, &Dashboard::runVisibilityToggleRequested);
    const QPoint second = legendPoint(view, 1);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, second);
    QCOMPARE(toggled.count(), 1);
    QCOMPARE(toggled.first().first().toInt(), 2);

    QTest::mouseMove(view->viewport(), second);
    QTRY_COMPARE(d.lossChart()->highlightedRun(), 2);
    QLineSeries* hovered = seriesOf(view, 2, "AMP fp16");
    QLineSeries* other = seriesOf(view, 1, "fp32");
    QVERIFY(hovered && other);
    QVERIFY(hovered->pen().widthF() > other->pen().widthF());
    QVERIFY(other->pen().color().alphaF() < 0.5);
    QTest::mouseMove(view->viewport(), QPoint(view->width() / 2, 20));
    QTRY_COMPARE(d.lossChart()->highlightedRun(), -1);
    QCOMPARE(other->pen().color().alphaF(), 1.0);

    // A hidden run stays in the legend, greyed, so that a click can bring it back.
    m_runs[1]->visible = false;
    d.refresh();
    const QList<LegendEntry> entries = view->runLegend()->entries();
    QVERIFY(entries.size() >= 3);
    QCOMPARE(entries[1].runId, 2);
    QVERIFY(entries[1].hidden);
    QVERIFY(!entries[0].hidden);
    QVERIFY(!seriesOf(view, 2, "AMP fp16"));
  }

  // Issue item 2: the histogram and memory panels kept showing the session's first run.
  void panelsFollowTheFocusedRun() {
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns(makeRuns({"first", "second", "newest"}));
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    // No choice made: the newest run.
    QVERIFY2(d.histogramView()->captionText().startsWith("newest"), qPrintable(d.histogramView()->captionText()));
    QVERIFY(d.memoryChart()->chartView()->title().contains("newest"));
    d.setFocusRun(2);
    QVERIFY(d.histogramView()->captionText().startsWith("second"));
    QVERIFY(d.memoryChart()->chartView()->title().contains("second"));
    // The focused run removed: back to the newest.
    d.setRuns({m_runs[0].get(), m_runs[2].get()});
    d.refresh();
    QVERIFY(d.histogramView()->captionText().startsWith("newest"));
  }

  // Presentation mode: larger fonts and thicker lines, kept across a theme change.
  void presentationScale() {
    Dashboard d;
    d.resize(1280, 800);
    d.setRuns(makeRuns({"fp32", "AMP fp16"}));
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    ChartView* view = d.lossChart()->chartView();
    const double title = view->chart()->titleFont().pointSizeF();
    const double ticks = view->xAxis()->labelsFont().pointSizeF();
    const double legend = view->runLegend()->font().pointSizeF();
    const double width = seriesOf(view, 1, "fp32")->pen().widthF();
    d.setPresentationScale(1.5);
    d.setTheme(ChartView::Theme::Dark);
    for (ChartPanel* p : {static_cast<ChartPanel*>(d.lossChart()), static_cast<ChartPanel*>(d.histogramView())})
      QCOMPARE(p->chartView()->chart()->titleFont().pointSizeF(), title * 1.5);
    QCOMPARE(view->xAxis()->labelsFont().pointSizeF(), ticks * 1.5);
    QCOMPARE(view->runLegend()->font().pointSizeF(), legend * 1.5);
    QCOMPARE(seriesOf(view, 1, "fp32")->pen().widthF(), width * 1.5);
    d.setPresentationScale(1.0);
    QCOMPARE(view->chart()->titleFont().pointSizeF(), title);
  }
};

QTEST_MAIN(TestChartsLegend)
#include "tst_charts_legend.moc"
