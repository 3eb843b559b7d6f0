// Comparisons that mean something: each run's speed-up and memory ratio are against the fp32
// run of its own group (not the session's first fp32 run, which may train another model), a
// forced baseline of another model, data set or batch size is shown only with a warning naming
// the keys, "Compare settings…" lists the keys two runs differ in, and a diverged run's status
// is red with the step and tensor as its tooltip.
#include <QApplication>
#include <QBrush>
#include <QDialog>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTest>
#include <memory>
#include <vector>

#include "runs_fakes.h"
#include "ui/runs_model.h"
#include "ui/runs_panel.h"
#include "ui/theme.h"

using namespace amp;
using test::FakeRun;

class TestRunsCompare : public QObject {
  Q_OBJECT

 private:
  std::vector<std::unique_ptr<ui::RunData>> m_runs;
  std::unique_ptr<ui::RunsModel> m_model;
  std::unique_ptr<QAction> m_twin;
  std::unique_ptr<ui::RunsPanel> m_panel;

  ui::RunData* add(const FakeRun& f) {
    m_runs.push_back(test::makeRun(int(m_runs.size()) + 1, f));
    m_model->addRun(m_runs.back().get());
    return m_runs.back().get();
  }
  QString cell(int row, int column, int role = Qt::DisplayRole) {
    return m_model->index(row, column).data(role).toString();
  }
  // The Speed-up cell's text colour: invalid (the view's own) unless it warns.
  QVariant speedColour(int row) { return m_model->index(row, ui::RunsModel::SpeedUp).data(Qt::ForegroundRole); }
  // `steps` step times alternating between `a` and `b` milliseconds.
  static std::vector<double> swinging(double a, double b, int steps) {
    std::vector<double> out;
    for (int i = 0; i < steps; ++i) out.push_back(i % 2 ? b : a);
    return out;
  }

 private slots:
  void init() {
    m_runs.clear();
    m_model = std::make_unique<ui::RunsModel>();
    m_twin = std::make_unique<QAction>(QStringLiteral("Twin runs"));
    m_panel = std::make_unique<ui::RunsPanel>(m_model.get(), m_twin.get());
    m_panel->resize(1000, 300);
    m_panel->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_panel.get()));
    // The underflow lesson (a big recipe MLP), then twin runs of a small fmnist MLP.
    add({"underflow/fp32", PrecisionMode::Fp32, "underflow", 50, 28000, ui::RunStatus::Finished, "recipe_mlp", "synthetic", 256});
    add({"underflow/fp16", PrecisionMode::AmpFp16, "underflow", 25, 20000, ui::RunStatus::Finished, "recipe_mlp", "synthetic", 256});
    add({"fmnist fp32", PrecisionMode::Fp32, "fmnist twins", 4, 1000, ui::RunStatus::Finished, "mlp", "fmnist", 64});
    add({"fmnist fp16", PrecisionMode::AmpFp16, "fmnist twins", 2, 800, ui::RunStatus::Finished, "mlp", "fmnist", 64});
    m_model->refresh();
  }
  void cleanup() {
    m_panel.reset();
    m_model.reset();
    m_runs.clear();
  }

  void eachRowIsComparedWithItsGroupsFp32Run() {
    QCOMPARE(cell(0, ui::RunsModel::SpeedUp), QStringLiteral("baseline"));
    QCOMPARE(cell(1, ui::RunsModel::SpeedUp), QStringLiteral("2.00×"));
    QCOMPARE(cell(2, ui::RunsModel::SpeedUp), QStringLiteral("baseline"));
    QCOMPARE(cell(3, ui::RunsModel::SpeedUp), QStringLiteral("2.00×"));
    QCOMPARE(cell(3, ui::RunsModel::MemoryRatio), QStringLiteral("0.80×"));
    QVERIFY(!cell(3, ui::RunsModel::SpeedUp).contains(QChar(0x26A0)));
  }

  void aRunOfNoGroupUsesAComparableFp32Run() {
    add({"fmnist fp16 again", PrecisionMode::AmpFp16, "", 1, 500, ui::RunStatus::Finished, "mlp", "fmnist", 64});
    m_model->refresh();
    QCOMPARE(cell(4, ui::RunsModel::SpeedUp), QStringLiteral("4.00×"));  // against fmnist fp32
    add({"cifar fp16", PrecisionMode::AmpFp16, "", 1, 500, ui::RunStatus::Finished, "cnn", "cifar10", 64});
    m_model->refresh();
    QCOMPARE(cell(5, ui::RunsModel::SpeedUp), QString());  // nothing it can be compared with
  }

  void aForcedBaselineOfAnotherModelWarns() {
    m_model->setBaselineId(1);  // underflow/fp32 for every row
    QCOMPARE(cell(1, ui::RunsModel::SpeedUp), QStringLiteral("2.00×"));
    const QString speedUp = cell(3, ui::RunsModel::SpeedUp);
    QVERIFY2(speedUp.startsWith(QChar(0x26A0)) && speedUp.contains(QStringLiteral("25.00×")), qPrintable(speedUp));
    const QString memory = cell(3, ui::RunsModel::MemoryRatio);
    QVERIFY2(memory.startsWith(QChar(0x26A0)), qPrintable(memory));
    const QString tip = cell(3, ui::RunsModel::SpeedUp, Qt::ToolTipRole);
    for (const char* key : {"model.name", "data.name", "train.batch_size"})
      QVERIFY2(tip.contains(QLatin1String(key)), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("underflow/fp32")), qPrintable(tip));
    // Back to automatic: each group's own fp32 run again.
    m_model->setBaselineId(0);
    QCOMPARE(cell(3, ui::RunsModel::SpeedUp), QStringLiteral("2.00×"));
  }

  // Issue 38: a speed-up the step times cannot back is never a bare ratio. "~1.3× (noisy)" in the
  // warning colour, its tooltip saying why and what to do; a clean one stays "2.00×", uncoloured.
  void aNoisySpeedUpIsFlaggedAndACleanOneIsNot() {
    QCOMPARE(cell(3, ui::RunsModel::SpeedUp), QStringLiteral("2.00×"));  // steady 2 ms against 4
    QVERIFY(!speedColour(3).isValid());
    QVERIFY2(!cell(3, ui::RunsModel::SpeedUp, Qt::ToolTipRole).contains(QStringLiteral("noisy")),
             qPrintable(cell(3, ui::RunsModel::SpeedUp, Qt::ToolTipRole)));
    // Not in turns, its steps swinging between 1 and 3 ms (a busy process beside it): its
    // quartiles lie 3x apart, so the 1.33x its median gives says nothing.
    add({"fmnist bf16", PrecisionMode::AmpBf16, "fmnist twins", 2, 800, ui::RunStatus::Finished, "mlp", "fmnist", 64,
         swinging(1, 3, 20)});
    m_model->refresh();
    QCOMPARE(cell(4, ui::RunsModel::SpeedUp), QStringLiteral("~1.3× (noisy)"));
    QCOMPARE(speedColour(4).value<QBrush>().color(), ui::warningColor());
    const QString tip = cell(4, ui::RunsModel::SpeedUp, Qt::ToolTipRole);
    for (const char* why : {"Too noisy to conclude", "this run's step times lie 3.00× apart", "quieter machine",
                            "in turns", "fmnist fp32"})
      QVERIFY2(tip.contains(QString::fromUtf8(why)), qPrintable(tip));
    // The baseline's own swings flag the ratios against it, and name it.
    add({"spread fp32", PrecisionMode::Fp32, "spread twins", 0, 800, ui::RunStatus::Finished, "mlp", "spirals", 50,
         swinging(4, 8, 20)});
    add({"spread fp16", PrecisionMode::AmpFp16, "spread twins", 2, 800});
    m_model->refresh();
    QVERIFY2(cell(6, ui::RunsModel::SpeedUp).endsWith(QStringLiteral("(noisy)")), qPrintable(cell(6, ui::RunsModel::SpeedUp)));
    QVERIFY(cell(6, ui::RunsModel::SpeedUp, Qt::ToolTipRole).contains(QStringLiteral("spread fp32's step times lie 2.00× apart")));
    QVERIFY(speedColour(6).isValid());
    // Against a forced baseline of another workload: both warnings, the sign first.
    m_model->setBaselineId(1);
    QCOMPARE(cell(4, ui::RunsModel::SpeedUp), QStringLiteral("⚠ ~17× (noisy)"));  // 50 ms over 3
    QCOMPARE(cell(1, ui::RunsModel::SpeedUp), QStringLiteral("2.00×"));
    QVERIFY(!speedColour(1).isValid());
  }

  // Runs that trained in turns (a lesson's) are compared round by round: a load that rose
  // halfway through fell on both, so their speed-up is clean where their own step times, 4x apart,
  // would call it noisy; and rounds that disagree are flagged all the same.
  void runsInTurnsAreComparedRoundByRound() {
    std::vector<double> base, fast, unsteady;
    for (int round = 0; round < 8; ++round)
      for (int step = 0; step < 2; ++step) {
        base.push_back(round < 4 ? 10 : 40);
        fast.push_back(round < 4 ? 5 : 20);
        unsteady.push_back(round % 2 ? 12 : 5);
      }
    ui::RunData* b = add({"gpt/fp32", PrecisionMode::Fp32, "gpt", 0, 800, ui::RunStatus::Finished, "gpt", "text", 8, base});
    ui::RunData* f = add({"gpt/bf16", PrecisionMode::AmpBf16, "gpt", 0, 800, ui::RunStatus::Finished, "gpt", "text", 8, fast});
    ui::RunData* u = add({"gpt/fp16", PrecisionMode::AmpFp16, "gpt", 0, 800, ui::RunStatus::Finished, "gpt", "text", 8, unsteady});
    for (ui::RunData* r : {b, f, u}) {
      r->turnSet = b->id;
      r->turnBlockSteps = 2;
    }
    m_model->refresh();
    QCOMPARE(cell(5, ui::RunsModel::SpeedUp), QStringLiteral("2.00×"));
    QVERIFY(!speedColour(5).isValid());
    const QString tip = cell(5, ui::RunsModel::SpeedUp, Qt::ToolTipRole);
    QVERIFY2(tip.contains(QStringLiteral("Timed in turns with gpt/fp32")) && tip.contains(QStringLiteral("7 rounds")),
             qPrintable(tip));
    // Rounds that disagree (10/12 = 0.83x in one, 40/5 = 8x in another): flagged.
    const QString unsteadyText = cell(6, ui::RunsModel::SpeedUp);
    QVERIFY2(unsteadyText.startsWith(QLatin1Char('~')) && unsteadyText.endsWith(QStringLiteral("(noisy)")),
             qPrintable(unsteadyText));
    QVERIFY(speedColour(6).isValid());
    // The same step times, not timed in turns: the medians' ratio, and fp32's spread flags it.
    f->turnSet = 0;
    m_model->refresh();
    QCOMPARE(cell(5, ui::RunsModel::SpeedUp), QStringLiteral("~2.0× (noisy)"));
    QVERIFY(cell(5, ui::RunsModel::SpeedUp, Qt::ToolTipRole).contains(QStringLiteral("Not timed in turns")));
  }

  // Issue 25: the two memory columns are told apart by their names, and the lost-update meter
  // says why an fp32 run shows lost updates too.
  void memoryColumnsAndLostUpdatesExplainThemselves() {
    const QString peak = m_model->headerData(ui::RunsModel::PeakMemory, Qt::Horizontal, Qt::DisplayRole).toString();
    const QString ratio = m_model->headerData(ui::RunsModel::MemoryRatio, Qt::Horizontal, Qt::DisplayRole).toString();
    QVERIFY2(ratio.contains(QStringLiteral("ratio")) && !peak.contains(QStringLiteral("ratio")), qPrintable(peak + " | " + ratio));
    const QString lost = m_model->headerData(ui::RunsModel::LostUpdates, Qt::Horizontal, Qt::ToolTipRole).toString();
    QVERIFY2(lost.contains(QStringLiteral("fp32 loses some too")), qPrintable(lost));
  }

  // The seeds' table in the runs table: time per epoch, activation memory, checkpoint and weights
  // file, each with its ratio to the group's fp32 run (none on the baseline itself), in the event
  // log's binary units (issue 25: "MB" in the table, "MiB" in the log).
  void theSeedsTableShowsSizesWithRatios() {
    ui::RunData* f32 = m_runs[2].get();
    ui::RunData* f16 = m_runs[3].get();
    f32->checkpointBytes = 2'200'000;
    f32->weightsBytes = 1'100'000;
    f32->weightsDtype = QStringLiteral("fp32");
    f16->checkpointBytes = 2'200'000;
    f16->weightsBytes = 550'000;
    f16->weightsDtype = QStringLiteral("fp16");
    m_model->refresh();
    QCOMPARE(cell(2, ui::RunsModel::Checkpoint), QStringLiteral("2.1 MiB"));
    QCOMPARE(cell(3, ui::RunsModel::Checkpoint), QStringLiteral("2.1 MiB · 1.00×"));
    QCOMPARE(cell(2, ui::RunsModel::WeightsFile), QStringLiteral("1.0 MiB fp32"));
    QCOMPARE(cell(3, ui::RunsModel::WeightsFile), QStringLiteral("537.1 KiB fp16 · 0.50×"));
    QVERIFY(cell(3, ui::RunsModel::WeightsFile, Qt::ToolTipRole).contains(QStringLiteral("fmnist fp32")));
    // Unmeasured (a run still going, an old file): empty, not 0.
    QCOMPARE(cell(0, ui::RunsModel::Checkpoint), QString());
    QCOMPARE(test::columnNamed(m_model.get(), QStringLiteral("Weights file")), int(ui::RunsModel::WeightsFile));
  }

  void compareSettingsListsTheKeysThatDiffer() {
    test::selectViewRows(m_panel->view(), {0, 3});
    QAction* compare = test::panelAction(m_panel.get(), "compareSettingsAction");
    QVERIFY(compare);
    QVERIFY(compare->isEnabled());
    compare->trigger();
    QDialog* dialog = nullptr;
    QTRY_VERIFY((dialog = m_panel->findChild<QDialog*>(QStringLiteral("configDiffDialog"))) && dialog->isVisible());
    auto* table = dialog->findChild<QTableWidget*>();
    QVERIFY(table);
    QStringList keys;
    for (int row = 0; row < table->rowCount(); ++row) keys << table->item(row, 0)->text();
    QVERIFY2(keys.contains(QStringLiteral("amp.mode")), qPrintable(keys.join(u',')));
    QVERIFY(keys.contains(QStringLiteral("model.name")));
    QVERIFY(keys.contains(QStringLiteral("train.batch_size")));
    QVERIFY(!keys.contains(QStringLiteral("seed")));  // equal: not listed
    const int row = keys.indexOf(QStringLiteral("model.name"));
    QCOMPARE(table->item(row, 1)->text(), QStringLiteral("recipe_mlp"));
    QCOMPARE(table->item(row, 2)->text(), QStringLiteral("mlp"));
    QCOMPARE(table->horizontalHeaderItem(1)->text(), QStringLiteral("underflow/fp32"));
    QCOMPARE(table->horizontalHeaderItem(2)->text(), QStringLiteral("fmnist fp16"));
    dialog->close();
    // One row selected: nothing to compare.
    test::selectViewRows(m_panel->view(), {0});
    QVERIFY(!compare->isEnabled());
  }

  void divergedAndFailedRunsAreRedWithTheirDetail() {
    m_runs[1]->status = ui::RunStatus::Diverged;
    m_runs[1]->statusDetail = QStringLiteral("step 2: non-finite loss; first non-finite tensor: 0.weight");
    m_runs[2]->status = ui::RunStatus::Failed;
    m_runs[2]->statusDetail = QStringLiteral("std::bad_alloc");
    m_model->refresh();
    QCOMPARE(cell(1, ui::RunsModel::Status), QStringLiteral("diverged"));
    QCOMPARE(m_model->index(1, ui::RunsModel::Status).data(Qt::ForegroundRole).value<QBrush>().color(), ui::errorColor());
    QCOMPARE(m_model->index(2, ui::RunsModel::Status).data(Qt::ForegroundRole).value<QBrush>().color(), ui::errorColor());
    const QString tip = cell(1, ui::RunsModel::Status, Qt::ToolTipRole);
    QVERIFY2(tip.contains(QStringLiteral("step 2")) && tip.contains(QStringLiteral("0.weight")), qPrintable(tip));
    QVERIFY(cell(2, ui::RunsModel::Status, Qt::ToolTipRole).contains(QStringLiteral("bad_alloc")));
  }
};

QTEST_MAIN(TestRunsCompare)
#include "tst_runs_compare.moc"
