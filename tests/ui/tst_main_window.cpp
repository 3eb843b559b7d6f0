// The desktop app driven through its window, offscreen: opening, a short run from the panel,
// pause / single step / stop, validation blocking Start, divergence, data errors, lessons, twin
// runs and a clean shutdown while training.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QElapsedTimer>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QRegularExpression>
#include <QTest>
#include <QTextBrowser>

#include "app/gui_run_controller.h"
#include "app/gui_session.h"
#include "engine/backend/backend.h"
#include "gui_session_fixture.h"
#include "gui_test_util.h"
#include "ui/event_log_view.h"
#include "ui/format_inspector_view.h"
#include "ui/lesson_panel.h"
#include "ui/main_window.h"
#include "ui/runs_model.h"
#include "ui/runs_panel.h"
#include "ui/theme.h"
#include "ui/trace_view.h"

using namespace amp;

class TestMainWindow : public test::SessionFixture {
  Q_OBJECT

 private slots:
  void init() { QVERIFY(openSession()); }
  void cleanup() { m_session.reset(); }
  void initTestCase() {
    // QSettings then lives under ~/.qttest: the persistence test never touches a user's settings.
    QStandardPaths::setTestModeEnabled(true);
  }

  void windowOpens() {
    QVERIFY(window()->isVisible());
    QVERIFY(window()->dashboard());
    QVERIFY(panel()->isValid());  // the defaults are a valid experiment
    QVERIFY(window()->actions().start->isEnabled());
    QVERIFY(!window()->actions().pause->isEnabled());  // nothing to pause yet
    QVERIFY(!window()->actions().stop->isEnabled());
  }

  void shortRunFinishesWithItsSeries() {
    test::apply(panel(), test::tinySpirals(30));
    QVERIFY(panel()->isValid());
    window()->actions().start->trigger();
    ui::RunData* run = lastRun();
    QVERIFY(run);
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Finished, 30000);
    QCOMPARE(run->totalSteps, 30);
    QCOMPARE(run->series.size(), 30);
    QCOMPARE(run->series.step.first(), 1.0);
    QCOMPARE(run->series.step.last(), 30.0);
    QCOMPARE(run->series.loss.size(), 30);
    QVERIFY(!run->series.testAcc.isEmpty());
    QVERIFY(!run->histograms.empty());
    QVERIFY(!run->trace.empty());  // the first step is traced for the inspector
    QVERIFY(!run->backendInfo.isEmpty());
    QCOMPARE(run->backendName, QStringLiteral("cpu"));  // the test environment hides any GPU
    QVERIFY(window()->eventLog()->plainText().contains(QStringLiteral("finished")));
    QCOMPARE(window()->runsModel()->rowCount(), 1);
    QCOMPARE(controller()->activeCount(), 0);
  }

  void pauseStepAndStop() {
    test::apply(panel(), test::tinySpirals(1000000));
    window()->actions().start->trigger();
    ui::RunData* run = lastRun();
    QTRY_VERIFY_WITH_TIMEOUT(run->series.size() >= 3, 30000);
    QVERIFY(window()->actions().pause->isEnabled());

    window()->actions().pause->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Paused, 10000);
    const int n = run->series.size();
    QTest::qWait(300);
    QCOMPARE(run->series.size(), n);  // paused means no steps
    QVERIFY(window()->actions().step->isEnabled());

    window()->actions().step->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(run->series.size(), n + 1, 10000);
    QTest::qWait(300);
    QCOMPARE(run->series.size(), n + 1);  // exactly one step
    QCOMPARE(run->series.step.last(), double(n + 1));
    QTRY_COMPARE_WITH_TIMEOUT(run->traceStep, qint64(n + 1), 5000);  // a single step is traced
    QCOMPARE(window()->traceView()->run(), run);

    window()->actions().step->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(run->series.size(), n + 2, 10000);

    window()->actions().pause->trigger();  // resume
    QTRY_VERIFY_WITH_TIMEOUT(run->series.size() > n + 5, 10000);
    QCOMPARE(run->status, ui::RunStatus::Running);

    window()->actions().stop->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Stopped, 10000);
    QCOMPARE(controller()->activeCount(), 0);
    QVERIFY(!window()->actions().stop->isEnabled());
  }

  void stepWithNothingRunningStartsPaused() {
    test::apply(panel(), test::tinySpirals(100));
    window()->actions().step->trigger();
    ui::RunData* run = lastRun();
    QVERIFY(run);
    QTRY_COMPARE_WITH_TIMEOUT(run->series.size(), 1, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Paused, 10000);
    QTest::qWait(200);
    QCOMPARE(run->series.size(), 1);
    window()->actions().stop->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Stopped, 10000);
  }

  void invalidFieldsBlockStart() {
    QVERIFY(window()->actions().start->isEnabled());
    test::typeInto(panel(), "train.steps", QStringLiteral("abc"));
    QVERIFY(!panel()->isValid());
    QVERIFY(!window()->actions().start->isEnabled());
    QVERIFY(!window()->actions().twin->isEnabled());
    QVERIFY(panel()->field("train.steps")->editor()->property("invalid").toBool());
    QVERIFY(panel()->problem().contains(QStringLiteral("train.steps")));
    QVERIFY(panel()->field("train.steps")->editor()->toolTip().contains(QStringLiteral("integer")));
    auto* message = panel()->findChild<QLabel*>(QStringLiteral("experimentMessage"));
    QVERIFY(message && message->text().contains(QStringLiteral("train.steps")));

    // Parses, but the cross-field check refuses it.
    test::typeInto(panel(), "train.steps", QStringLiteral("-5"));
    QVERIFY(!window()->actions().start->isEnabled());
    QVERIFY(panel()->problem().contains(QStringLiteral(">= 0")));

    test::typeInto(panel(), "train.steps", QStringLiteral("50"));
    QVERIFY(panel()->isValid());
    QVERIFY(window()->actions().start->isEnabled());
    QVERIFY(!panel()->field("train.steps")->editor()->property("invalid").toBool());

    QVERIFY(!panel()->setFieldValue("scaler.backoff_factor", "1.5").isEmpty());
    QVERIFY(!window()->actions().start->isEnabled());
    QVERIFY(panel()->setFieldValue("scaler.backoff_factor", "0.5").isEmpty());
    QVERIFY(window()->actions().start->isEnabled());
    window()->startExperiment();  // ignored while invalid, fine now; nothing is started twice
    QCOMPARE(controller()->runs().size(), 1);
  }

  void divergingRunIsMarkedDiverged() {
    test::apply(panel(), test::tinySpirals(200));
    // ReLU is unbounded, so the activations overflow fp32 at once (tanh would saturate and keep
    // the loss finite, if huge).
    test::apply(panel(), {{"amp.mode", "fp32"}, {"optimizer.name", "sgd"}, {"optimizer.lr", "1e30"},
                          {"model.activation", "relu"}});
    QVERIFY2(panel()->isValid(), qPrintable(panel()->problem()));
    window()->actions().start->trigger();
    ui::RunData* run = lastRun();
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Diverged, 30000);
    QVERIFY(run->statusDetail.contains(QStringLiteral("non-finite")));
    QVERIFY(run->series.size() < 200);
    QVERIFY(window()->eventLog()->plainText().contains(QStringLiteral("diverged")));
    // The app keeps working: another run starts and finishes.
    test::apply(panel(), test::tinySpirals(5));
    window()->actions().start->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(lastRun()->status, ui::RunStatus::Finished, 30000);
  }

  void dataErrorFailsTheRunWithItsMessage() {
    test::apply(panel(), test::tinySpirals(5));
    // A file that exists but cannot be read as data: found only when the run loads it (a
    // missing file is refused before Start, see tst_demo_window).
    QTemporaryDir dir;
    const QString csv = dir.filePath(QStringLiteral("bad.csv"));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("x,y,label\n0.5,oops,1\n");
    f.close();
    test::apply(panel(), {{"data.name", "csv"}, {"data.path", csv.toStdString()}});
    QVERIFY2(panel()->isValid(), qPrintable(panel()->problem()));
    window()->actions().start->trigger();
    ui::RunData* run = lastRun();
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Failed, 30000);
    QVERIFY(!run->statusDetail.isEmpty());
    auto* message = panel()->findChild<QLabel*>(QStringLiteral("experimentMessage"));
    QVERIFY(message->text().contains(QStringLiteral("Could not start")));
  }

  void lessonStartsAllItsVariants() {
    QVERIFY(window()->loadLesson(QStringLiteral("underflow")));
    QCOMPARE(panel()->config().data.name, std::string("spirals"));
    const auto configs = window()->lessonConfigs(QStringLiteral("underflow"));
    QCOMPARE(configs.size(), 3);
    QCOMPARE(configs[0].mode, PrecisionMode::Fp32);
    QCOMPARE(configs[1].scaler.kind, ScalerKind::None);
    QCOMPARE(configs[2].mode, PrecisionMode::AmpFp16);
    test::apply(panel(), {{"train.steps", "8"}, {"model.hidden", "16,16"}, {"train.threads", "1"}});
    QVERIFY(window()->runLesson(QStringLiteral("underflow")));
    QCOMPARE(controller()->runs().size(), 3);
    for (const ui::RunData* r : controller()->runs())
      QTRY_COMPARE_WITH_TIMEOUT(r->status, ui::RunStatus::Finished, 30000);
    QCOMPARE(controller()->runs()[1]->name, QStringLiteral("underflow/fp16_noscale"));
    QCOMPARE(controller()->runs()[0]->series.size(), 8);
  }

  // This suite hides any GPU: the GPU lesson says so, names the reason, and loads and runs its
  // CPU-sized form (width 1024, batch 256 on the CPU), its three modes side by side.
  void gpuLessonOffersItsCpuSizedFormWithoutAGpu() {
    QVERIFY(window()->lessons()->selectLesson(QStringLiteral("tensor-cores")));
    auto* text = window()->lessons()->findChild<QTextBrowser*>();
    QVERIFY(text);
    QVERIFY(text->toPlainText().contains(QStringLiteral("No usable GPU here")));
    QVERIFY(text->toPlainText().contains(QStringLiteral("CPU-sized")));
    QVERIFY(window()->loadLesson(QStringLiteral("tensor-cores")));
    QCOMPARE(panel()->config().model.width, std::int64_t(1024));
    QCOMPARE(panel()->config().train.batchSize, std::int64_t(256));
    QCOMPARE(panel()->config().backend, std::string("cpu"));
    const auto configs = window()->lessonConfigs(QStringLiteral("tensor-cores"));
    QCOMPARE(configs.size(), 3);
    QCOMPARE(configs[2].mode, PrecisionMode::AmpBf16);
    QCOMPARE(configs[2].model.width, std::int64_t(1024));
    QCOMPARE(configs[2].backend, std::string("cpu"));
    // Another lesson puts the button back as it was.
    QVERIFY(window()->lessons()->selectLesson(QStringLiteral("underflow")));
    QVERIFY(!text->toPlainText().contains(QStringLiteral("No usable GPU")));
  }

  void twinRunsShareTheSeed() {
    test::apply(panel(), test::tinySpirals(6));
    panel()->setFieldValue("seed", "7");
    window()->actions().twin->trigger();
    const auto runs = controller()->runs();
    QCOMPARE(runs.size(), 3);
    QCOMPARE(runs[0]->config.mode, PrecisionMode::Fp32);
    QCOMPARE(runs[1]->config.mode, PrecisionMode::AmpFp16);
    QCOMPARE(runs[2]->config.mode, PrecisionMode::AmpBf16);
    for (const ui::RunData* r : runs) {
      QCOMPARE(r->config.seed, 7u);
      QTRY_COMPARE_WITH_TIMEOUT(r->status, ui::RunStatus::Finished, 30000);
    }
    // The twins' fp32 run is their baseline: the others get a speed-up figure ("1.30×", or
    // "~1.3× (noisy)" where six steps beside the other tests cannot back one).
    QCOMPARE(window()->runsModel()->baselineIdFor(*runs[1]), runs[0]->id);
    window()->runsModel()->refresh();
    const QString speedUp = window()->runsModel()->index(1, ui::RunsModel::SpeedUp).data().toString();
    QVERIFY2(QRegularExpression(QStringLiteral("^(\\d+\\.\\d\\d×|~[\\d.]+× \\(noisy\\))$")).match(speedUp).hasMatch(),
             qPrintable(speedUp));
    // Never pretend: each row says how its dtype computes on this CPU, as the backend says it.
    const auto cpu = makeCpuBackend();
    const DType dtypes[] = {DType::F32, DType::F16, DType::BF16};
    for (int row = 0; row < 3; ++row) {
      const std::string path = cpu->computePath(dtypes[row]);
      QCOMPARE(runs[row]->computePath, QString::fromStdString(std::string(dtypeName(dtypes[row])) + " " + path));
      const QString mode = window()->runsModel()->index(row, ui::RunsModel::Mode).data().toString();
      QCOMPARE(mode.endsWith(QLatin1String("(emulated)")), path.find("emulated") != std::string::npos);
    }
    QVERIFY(window()->runsModel()->index(1, ui::RunsModel::Mode).data().toString().endsWith("(emulated)"));
  }

  void concurrentRunsAndTheQueue() {
    controller()->setMaxConcurrent(2);
    test::apply(panel(), test::tinySpirals(1000000));
    for (int i = 0; i < 3; ++i) window()->actions().start->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(controller()->activeCount(), 2, 5000);
    QCOMPARE(controller()->queuedCount(), 1);
    controller()->stopRun(controller()->runs()[0]->id);
    QTRY_COMPARE_WITH_TIMEOUT(controller()->runs()[2]->status, ui::RunStatus::Running, 10000);
    window()->actions().stop->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(controller()->activeCount(), 0, 10000);
  }

  void closingStopsRunsCleanly() {
    test::apply(panel(), test::tinySpirals(1000000));
    window()->actions().start->trigger();
    ui::RunData* run = lastRun();
    QTRY_VERIFY_WITH_TIMEOUT(run->series.size() > 2, 30000);
    QElapsedTimer t;
    t.start();
    test::answerNextMessageBox(QStringLiteral("Quit without saving"));  // the run is unsaved
    window()->close();
    QVERIFY(t.elapsed() < 5000);
    QCOMPARE(controller()->activeCount(), 0);
    QCOMPARE(run->status, ui::RunStatus::Stopped);
  }

  // The palette actions are an exclusive pair: either choice switches the app and the charts.
  void paletteActionsSwitchTheTheme() {
    const QColor lightWindow = QApplication::palette().color(QPalette::Window);
    window()->actions().dark->trigger();
    QCOMPARE(ui::currentTheme(), ui::Theme::Dark);
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 100);
    QVERIFY(!window()->actions().light->isChecked());
    window()->actions().light->trigger();
    QCOMPARE(ui::currentTheme(), ui::Theme::Light);
    QCOMPARE(QApplication::palette().color(QPalette::Window), lightWindow);
    QVERIFY(!window()->actions().dark->isChecked());
  }

  void formatInspectorShowsBits() {
    ui::FormatInspectorView* f = window()->formatInspector();
    f->inspect(QStringLiteral("0.1"));
    QCOMPARE(f->cell(0, 0), QStringLiteral("0x2e66"));  // fp16
    QCOMPARE(f->cell(1, 0), QStringLiteral("0x3dcd"));  // bf16
    QCOMPARE(f->cell(2, 0), QStringLiteral("0x1d"));    // e4m3: 0.1015625 (PyTorch's cast)
    QCOMPARE(f->cell(3, 0), QStringLiteral("0x2e"));    // e5m2: 0.09375
    QCOMPARE(f->cell(4, 0), QStringLiteral("0x00"));    // e2m1: 0.1 rounds to 0
    f->inspect(QStringLiteral("70000"));
    QVERIFY(f->cell(0, 5).contains(QStringLiteral("inf")));     // fp16 overflows
    QVERIFY(f->cell(1, 5).contains(QStringLiteral("normal")));  // bf16 keeps it
    QVERIFY(f->cell(2, 5).contains(QStringLiteral("saturated")));  // e4m3: 448, as PyTorch
    QVERIFY(f->cell(3, 5).contains(QStringLiteral("inf")));        // e5m2: inf, as PyTorch
  }

  void shortcutsDriveRuns() {
    test::apply(panel(), test::tinySpirals(1000000));
    window()->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(window()));
    window()->runsPanel()->setFocus();  // not a text field, which would keep the keys
    QTest::keyClick(window(), Qt::Key_R, Qt::ControlModifier);
    QCOMPARE(controller()->runs().size(), 1);
    ui::RunData* run = lastRun();
    QTRY_VERIFY_WITH_TIMEOUT(run->series.size() > 2, 30000);
    QTest::keyClick(window(), Qt::Key_Space);
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Paused, 10000);
    const int n = run->series.size();
    QTest::keyClick(window(), Qt::Key_S);
    QTRY_COMPARE_WITH_TIMEOUT(run->series.size(), n + 1, 10000);
    QTest::keyClick(window(), Qt::Key_Period, Qt::ControlModifier);
    QTRY_COMPARE_WITH_TIMEOUT(run->series.size(), n + 2, 10000);
    QTest::keyClick(window(), Qt::Key_F5, Qt::ShiftModifier);
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Stopped, 10000);
  }

  void settingsPersistTheExperiment() {
    m_session.reset();
    {
      gui::GuiSession s(/*persistSettings=*/true);
      test::apply(s.window()->experiment(), test::tinySpirals(77));
      s.window()->experiment()->setFieldValue("optimizer.lr", "0.125");
      s.window()->close();  // saves
    }
    gui::GuiSession s(true);
    QCOMPARE(s.window()->experiment()->config().train.steps, 77);
    QCOMPARE(s.window()->experiment()->config().optimizer.lr, 0.125);
    QSettings(QStringLiteral("AMP Studio"), QStringLiteral("ampstudio")).clear();
    m_session = std::make_unique<gui::GuiSession>(false);
  }

  void configFileRoundTrip() {
    test::apply(panel(), test::tinySpirals(42));
    panel()->setFieldValue("autocast.softmax", "lower_precision");  // not a field: ignored
    const QString path = QDir::temp().filePath(QStringLiteral("ampstudio_test_config.json"));
    QVERIFY(window()->saveConfigFile(path));
    test::apply(panel(), {{"train.steps", "7"}});
    QVERIFY(window()->openConfigFile(path));
    QCOMPARE(panel()->config().train.steps, 42);
    QCOMPARE(panel()->config().data.name, std::string("spirals"));
    QFile::remove(path);
  }
};

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
