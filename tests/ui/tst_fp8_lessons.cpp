// The fp8 lessons in the app (issue 39): a lesson runs its variants, ends with a measured
// conclusion that says Confirmed with its figures, shows its fp8 chart, and opens the exponent
// histogram on the quantised tensor after its scale. The two fast ones (a few seconds each); the
// others are timed by tests/bench/lesson_times.sh.
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QTest>

#include "app/gui_run_controller.h"
#include "app/gui_session.h"
#include "gui_session_fixture.h"
#include "engine/amp/fp8_record.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/fp8_block_scales.h"
#include "ui/charts/fp8_heat_map.h"
#include "ui/charts/fp8_scale_timeline.h"
#include "ui/charts/histogram_view.h"
#include "ui/event_log_view.h"
#include "ui/main_window.h"
#include "ui/speed_control.h"

using namespace amp;

class TestFp8Lessons : public test::SessionFixture {
  Q_OBJECT

 private:
  // Runs the lesson as published; returns its conclusion line from the event log.
  QString runLesson(const QString& lesson) {
    if (!window()->loadLesson(lesson)) return {};
    const int concluded = window()->eventLog()->plainText().count(QStringLiteral(" measured: "));
    if (!window()->runLesson(lesson)) return {};
    window()->speedControl()->setStepsPerSecond(0);
    QElapsedTimer t;
    t.start();
    while (window()->eventLog()->plainText().count(QStringLiteral(" measured: ")) <= concluded && t.elapsed() < 90000)
      QTest::qWait(50);
    const QStringList lines = window()->eventLog()->plainText().split(QLatin1Char('\n')).filter(QStringLiteral(" measured: "));
    return lines.isEmpty() ? QString() : lines.last();
  }

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void init() { QVERIFY(openSession()); }
  void cleanup() { m_session.reset(); }

  void delayedLagConcludesFromTheScaleTimeline() {
    const QString line = runLesson(QStringLiteral("fp8-delayed-lag"));
    QVERIFY2(line.contains(QStringLiteral("— confirmed: both clipped the spike at step 20 (yes, yes)")), qPrintable(line));
    QVERIFY2(line.contains(QStringLiteral("for 16 steps with max over 16 steps")), qPrintable(line));
    ui::Fp8ScaleTimeline* timeline = window()->dashboard()->fp8ScaleTimeline();
    timeline->refreshNow();
    QCOMPARE(timeline->selectedTensor(), QStringLiteral("2.x"));
    QCOMPARE(timeline->shownRuns().size(), 2);
    // The histogram opened on 2.x after its fp8 scale, against E4M3's range.
    ui::HistogramView* hist = window()->dashboard()->histogramView();
    hist->refreshNow();
    QCOMPARE(hist->selectedTensor(), QStringLiteral("activation|fp8:2.x"));
    QCOMPARE(hist->fp8FormatShown(), QStringLiteral("e4m3"));
  }

  void outlierConcludesFromTheHeatMap() {
    const QString line = runLesson(QStringLiteral("fp8-outlier"));
    QVERIFY2(line.contains(QStringLiteral("— confirmed: per-tensor: ")), qPrintable(line));
    ui::Fp8HeatMapPanel* map = window()->dashboard()->fp8HeatMap();
    map->refreshNow();
    // Three layers in model order; the spiked tensor's last column is lit in the per-tensor run.
    QCOMPARE(map->rowNames(), (QStringList{"0.x", "0.w", "0.dy", "2.x", "2.w", "2.dy", "4.x", "4.w", "4.dy"}));
    QVERIFY2(map->runName().endsWith(QStringLiteral("/per_tensor")), qPrintable(map->runName()));
    QVERIFY(map->cellValue(3, int(map->columnSteps().size()) - 1) > 0.1);
    QVERIFY(map->cellValue(3, int(map->columnSteps().size()) - 2) < 0.01);
    // The conclusion shows the block scales: the mxfp8 run's 2.x at step 40, whose first value
    // (fp8.inject_spike writes it) puts the largest amax and the largest scale in the top-left
    // cell, every other cell at least 2^10 below it.
    ui::Fp8BlockScalesPanel* blocks = window()->dashboard()->fp8BlockScales();
    blocks->refreshNow();
    QVERIFY2(blocks->runName().endsWith(QStringLiteral("/mxfp8")), qPrintable(blocks->runName()));
    QCOMPARE(blocks->selectedTensor(), QStringLiteral("2.x"));
    QCOMPARE(blocks->selectedStep(), 40LL);
    const Fp8BlockGrid* g = blocks->grid();
    QVERIFY(g);
    QCOMPARE(g->scaleFormat, std::string("e8m0"));
    using Map = ui::Fp8BlockScalesPanel::Map;
    const double topAmax = blocks->cellValue(Map::Amax, 0, 0), topScale = blocks->cellValue(Map::Scale, 0, 0);
    for (int r = 0; r < g->rows; ++r)
      for (int c = 0; c < g->cols; ++c)
        if (r || c) {
          QVERIFY(blocks->cellValue(Map::Amax, r, c) < topAmax - 10);
          QVERIFY(blocks->cellValue(Map::Scale, r, c) < topScale - 10);
        }
  }
};

QTEST_MAIN(TestFp8Lessons)
#include "tst_fp8_lessons.moc"
