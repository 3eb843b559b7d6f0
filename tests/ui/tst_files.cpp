// The app's file commands through the session: save an experiment and open it in a fresh
// window, export metrics as CSV, save a checkpoint of a paused run, resume from it, and an
// unreadable file leaving the session as it was.
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonArray>
#include <QJsonObject>
#include <QMenu>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QStatusBar>
#include <QTest>
#include <QTimer>

#include "app/gui_files.h"
#include "app/gui_run_controller.h"
#include "app/gui_session.h"
#include "engine/io/checkpoint.h"
#include "engine/io/experiment_file.h"
#include "engine/io/metrics_export.h"
#include "engine/io/run_record.h"
#include "gui_test_util.h"
#include "ui/charts/chart_view.h"
#include "ui/charts/memory_chart.h"
#include "ui/charts/throughput_chart.h"
#include "ui/last_folder.h"
#include "ui/main_window.h"
#include "ui/runs_model.h"

using namespace amp;

class TestFiles : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::GuiSession> m_session;
  QTemporaryDir m_tmp;
  gui::RunController* controller() { return m_session->controller(); }
  ui::RunData* lastRun() {
    const auto runs = controller()->runs();
    return runs.isEmpty() ? nullptr : controller()->run(runs.last()->id);
  }
  // A 20-step spirals run started from the window, as the lesson's settings would give.
  ui::RunData* runSpirals(long steps, bool paused) {
    test::apply(m_session->window()->experiment(), test::tinySpirals(steps));
    if (paused)
      m_session->window()->actions().step->trigger();  // starts the experiment paused
    else
      m_session->window()->actions().start->trigger();
    return lastRun();
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_tmp.isValid());
  }
  void init() {
    m_session = std::make_unique<gui::GuiSession>(/*persistSettings=*/false);
    m_session->window()->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_session->window()));
  }
  void cleanup() { m_session.reset(); }

  void experimentRoundTripAndCsv() {
    ui::RunData* run = runSpirals(20, false);
    QVERIFY(run);
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Finished, 20000);
    QCOMPARE(run->series.size(), 20);
    const QVector<double> loss = run->series.loss;

    const QString ampx = m_tmp.filePath(QStringLiteral("session.ampx"));
    m_session->files()->saveExperimentFile(ampx);
    QVERIFY(QFile::exists(ampx));

    const QString csv = m_tmp.filePath(QStringLiteral("metrics.csv"));
    m_session->files()->exportMetrics(csv);
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
    QCOMPARE(lines.first(), ("run," + metricsExportColumns().join(u',')).toUtf8());
    QCOMPARE(lines.size(), 1 + 20);

    // A fresh window: the saved run comes back as an ended run with every point.
    m_session = std::make_unique<gui::GuiSession>(false);
    QCOMPARE(m_session->files()->openRuns(ampx), 1);
    QCOMPARE(controller()->runs().size(), 1);
    const ui::RunData* back = controller()->runs().first();
    QCOMPARE(back->status, ui::RunStatus::Finished);
    QCOMPARE(back->series.size(), 20);
    QCOMPARE(back->series.loss, loss);
    // It kept its final state (File > Export weights works for any run that trained to its
    // end), and the experiment carried it.
    QCOMPARE(readCheckpointInfo(back->checkpointPath).step, 20);
    QVERIFY(!back->histograms.empty());
  }

  // Issue 25 item 19: a bundle's summary.json held only the model files' sizes; a renamed or
  // reopened run lost "(emulated)"; saved experiments never reached Open recent; dialogs forgot
  // the folder. A run renamed in the table keeps its name, results and compute path in the
  // bundle, comes back with them, and the saved file reopens from File > Open recent.
  void aSavedRunKeepsItsNameResultsAndHowItComputed() {
    ui::RunData* run = runSpirals(20, false);
    QVERIFY(run);
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Finished, 20000);
    QVERIFY(!run->computePath.isEmpty());
    ui::RunsModel* model = m_session->window()->runsModel();
    const QModelIndex name = model->index(model->rowOf(run->id), ui::RunsModel::Name);
    QVERIFY(model->flags(name) & Qt::ItemIsEditable);
    QVERIFY(model->setData(name, QStringLiteral("  my   spirals "), Qt::EditRole));
    QCOMPARE(run->name, QStringLiteral("my spirals"));
    QVERIFY(!model->setData(name, QStringLiteral("   "), Qt::EditRole));  // no empty names

    const QString bundle = m_tmp.filePath(QStringLiteral("renamed.amprun.zip"));
    m_session->files()->exportRunBundle(run->id, bundle);
    const std::vector<ExperimentRun> read = openAnything(bundle);
    QCOMPARE(read.size(), size_t(1));
    const QJsonObject summary = read.front().record.summary;
    QCOMPARE(summary.value(QStringLiteral("steps")).toDouble(), 20.0);
    double last10 = 0;
    for (int i = 10; i < 20; ++i) last10 += run->series.loss[i] / 10;
    QVERIFY2(std::abs(summary.value(QStringLiteral("final_loss")).toDouble() - last10) < 1e-6 * std::abs(last10),
             qPrintable(QString::number(summary.value(QStringLiteral("final_loss")).toDouble())));
    QVERIFY(summary.contains(QStringLiteral("median_step_ms")));
    QCOMPARE(summary.value(QStringLiteral("compute_path")).toString(), run->computePath);
    QCOMPARE(read.front().record.name, QStringLiteral("my spirals"));

    const QString ampx = m_tmp.filePath(QStringLiteral("renamed.ampx"));
    m_session->files()->saveExperimentFile(ampx);
    const QString computePath = run->computePath;
    m_session = std::make_unique<gui::GuiSession>(false);
    m_session->window()->addRecentFile(ampx);
    const QList<QAction*> recent = m_session->window()->actions().recent->actions();
    QVERIFY(!recent.isEmpty());
    recent.first()->trigger();  // was read as a JSON config: "could not open"
    QCOMPARE(controller()->runs().size(), 1);
    const ui::RunData* back = controller()->runs().first();
    QCOMPARE(back->name, QStringLiteral("my spirals"));
    QCOMPARE(back->computePath, computePath);

    ui::rememberFolderOf(bundle);
    QCOMPARE(ui::inLastFolder(QStringLiteral("next.ampx")), QDir(m_tmp.path()).filePath(QStringLiteral("next.ampx")));
  }

  void periodicCheckpointsBundleAndJson() {
    // The experiment panel has no checkpoint.* fields (yet): queue the config as the window would.
    test::apply(m_session->window()->experiment(), test::tinySpirals(20));
    RunConfig config = m_session->window()->experiment()->config();
    config.checkpoint.every = 10;
    ui::RunData* run = controller()->enqueue(config);
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Finished, 20000);
    const QString dir = gui::RunController::checkpointDir(*run);
    QVERIFY2(QFile::exists(QDir(dir).filePath(QStringLiteral("step-10.zip"))), qPrintable(dir));
    QVERIFY(QFile::exists(QDir(dir).filePath(QStringLiteral("step-20.zip"))));
    QCOMPARE(run->checkpointPath, QDir(dir).filePath(QStringLiteral("step-20.zip")));

    const QString bundle = m_tmp.filePath(QStringLiteral("run.zip"));
    m_session->files()->exportRunBundle(run->id, bundle);
    const std::vector<ExperimentRun> back = openAnything(bundle);
    QCOMPARE(back.size(), size_t(1));
    QCOMPARE(back.front().record.steps.size(), size_t(20));
    QVERIFY(!back.front().checkpointZip.isEmpty());
    // Opened in the window, its checkpoint becomes a file that can be resumed from.
    QCOMPARE(m_session->files()->openRuns(bundle), 1);
    const ui::RunData* opened = controller()->runs().last();
    QCOMPARE(opened->series.size(), 20);
    QCOMPARE(readCheckpointInfo(opened->checkpointPath).step, 20);
    QDir(gui::RunController::checkpointDir(*opened)).removeRecursively();

    const QString json = m_tmp.filePath(QStringLiteral("metrics.json"));
    m_session->files()->exportMetrics(json);
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(o.value(QStringLiteral("format")).toString(), QStringLiteral("ampstudio-metrics"));
    QCOMPARE(o.value(QStringLiteral("runs")).toArray().size(), 2);  // trained + opened, both ticked
    QDir(dir).removeRecursively();
  }

  // What a file manager (the desktop entry's `ampstudio %f`) or a command line hands the app: an
  // .ampx, a run bundle under any name, a JSON config, or junk with its reason. Before, every
  // path was read as a JSON config, so an .ampx opened from the desktop failed.
  void openFromCommandLineTakesWhatTheDesktopHandsIt() {
    ui::RunData* run = runSpirals(20, false);
    QVERIFY(run);
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Finished, 20000);
    const QString ampx = m_tmp.filePath(QStringLiteral("desktop.ampx"));
    m_session->files()->saveExperimentFile(ampx);
    const QString bundle = m_tmp.filePath(QStringLiteral("renamed bundle.bin"));
    m_session->files()->exportRunBundle(run->id, bundle);
    const QString config = m_tmp.filePath(QStringLiteral("config.json"));
    QVERIFY(m_session->window()->saveConfigFile(config));
    QDir(gui::RunController::checkpointDir(*run)).removeRecursively();
    m_session.reset();

    for (const QString& path : {ampx, bundle}) {
      gui::GuiSession session(/*persistSettings=*/false);
      QString why;
      QVERIFY2(session.openFromCommandLine(path, &why), qPrintable(why));
      QCOMPARE(session.controller()->runs().size(), 1);
      QCOMPARE(session.controller()->runs().first()->series.size(), 20);
      for (const ui::RunData* r : session.controller()->runs())
        QDir(gui::RunController::checkpointDir(*r)).removeRecursively();
    }
    {
      gui::GuiSession session(/*persistSettings=*/false);
      QString why;
      QVERIFY2(session.openFromCommandLine(config, &why), qPrintable(why));
      QCOMPARE(session.controller()->runs().size(), 0);
      QCOMPARE(session.window()->experiment()->config().train.steps, 20);
    }
    const QString junk = m_tmp.filePath(QStringLiteral("junk.ampx"));
    QFile f(junk);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("PK\x03\x04 and then nothing a zip has");
    f.close();
    gui::GuiSession session(/*persistSettings=*/false);
    QString why;
    QVERIFY(!session.openFromCommandLine(junk, &why));
    QVERIFY2(why.contains(junk) && !why.contains(u'\n'), qPrintable(why));
    QCOMPARE(session.controller()->runs().size(), 0);
    m_session = std::make_unique<gui::GuiSession>(/*persistSettings=*/false);  // for cleanup()
  }

  // Issue 42 item 5: two CLI folders of one preset both held a run called "overflow": the runs
  // table, the legends ("#1", "#2") and the compare dialog could not tell them apart. A name
  // the session already has takes its folder's name (then its precision).
  void runsOfOnePresetFromTwoFoldersAreNamedByFolder() {
    auto folder = [this](const QString& name, PrecisionMode mode) {
      RunRecord r;
      r.name = QStringLiteral("overflow");
      r.config.name = "overflow";
      r.config.mode = mode;
      r.status = QStringLiteral("finished");
      for (int i = 1; i <= 3; ++i) {
        StepMetrics m;
        m.step = i;
        m.loss = 1.0 / i;
        r.steps.push_back(m);
      }
      const QString dir = m_tmp.filePath(name);
      writeRunFolder(r, dir);
      return dir;
    };
    const QString fp16 = folder(QStringLiteral("overflow_fp16"), PrecisionMode::AmpFp16);
    const QString bf16 = folder(QStringLiteral("overflow_bf16"), PrecisionMode::AmpBf16);
    QCOMPARE(m_session->files()->openRuns(fp16), 1);
    QCOMPARE(m_session->files()->openRuns(bf16), 1);
    QCOMPARE(m_session->files()->openRuns(fp16), 1);  // the same folder again
    QStringList names;
    for (const ui::RunData* r : controller()->runs()) names << r->name;
    QCOMPARE(names, (QStringList{QStringLiteral("overflow"), QStringLiteral("overflow · overflow_bf16"),
                                 QStringLiteral("overflow · overflow_fp16")}));
  }

  // Issue 42 item 6: a TensorBoard log without our config said "AMP fp16" where the CLI warns
  // the precision was guessed, and "×2 after 2000 more clean steps" (the default interval)
  // beside a scale the log moved on its own; its accuracy alone (no test loss) was in the table
  // but not in the chart.
  void anImportedTensorBoardRunSaysWhatItGuessed() {
    const QString dir = m_tmp.filePath(QStringLiteral("tb/run1"));
    QVERIFY(QDir().mkpath(dir));
    QFile::remove(dir + QStringLiteral("/events.out.tfevents.1.host"));
    QVERIFY(QFile::copy(QStringLiteral(AMP_TEST_SOURCE_DIR "/tests/unit/data/tensorboard_writer.tfevents"),
                        dir + QStringLiteral("/events.out.tfevents.1.host")));
    QCOMPARE(m_session->files()->openRuns(dir), 1);
    const ui::RunData* run = controller()->runs().last();
    ui::RunsModel* model = m_session->window()->runsModel();
    const QString mode = model->data(model->index(model->rowOf(run->id), ui::RunsModel::Mode), Qt::DisplayRole).toString();
    QVERIFY2(mode.contains(QStringLiteral("guessed")), qPrintable(mode));
    QVERIFY(!run->series.testAcc.isEmpty());  // the chart has the accuracy the table shows
    // Issue 40 part 3: what the log did not have (throughput, memory) reads "not logged", not a
    // 0 samples/s line, a zero memory band and "0 B" as if they were measured.
    QCOMPARE(model->data(model->index(model->rowOf(run->id), ui::RunsModel::PeakMemory), Qt::DisplayRole).toString(),
             QStringLiteral("not logged"));
    ui::ThroughputChart throughput;
    throughput.resize(800, 400);
    throughput.setRuns({run});
    throughput.show();
    QVERIFY(QTest::qWaitForWindowExposed(&throughput));
    throughput.refreshNow();
    QVERIFY2(throughput.chartView()->placeholder().contains(QStringLiteral("not logged")),
             qPrintable(throughput.chartView()->placeholder()));
    QCOMPARE(throughput.chartView()->chart()->series().size(), 0);
    ui::MemoryChart memory;
    memory.resize(800, 400);
    memory.setRuns({run});
    memory.show();
    QVERIFY(QTest::qWaitForWindowExposed(&memory));
    memory.setSelectedRun(run->id);
    memory.refreshNow();
    QVERIFY2(memory.chartView()->placeholder().contains(QStringLiteral("memory not logged")),
             qPrintable(memory.chartView()->placeholder()));
  }

  void badFileChangesNothing() {
    const QString junk = m_tmp.filePath(QStringLiteral("junk.ampx"));
    QFile f(junk);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("not a zip");
    f.close();
    QVERIFY_THROWS_EXCEPTION(std::exception, m_session->files()->openRuns(junk));
    QCOMPARE(controller()->runs().size(), 0);
  }

  void checkpointOfPausedRunAndResume() {
    ui::RunData* run = runSpirals(20, true);
    QVERIFY(run);
    QTRY_COMPARE_WITH_TIMEOUT(run->series.size(), 1, 20000);  // the single step is done
    QTRY_COMPARE(run->status, ui::RunStatus::Paused);
    QSignalSpy saved(controller(), &gui::RunController::checkpointSaved);
    const QString zip = m_tmp.filePath(QStringLiteral("ckpt/step-1.zip"));
    QVERIFY(m_session->files()->saveCheckpointNow(run->id, zip));
    QTRY_COMPARE_WITH_TIMEOUT(saved.count(), 1, 20000);
    QVERIFY2(saved.first().at(2).toBool(), qPrintable(saved.first().at(3).toString()));
    QVERIFY(QFile::exists(zip));
    QCOMPARE(run->checkpointPath, zip);
    const CheckpointInfo info = readCheckpointInfo(zip);
    QCOMPARE(info.step, 1);
    QCOMPARE(info.config.train.steps, 20);

    m_session->window()->actions().stop->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(run->status, ui::RunStatus::Stopped, 20000);
    // A run whose trainer is gone cannot be checkpointed: nothing is asked of anyone.
    QVERIFY(!m_session->files()->saveCheckpointNow(run->id, zip + QStringLiteral(".2")));

    const int id = m_session->files()->resumeFromCheckpoint(zip);
    ui::RunData* resumed = controller()->run(id);
    QVERIFY(resumed);
    QTRY_COMPARE_WITH_TIMEOUT(resumed->status, ui::RunStatus::Finished, 20000);
    QCOMPARE(resumed->series.size(), 20);  // 1 from the checkpoint, 19 trained
    QCOMPARE(resumed->series.step.first(), 1.0);
    QCOMPARE(resumed->series.step.last(), 20.0);
  }

  // checkpoint.every writes every N steps: a failing disk must not raise a dialog each time.
  void failingPeriodicCheckpointsWarnOnce() {
    ui::RunData* run = runSpirals(20, true);
    QVERIFY(run);
    int dialogs = 0;
    QTimer closer;  // answers each modal warning as a user would, and counts it
    connect(&closer, &QTimer::timeout, [&] {
      if (QWidget* w = QApplication::activeModalWidget()) {
        ++dialogs;
        w->close();
      }
    });
    closer.start(20);
    const QString msg = QStringLiteral("No space left on device");
    for (int i = 0; i < 3; ++i) emit controller()->checkpointSaved(run, QStringLiteral("/x.zip"), false, msg, true);
    QCOMPARE(dialogs, 1);
    QVERIFY(m_session->window()->statusBar()->currentMessage().contains(msg));
    // A checkpoint the user asked for always answers with a dialog when it fails.
    emit controller()->checkpointSaved(run, QStringLiteral("/y.zip"), false, msg, false);
    QCOMPARE(dialogs, 2);
  }
};

QTEST_MAIN(TestFiles)
#include "tst_files.moc"
