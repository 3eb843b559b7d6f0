// The "Data" chart (issue 25, beyond the anchors: TF Playground shows the data and the decision
// boundary): the training points in their classes' colours over the regions the run's model
// predicts, tinted by its confidence; a run of other data says why there is nothing to draw.
#include <QApplication>
#include <QScatterSeries>
#include <QTest>

#include "engine/train/decision_map.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/decision_chart.h"
#include "ui/run_data.h"

using namespace amp;
using namespace amp::ui;

class TestChartsData : public QObject {
  Q_OBJECT

  // A 4 x 4 map over [-1, 1]^2: class 1 (sure) on the right half, class 0 (a guess) on the left;
  // three points, two of class 0 and one of class 1.
  static std::shared_ptr<const DecisionMap> map() {
    auto m = std::make_shared<DecisionMap>();
    m->step = 120;
    m->width = m->height = 4;
    m->xMin = m->yMin = -1;
    m->xMax = m->yMax = 1;
    m->classes = 2;
    for (int row = 0; row < 4; ++row)
      for (int col = 0; col < 4; ++col) {
        m->cls.push_back(col >= 2 ? 1 : 0);
        m->confidence.push_back(col >= 2 ? 1.0f : 0.55f);
      }
    m->points = std::make_shared<const std::vector<float>>(std::vector<float>{-0.5f, 0.2f, -0.4f, -0.3f, 0.6f, 0.1f});
    m->labels = std::make_shared<const std::vector<std::int32_t>>(std::vector<std::int32_t>{0, 0, 1});
    return m;
  }
  // The dashboard at 1280x800 on `run` alone, open on the Data chart; false if it never showed.
  static bool showData(Dashboard& d, RunData& run) {
    d.resize(1280, 800);
    d.setRuns({&run});
    d.show();
    if (!QTest::qWaitForWindowExposed(&d)) return false;
    d.showChart(QStringLiteral("data"));
    d.refresh();
    return true;
  }

 private slots:
  void thePointsSitOnTheRegionsTheModelPredicts() {
    RunData run;
    run.id = 1;
    run.name = QStringLiteral("spirals");
    run.config.data.name = "spirals";
    run.decisionMap = map();
    Dashboard d;
    QVERIFY(showData(d, run));
    DecisionChart* chart = d.decisionChart();
    QCOMPARE(chart->shownRun(), &run);
    ChartView* v = chart->chartView();
    QVERIFY(v->placeholder().isEmpty());
    QVERIFY2(v->title().contains(QStringLiteral("step 120")), qPrintable(v->title()));
    QList<int> perClass;
    for (QAbstractSeries* s : v->chart()->series())
      if (auto* scatter = qobject_cast<QScatterSeries*>(s)) perClass << int(scatter->count());
    QCOMPARE(perClass.mid(0, 2), (QList<int>{2, 1}));
    // The regions: each cell the class colour over the background, stronger the surer it is.
    const QColor bg = v->backgroundColor();
    const QImage regions = DecisionChart::regionImage(*run.decisionMap, bg);
    QCOMPARE(regions.size(), QSize(4, 4));
    const QColor sure = regions.pixelColor(3, 0), guess = regions.pixelColor(0, 0);
    const QColor one = DecisionChart::classColor(1), zero = DecisionChart::classColor(0);
    const auto distance = [](const QColor& a, const QColor& b) {
      return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue());
    };
    QVERIFY(distance(sure, one) < distance(sure, bg));     // a clear class-1 tint
    QVERIFY(distance(guess, bg) < distance(guess, zero));  // a guess stays pale
    QVERIFY(distance(guess, bg) > 0);                      // but says which class
  }

  void otherDataSaysWhyThereIsNothingToDraw() {
    RunData run;
    run.id = 2;
    run.name = QStringLiteral("recipe/fp16");
    run.config.data.name = "synthetic";
    Dashboard d;
    QVERIFY(showData(d, run));
    QVERIFY(d.decisionChart()->shownRun() == nullptr);
    QVERIFY(d.decisionChart()->chartView()->placeholder().contains(QStringLiteral("2-D")));
  }
};

QTEST_MAIN(TestChartsData)
#include "tst_charts_data.moc"
