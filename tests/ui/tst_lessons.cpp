// Lessons that teach: each runs every variant its text promises, opens the histogram on the
// tensor its text talks about, and ends with a measured conclusion in the event log.
#include <QAbstractSeries>
#include <QRegularExpression>
#include <QSet>
#include <QValueAxis>
#include <QStandardPaths>
#include <QTest>

#include "app/gui_run_controller.h"
#include "app/gui_session.h"
#include "engine/config/presets.h"
#include "gui_session_fixture.h"
#include "gui_test_util.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/histogram_view.h"
#include "ui/charts/loss_chart.h"
#include "ui/charts/chart_view.h"
#include "ui/runs_panel.h"
#include "ui/speed_control.h"
#include "ui/main_actions.h"
#include <QTableView>
#include <QAction>
#include "ui/event_log_view.h"
#include "ui/lesson_result_view.h"
#include <QLabel>
#include <QTemporaryDir>
#include "app/gui_files.h"
#include "ui/main_window.h"
#include "ui/runs_model.h"

using namespace amp;

class TestLessons : public test::SessionFixture {
  Q_OBJECT

 private:
  ui::RunData* runNamed(const QString& suffix) {
    for (const ui::RunData* r : controller()->runs())
      if (QString::fromStdString(r->config.name).endsWith(suffix)) return controller()->run(r->id);
    return nullptr;
  }
  // Runs the lesson with fewer steps (and its other settings as published); waits for its end.
  void runShort(const QString& lesson, const QVector<std::pair<std::string, std::string>>& edits) {
    QVERIFY(window()->loadLesson(lesson));
    for (const auto& [k, v] : edits) QVERIFY(panel()->setFieldValue(k, v).isEmpty());
    // This lesson's conclusion is the next one: a lesson run twice finds the first one's line.
    const int concluded = window()->eventLog()->plainText().count(QStringLiteral(" measured: "));
    QVERIFY(window()->runLesson(lesson));
    window()->speedControl()->setStepsPerSecond(0);  // the lesson's pace is for a class, not a test
    for (const ui::RunData* r : controller()->runs())
      QTRY_VERIFY_WITH_TIMEOUT(r->status != ui::RunStatus::Queued && r->status != ui::RunStatus::Running, 60000);
    // The conclusion comes once the last run has ended: it is the log's last line.
    QTRY_VERIFY_WITH_TIMEOUT(window()->eventLog()->plainText().count(QStringLiteral(" measured: ")) > concluded, 5000);
    const QStringList lines = window()->eventLog()->plainText().split(QLatin1Char('\n'));
    qInfo("%s", qPrintable(lines.filter(QStringLiteral(" measured: ")).join(QLatin1Char('\n'))));
  }
  QVector<PrecisionMode> modes(const QString& lesson) {
    QVector<PrecisionMode> out;
    for (const RunConfig& c : window()->lessonConfigs(lesson)) out << c.mode;
    return out;
  }

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void init() { QVERIFY(openSession()); }
  void cleanup() { m_session.reset(); }

  // Issue item 6: "run it in fp32, fp16 and bf16" started one fp16 run; "compare..." one run.
  void lessonsRunEveryVariantTheirTextPromises() {
    const QVector<PrecisionMode> three = {PrecisionMode::Fp32, PrecisionMode::AmpFp16, PrecisionMode::AmpBf16};
    QVERIFY(window()->loadLesson(QStringLiteral("recipe")));
    QCOMPARE(modes(QStringLiteral("recipe")), three);
    QVERIFY(window()->loadLesson(QStringLiteral("fmnist-mlp")));
    QCOMPARE(modes(QStringLiteral("fmnist-mlp")), three);
    // Any lesson whose text names fp32, fp16 and bf16 runs all three.
    for (const Preset& p : presets())
      if (p.explanation.find("fp32, fp16 and bf16") != std::string::npos ||
          p.explanation.find("fp32, AMP fp16 and AMP bf16") != std::string::npos)
        QVERIFY2(p.variants.size() == 3, p.name.c_str());
    // Every lesson names the histogram its text talks about.
    for (const Preset& p : presets()) QVERIFY2(!p.focus.empty(), p.name.c_str());
  }

  void spiralsLessonShowsItsSampleCount() {
    QVERIFY(window()->loadLesson(QStringLiteral("spirals")));
    QVERIFY(panel()->config().data.samples > 0);
    // Issue 42 item 7: at the default noise (0.1) the arms blurred into two blobs on the Data chart.
    QVERIFY(panel()->config().data.noise <= 0.05);
  }

  // The histogram opened on "0 · activation" of the first run; the lesson is about fp16_noscale's
  // gradients. It ends with how many of them were zero, per run.
  void underflowLessonShowsAndMeasuresTheFlushedGradients() {
    runShort(QStringLiteral("underflow"), {{"train.steps", "41"}, {"train.threads", "1"}});
    ui::RunData* noscale = runNamed(QStringLiteral("/fp16_noscale"));
    QVERIFY(noscale);
    ui::HistogramView* hist = window()->dashboard()->histogramView();
    QCOMPARE(hist->selectedRun(), noscale->id);
    QCOMPARE(hist->selectedTensor(), QStringLiteral("weight_grad|0.weight"));
    const QString log = window()->eventLog()->plainText();
    QVERIFY2(log.contains(QStringLiteral("fp16_noscale: 100% of 0.weight's gradients zero")), qPrintable(log.right(600)));
    QVERIFY2(log.contains(QStringLiteral("fp32: 0% of")), qPrintable(log.right(600)));
    QVERIFY(noscale->events.last().startsWith(QStringLiteral("Lesson 'Underflow without loss scaling' measured")));
    // The lesson's last word: after every run's "finished" line.
    QVERIFY(log.trimmed().split(QLatin1Char('\n')).last().contains(QStringLiteral(" measured: ")));
  }

  // Issue 25 item 2: the conclusion was the event log's last line in small monospace, and no
  // longer last after a saved experiment was reopened. Now a result panel above the charts says
  // the claim, each run's numbers and the verdict in large type, on the chart that shows it.
  void aLessonEndsWithItsResultInLargeTypeOnItsChart() {
    window()->setChartLayout(ui::MainWindow::ChartLayout::Tabs);
    window()->dashboard()->showChart(QStringLiteral("loss"));
    ui::LessonResultView* view = window()->lessonResultView();
    QVERIFY(!view->isVisible());
    runShort(QStringLiteral("underflow"), {{"train.threads", "1"}});
    QTRY_VERIFY(view->isVisible());
    const ui::LessonResult& result = view->result();
    QCOMPARE(result.verdict, ui::LessonResult::Verdict::Confirmed);
    QCOMPARE(result.findings.size(), 3);
    QCOMPARE(result.findings[1].label, QStringLiteral("fp16_noscale"));
    QCOMPARE(result.findings[1].color, runNamed(QStringLiteral("/fp16_noscale"))->color);
    QVERIFY2(view->headlineLabel()->text().contains(QStringLiteral("Confirmed")), qPrintable(view->headlineLabel()->text()));
    QVERIFY(view->criterionLabel()->text().contains(QStringLiteral("100%")));
    // The chart that proves it is the one on screen.
    QVERIFY(window()->dashboard()->panel(QStringLiteral("histogram"))->isVisible());
    // Large type, and larger still at presentation scale 1.5.
    const double base = QApplication::font().pointSizeF();
    QVERIFY(view->headlineLabel()->font().pointSizeF() >= 1.45 * base);
    QVERIFY(view->claimLabel()->font().pointSizeF() >= 1.15 * base);
    window()->setPresentationScale(1.5);
    QTRY_VERIFY(view->headlineLabel()->font().pointSizeF() >= 1.45 * 1.5 * base);
    QVERIFY(view->findingsLabel()->font().pointSizeF() >= 1.5 * base);
    window()->setPresentationScale(1.0);
    QTRY_VERIFY(view->headlineLabel()->font().pointSizeF() < 1.6 * base);

    // Reopened from an experiment file, the lesson shows its result again.
    QTemporaryDir tmp;
    const QString ampx = tmp.filePath(QStringLiteral("lesson.ampx"));
    m_session->files()->saveExperimentFile(ampx);
    m_session = std::make_unique<gui::GuiSession>(false);
    QVERIFY(!window()->lessonResultView()->isVisible());
    QCOMPARE(m_session->files()->openRuns(ampx), 3);
    window()->show();
    QTRY_VERIFY(window()->lessonResultView()->isVisible());
    QCOMPARE(window()->lessonResultView()->result().verdict, ui::LessonResult::Verdict::Confirmed);
    QCOMPARE(window()->lessonResultView()->result().lesson, QStringLiteral("underflow"));
    window()->setChartLayout(ui::MainWindow::ChartLayout::Automatic);
  }

  // The verdict is measured, not decreed: with an ordinary loss weight nothing underflows, and
  // the underflow lesson's claim is then not confirmed.
  void aLessonWhoseNumbersDoNotBearItOutSaysSo() {
    runShort(QStringLiteral("underflow"), {{"train.steps", "60"}, {"train.loss_weight", "1"}, {"train.threads", "1"}});
    ui::LessonResultView* view = window()->lessonResultView();
    QTRY_VERIFY(view->isVisible());
    QCOMPARE(view->result().verdict, ui::LessonResult::Verdict::NotConfirmed);
    QVERIFY(view->headlineLabel()->text().contains(QStringLiteral("Not confirmed")));
    QVERIFY(window()->eventLog()->plainText().contains(QStringLiteral("— not confirmed: ")));
  }

  // Issue 25 item 3: a new lesson inherited the previous lesson's runs in every chart (axes at
  // 0-600 steps and 2^0-2^16), and "Clear finished" deleted them with no way back. Now the runs
  // that had ended are archived: out of every chart, kept, and restorable.
  void aNewLessonStartsOnACleanSlate() {
    runShort(QStringLiteral("underflow"), {{"train.steps", "60"}, {"train.threads", "1"}});
    QList<int> first;
    for (const ui::RunData* r : controller()->runs()) first << r->id;
    QCOMPARE(first.size(), 3);
    ui::ChartView* loss = window()->dashboard()->lossChart()->chartView();
    auto plottedRuns = [loss] {
      QSet<int> ids;
      for (QAbstractSeries* s : loss->chart()->series())
        if (s->property("ampRunId").isValid()) ids.insert(s->property("ampRunId").toInt());
      return ids;
    };
    window()->dashboard()->showChart(QStringLiteral("loss"));
    QTRY_COMPARE(plottedRuns().size(), 3);
    loss->setFocus();
    QTest::keyClick(loss, Qt::Key_Plus);  // the user zoomed in
    QVERIFY(!loss->isAutoRange());

    runShort(QStringLiteral("bf16-no-scaler"), {{"train.steps", "20"}, {"train.threads", "1"}});
    QCOMPARE(controller()->runs().size(), 5);  // nothing deleted
    QSet<int> second;
    for (const ui::RunData* r : controller()->runs()) {
      QCOMPARE(r->archived, first.contains(r->id));
      if (!r->archived) second.insert(r->id);
    }
    window()->dashboard()->showChart(QStringLiteral("loss"));
    QTRY_COMPARE(plottedRuns(), second);
    // The axes fit the new lesson's 20 steps, not the 60 of the one before or the user's zoom.
    QVERIFY(loss->isAutoRange());
    QTRY_VERIFY2(loss->xAxis()->max() < 40, qPrintable(QString::number(loss->xAxis()->max())));
    // The runs table lists the new runs; the archived ones come back on demand.
    QCOMPARE(window()->runsPanel()->view()->model()->rowCount(), 2);
    QAction* listArchived = window()->runsPanel()->findChild<QAction*>(QStringLiteral("showArchivedAction"));
    QAction* restore = window()->runsPanel()->findChild<QAction*>(QStringLiteral("restoreSelectedAction"));
    QVERIFY(listArchived && restore);
    listArchived->trigger();
    QCOMPARE(window()->runsPanel()->view()->model()->rowCount(), 5);
    window()->runsPanel()->selectRuns(first);
    restore->trigger();
    QTRY_COMPARE(plottedRuns().size(), 5);
  }

  // Issue 25 item 13: the underflow lesson's variants ran one after another at full speed: it was
  // over in seconds, and the histogram pointed at a queued run. Now a paced lesson's variants
  // train side by side, whatever "Max concurrent" says, at a pace a class can follow.
  void aPacedLessonRunsItsVariantsSideBySide() {
    QCOMPARE(controller()->maxConcurrent(), 1);
    QVERIFY(window()->loadLesson(QStringLiteral("underflow")));
    QVERIFY(window()->runLesson(QStringLiteral("underflow")));
    const double pace = window()->speedControl()->stepsPerSecond();
    QVERIFY2(pace > 0 && pace <= 60, qPrintable(QString::number(pace)));  // 600 steps: 10 s or more
    QCOMPARE(controller()->runs().size(), 3);
    QCOMPARE(controller()->activeCount(), 3);
    QCOMPARE(controller()->queuedCount(), 0);
    // The run the histogram shows is training: its first histogram arrives within seconds.
    const int shown = window()->dashboard()->histogramView()->selectedRun();
    QCOMPARE(shown, runNamed(QStringLiteral("/fp16_noscale"))->id);
    QTRY_VERIFY_WITH_TIMEOUT(!runNamed(QStringLiteral("/fp16_noscale"))->histograms.empty(), 10000);
    window()->actions().stop->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(controller()->activeCount() == 0, 30000);
    // A lesson that compares speed trains its runs in turns (issue 38): all of them start, and
    // one trains at a time, a block of steps each, so that a change of load between them cannot
    // pass for a speed difference (queued one after another, it could).
    QVERIFY(window()->loadLesson(QStringLiteral("recipe")));
    QVERIFY(panel()->setFieldValue("train.steps", "200").isEmpty());
    QVERIFY(window()->runLesson(QStringLiteral("recipe")));
    QCOMPARE(controller()->activeCount(), 3);
    QCOMPARE(controller()->queuedCount(), 0);
    ui::RunData* first = runNamed(QStringLiteral("recipe/fp32"));
    ui::RunData* second = runNamed(QStringLiteral("recipe/fp16"));
    ui::RunData* third = runNamed(QStringLiteral("recipe/bf16"));
    QVERIFY(first && second && third);
    const int block = controller()->turnBlockSteps(first->id);
    QCOMPARE(block, 25);  // 200 steps: 8 rounds
    QCOMPARE(controller()->turnBlockSteps(third->id), block);
    // The third run's first step comes after a whole block of each run before it.
    QTRY_VERIFY_WITH_TIMEOUT(third->series.size() >= 1, 30000);
    QTRY_VERIFY_WITH_TIMEOUT(first->series.size() >= block && second->series.size() >= block, 5000);
    QVERIFY(third->events.join(QLatin1Char('\n')).contains(QStringLiteral("trains in turns")));
    window()->actions().stop->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(controller()->activeCount() == 0, 30000);
  }

  void pureFp16LessonMeasuresLostUpdates() {
    runShort(QStringLiteral("pure-fp16"), {{"train.steps", "20"}, {"model.width", "64"}});
    ui::RunData* pure = runNamed(QStringLiteral("/pure_fp16"));
    QVERIFY(pure);
    const QString log = window()->eventLog()->plainText();
    static const QRegularExpression lost(QStringLiteral("pure_fp16: lost (\\d+(\\.\\d+)?)% of its updates.*amp_fp16: lost (\\d+(\\.\\d+)?)%"));
    const auto m = lost.match(log);
    QVERIFY2(m.hasMatch(), qPrintable(log.right(600)));
    QVERIFY(m.captured(1).toDouble() > 10 * m.captured(3).toDouble());
  }

  void recipeLessonComparesTheThreeModes() {
    runShort(QStringLiteral("recipe"), {{"train.steps", "4"}, {"model.width", "64"}});
    QCOMPARE(controller()->runs().size(), 3);
    const QString log = window()->eventLog()->plainText();
    for (const char* label : {"fp32: reached loss", "fp16: reached loss", "bf16: reached loss", "x fp32's speed"})
      QVERIFY2(log.contains(QLatin1String(label)), qPrintable(log.right(600)));
    QCOMPARE(window()->dashboard()->histogramView()->selectedTensor(), QStringLiteral("activation|0"));
    // The conclusion's figures are the runs table's: its step time (warm-up left out) and the
    // peak memory the text's claim is about (it said 46.6 ms where the table said 45.59).
    ui::RunsModel* model = window()->runsModel();
    for (const QString& v : {QStringLiteral("fp16"), QStringLiteral("bf16")}) {
      const ui::RunData* r = runNamed(QLatin1Char('/') + v);
      QVERIFY(r);
      const int row = model->rowOf(r->id);
      const QString ms = model->data(model->index(row, ui::RunsModel::MsPerStep), Qt::DisplayRole).toString();
      QVERIFY2(log.contains(QStringLiteral("%1: reached loss").arg(v)) &&
                   log.contains(QStringLiteral(", %1 ms/step").arg(ms)),
               qPrintable(ms + QLatin1String(" | ") + log.right(600)));
    }
    QVERIFY2(log.contains(QLatin1String("x fp32's)")) && log.contains(QLatin1String("peak memory")), qPrintable(log.right(600)));
  }

  // Issue 25: the Fashion-MNIST CNN lesson compares the three modes (it ran fp16 alone), and a
  // comparison's conclusion names the steps the loss scaler skipped (it said nothing of them).
  void modeLessonsCompareThreeModesAndNameSkippedSteps() {
    QCOMPARE(modes(QStringLiteral("fmnist-cnn")),
             (QVector<PrecisionMode>{PrecisionMode::Fp32, PrecisionMode::AmpFp16, PrecisionMode::AmpBf16}));
    // A loss scale of 1e9 overflows fp16's gradients: the scaler skips every step while it halves.
    runShort(QStringLiteral("recipe"), {{"train.steps", "4"}, {"model.width", "64"}, {"scaler.init_scale", "1e9"}});
    const QString log = window()->eventLog()->plainText();
    QVERIFY2(log.contains(QLatin1String("fp16: reached loss")) &&
                 log.contains(QLatin1String("4 steps skipped by the loss scaler (1, 2, 3, 4)")),
             qPrintable(log.right(700)));
    // bf16 has no scaler and skipped nothing: its sentence says nothing of skips.
    QVERIFY2(!QRegularExpression(QStringLiteral("bf16: reached loss [^;]*skipped")).match(log).hasMatch(),
             qPrintable(log.right(700)));
  }

  void overflowLessonCountsItsSkips() {
    runShort(QStringLiteral("overflow"), {{"train.steps", "35"}, {"model.width", "32"}});
    const QString log = window()->eventLog()->plainText();
    QVERIFY2(log.contains(QStringLiteral("2 steps skipped (30, 31)")), qPrintable(log.right(600)));
    // 35 steps end before growth_interval (40) clean steps: the regrowth is not shown yet.
    QCOMPARE(window()->lessonResultView()->result().verdict, ui::LessonResult::Verdict::NotConfirmed);
    // 120 steps: skipped at 30, 31, 90, grown again at 72, the claim confirmed (the last skip
    // need not be followed by growth within the run).
    runShort(QStringLiteral("overflow"), {{"train.steps", "120"}, {"model.width", "32"}});
    QCOMPARE(window()->lessonResultView()->result().verdict, ui::LessonResult::Verdict::Confirmed);
  }

  // Issue 14: the seeds' table as the lesson's conclusion, with the runs table's columns filled.
  void resnetLessonGivesTheSeedsTable() {
    runShort(QStringLiteral("resnet"), {{"model.depth", "8"}, {"model.base_width", "4"},
                                        {"data.subset", "64"}, {"data.test_subset", "64"}, {"train.batch_size", "32"},
                                        {"train.epochs", "2"}});
    QCOMPARE(controller()->runs().size(), 3);
    const QString log = window()->eventLog()->plainText();
    for (const char* part : {"fp32: accuracy", "fp16: accuracy", "bf16: accuracy", "s/epoch", "activations",
                             "checkpoint", "fp16 weights", "bf16 weights"})
      QVERIFY2(log.contains(QLatin1String(part)), qPrintable(QLatin1String(part) + QLatin1String(" | ") + log.right(900)));
    // The 16-bit weights file is half of fp32's (the same header and integer counters aside).
    QVERIFY2(QRegularExpression(QStringLiteral("fp16 weights [0-9.]+ KiB \\(0\\.5[0-9]x\\)")).match(log).hasMatch(),
             qPrintable(log.right(900)));
    ui::RunsModel* model = window()->runsModel();
    const ui::RunData* fp16 = runNamed(QStringLiteral("/fp16"));
    QVERIFY(fp16);
    const QString file = model->data(model->index(model->rowOf(fp16->id), ui::RunsModel::WeightsFile), Qt::DisplayRole).toString();
    QVERIFY2(file.contains(QStringLiteral(" fp16 · 0.5")), qPrintable(file));
    QCOMPARE(window()->dashboard()->histogramView()->selectedTensor(), QStringLiteral("weight_grad|layers.0.c1.weight"));
  }
};

QTEST_MAIN(TestLessons)
#include "tst_lessons.moc"
