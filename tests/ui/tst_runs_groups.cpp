// Runs started together form one group: twin runs and a lesson's variants share a group name
// (numbered when the same start is repeated), a single run has none, and a saved experiment
// keeps every run's group, tags and note.
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

#include "app/gui_files.h"
#include "app/gui_run_controller.h"
#include "app/gui_session.h"
#include "gui_test_util.h"
#include "ui/main_window.h"

using namespace amp;

class TestRunsGroups : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::GuiSession> m_session;
  QTemporaryDir m_tmp;
  gui::RunController* controller() { return m_session->controller(); }
  ui::MainWindow* window() { return m_session->window(); }
  void waitAllEnded() {
    for (const ui::RunData* r : controller()->runs())
      QTRY_VERIFY_WITH_TIMEOUT(r->status == ui::RunStatus::Finished, 30000);
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_tmp.isValid());
  }
  void init() { m_session = std::make_unique<gui::GuiSession>(/*persistSettings=*/false); }
  void cleanup() { m_session.reset(); }

  void twinRunsFormOneGroupEachTime() {
    test::apply(window()->experiment(), test::tinySpirals(5));
    window()->actions().twin->trigger();
    window()->actions().twin->trigger();
    window()->actions().start->trigger();
    const auto runs = controller()->runs();
    QCOMPARE(runs.size(), 7);
    const QString first = runs[0]->group;
    QVERIFY2(first.contains(QStringLiteral("twins")), qPrintable(first));
    QCOMPARE(runs[1]->group, first);
    QCOMPARE(runs[2]->group, first);
    const QString second = runs[3]->group;
    QVERIFY2(!second.isEmpty() && second != first && second.endsWith(QStringLiteral("#2")), qPrintable(second));
    QCOMPARE(runs[4]->group, second);
    QCOMPARE(runs[5]->group, second);
    QVERIFY(runs[6]->group.isEmpty());  // one run on its own is no group
    waitAllEnded();
  }

  void aLessonsVariantsAreGroupedByTheLesson() {
    QVERIFY(window()->loadLesson(QStringLiteral("underflow")));
    window()->experiment()->setFieldValue("train.steps", "2");
    const QVector<RunConfig> configs = window()->lessonConfigs(QStringLiteral("underflow"));
    QVERIFY(configs.size() > 1);
    emit window()->startRequested(configs, /*paused=*/true);
    const auto runs = controller()->runs();
    QCOMPARE(runs.size(), configs.size());
    for (const ui::RunData* r : runs) QCOMPARE(r->group, QStringLiteral("underflow"));
    controller()->stopAll();
  }

  void groupTagsAndNoteSurviveSavingAndOpening() {
    test::apply(window()->experiment(), test::tinySpirals(5));
    window()->actions().twin->trigger();
    waitAllEnded();
    ui::RunData* run = controller()->run(controller()->runs()[1]->id);
    run->tags = QStringList{"demo", "fp16"};
    run->note = QStringLiteral("the scaler kept every update");
    const QString group = run->group;
    QVERIFY(!group.isEmpty());
    const QString ampx = m_tmp.filePath(QStringLiteral("groups.ampx"));
    m_session->files()->saveExperimentFile(ampx);

    m_session = std::make_unique<gui::GuiSession>(false);
    QCOMPARE(m_session->files()->openRuns(ampx), 3);
    const auto back = controller()->runs();
    for (const ui::RunData* r : back) QCOMPARE(r->group, group);
    QCOMPARE(back[1]->tags, (QStringList{"demo", "fp16"}));
    QCOMPARE(back[1]->note, QStringLiteral("the scaler kept every update"));
    QVERIFY(back[0]->tags.isEmpty());
  }
};

QTEST_MAIN(TestRunsGroups)
#include "tst_runs_groups.moc"
