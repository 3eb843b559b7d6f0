// The runs table as a person manages it: select several rows, Delete removes them after asking
// (deleting cannot be undone: archiving is offered beside it; active runs are stopped first),
// "Archive finished" sets ended runs aside and "Restore" brings them back, hide and show runs in
// the charts without removing them, select a whole group, edit tags and a note, and filter.
// Runs are made by hand: no training, so every figure is the one the test set.
#include <QApplication>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <QTimer>
#include <QToolButton>
#include <memory>
#include <vector>

#include "gui_test_util.h"
#include "runs_fakes.h"
#include "ui/runs_model.h"
#include "ui/runs_panel.h"

using namespace amp;
using test::FakeRun;

class TestRunsPanel : public QObject {
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
  QTableView* view() { return m_panel->view(); }
  ui::RunData* byId(int id) {
    for (auto& r : m_runs)
      if (r->id == id) return r.get();
    return nullptr;
  }

 private slots:
  void init() {
    m_runs.clear();
    m_model = std::make_unique<ui::RunsModel>();
    m_twin = std::make_unique<QAction>(QStringLiteral("Twin runs"));
    m_panel = std::make_unique<ui::RunsPanel>(m_model.get(), m_twin.get());
    // What MainWindow + RunController do with the requests: forget the run.
    connect(m_panel.get(), &ui::RunsPanel::removeRunRequested, m_model.get(), &ui::RunsModel::removeRun);
    m_panel->resize(1000, 300);
    m_panel->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_panel.get()));
    add({"spirals fp32", PrecisionMode::Fp32, "spirals twins"});
    add({"spirals fp16", PrecisionMode::AmpFp16, "spirals twins"});
    add({"spirals bf16", PrecisionMode::AmpBf16, "spirals twins"});
    add({"recipe fp16", PrecisionMode::AmpFp16, "", 10, 1000, ui::RunStatus::Running});
  }
  void cleanup() {
    m_panel.reset();
    m_model.reset();
    m_runs.clear();
  }

  void severalRowsCanBeSelected() {
    QCOMPARE(view()->selectionMode(), QAbstractItemView::ExtendedSelection);
    test::selectViewRows(view(), {0, 2});
    QCOMPARE(test::selectedNames(view()), (QStringList{"spirals fp32", "spirals bf16"}));
  }

  void deleteKeyAsksThenRemovesTheSelectedEndedRuns() {
    QSignalSpy stop(m_panel.get(), &ui::RunsPanel::stopRunRequested);
    test::selectViewRows(view(), {0, 1});
    view()->setFocus();
    // Cancelled: nothing goes.
    QString question;
    test::answerNextMessageBox(QStringLiteral("Cancel"), &question);
    QTest::keyClick(view(), Qt::Key_Delete);
    QVERIFY2(question.contains(QStringLiteral("Delete 2 runs")), qPrintable(question));
    QCOMPARE(m_model->rowCount(), 4);
    m_panel->activateWindow();  // the box had the focus
    view()->setFocus();
    QTRY_VERIFY(view()->hasFocus());
    test::answerNextMessageBox(QStringLiteral("Delete"));
    QTest::keyClick(view(), Qt::Key_Delete);
    QCOMPARE(m_model->rowCount(), 2);
    QCOMPARE(m_model->runAt(0)->name, QStringLiteral("spirals bf16"));
    QCOMPARE(m_model->runAt(1)->name, QStringLiteral("recipe fp16"));
    QCOMPARE(stop.count(), 0);
  }

  void deleteOffersArchivingInstead() {
    test::selectViewRows(view(), {0});
    test::answerNextMessageBox(QStringLiteral("Archive"));
    m_panel->removeSelectedRuns();
    QCOMPARE(m_model->rowCount(), 4);  // kept...
    QVERIFY(byId(1)->archived);        // ... set aside
  }

  void deleteAsksBeforeStoppingAnActiveRun() {
    QSignalSpy stop(m_panel.get(), &ui::RunsPanel::stopRunRequested);
    test::selectViewRows(view(), {2, 3});  // bf16 (ended) and recipe fp16 (running)
    QString question;
    QTimer::singleShot(0, this, [&question] {
      auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
      QVERIFY(box);
      question = box->text() + QLatin1Char('\n') + box->informativeText();
      box->button(QMessageBox::Yes)->click();
    });
    view()->setFocus();
    QTest::keyClick(view(), Qt::Key_Delete);
    QVERIFY2(question.contains(QStringLiteral("recipe fp16")), qPrintable(question));
    QCOMPARE(stop.count(), 1);
    QCOMPARE(stop.first().first().toInt(), 4);
    QCOMPARE(m_model->rowOf(3), -1);  // the ended one went at once
    QVERIFY(m_model->rowOf(4) >= 0);  // the active one stays until it has stopped...
    byId(4)->status = ui::RunStatus::Stopped;
    m_model->refreshRun(byId(4));
    QTRY_COMPARE(m_model->rowOf(4), -1);  // ... then goes too
  }

  void archiveFinishedSetsEveryEndedRunAsideAndRestoreBringsThemBack() {
    byId(2)->status = ui::RunStatus::Diverged;
    QAction* clear = test::panelAction(m_panel.get(), "archiveFinishedAction");
    QAction* listArchived = test::panelAction(m_panel.get(), "showArchivedAction");
    QAction* restore = test::panelAction(m_panel.get(), "restoreSelectedAction");
    QVERIFY(clear && listArchived && restore);
    auto* button = m_panel->findChild<QToolButton*>(QStringLiteral("archiveFinishedButton"));
    QVERIFY(button);
    QCOMPARE(button->defaultAction(), clear);
    QVERIFY(!listArchived->isEnabled());
    QSignalSpy archivedSpy(m_panel.get(), &ui::RunsPanel::runsArchived);
    button->click();
    // Nothing removed: the three ended runs are archived, out of the table's view...
    QCOMPARE(m_model->rowCount(), 4);
    QVERIFY(byId(1)->archived && byId(2)->archived && byId(3)->archived);
    QVERIFY(!byId(4)->archived);  // the running one stays
    QCOMPARE(view()->model()->rowCount(), 1);
    QCOMPARE(archivedSpy.count(), 1);
    QCOMPARE(archivedSpy.first().first().value<QList<int>>(), (QList<int>{1, 2, 3}));
    QVERIFY(listArchived->isEnabled());
    QVERIFY2(listArchived->text().contains(QStringLiteral("3")), qPrintable(listArchived->text()));
    // ... listed on demand, marked as archived, and restored from there.
    listArchived->trigger();
    QCOMPARE(view()->model()->rowCount(), 4);
    const int status = test::columnNamed(m_model.get(), QStringLiteral("Status"));
    QVERIFY(m_model->index(0, status).data().toString().contains(QStringLiteral("archived")));
    QVERIFY(m_model->index(0, 0).data(Qt::FontRole).value<QFont>().italic());
    m_panel->selectRuns({1, 3});
    QVERIFY(restore->isEnabled());
    restore->trigger();
    QVERIFY(!byId(1)->archived && !byId(3)->archived && byId(2)->archived);
    m_panel->selectRuns({2});
    restore->trigger();
    // None left: the list goes back to the live runs, and the button says so.
    QVERIFY(!listArchived->isChecked());
    QVERIFY(!listArchived->isEnabled());
    QCOMPARE(view()->model()->rowCount(), 4);
  }

  void hideAndShowRunsWithoutRemovingThem() {
    QSignalSpy visibility(m_model.get(), &ui::RunsModel::visibilityChanged);
    test::selectViewRows(view(), {1});
    QAction* hide = test::panelAction(m_panel.get(), "hideSelectedAction");
    QAction* only = test::panelAction(m_panel.get(), "showOnlySelectedAction");
    QAction* all = test::panelAction(m_panel.get(), "showAllAction");
    QVERIFY(hide && only && all);
    hide->trigger();
    QCOMPARE(m_model->rowCount(), 4);
    QVERIFY(!byId(2)->visible);
    QVERIFY(byId(1)->visible && byId(3)->visible);
    QCOMPARE(m_model->index(1, 0).data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    QCOMPARE(visibility.count(), 1);

    test::selectViewRows(view(), {0, 3});
    only->trigger();
    QVERIFY(byId(1)->visible && byId(4)->visible);
    QVERIFY(!byId(2)->visible && !byId(3)->visible);

    all->trigger();
    for (auto& r : m_runs) QVERIFY(r->visible);
  }

  void selectTheWholeGroup() {
    test::selectViewRows(view(), {1});
    QAction* group = test::panelAction(m_panel.get(), "selectGroupAction");
    QVERIFY(group);
    QVERIFY(group->isEnabled());
    QVERIFY2(group->text().contains(QStringLiteral("spirals twins")), qPrintable(group->text()));
    group->trigger();
    QCOMPARE(test::selectedNames(view()), (QStringList{"spirals fp32", "spirals fp16", "spirals bf16"}));
    // A run of no group has no group to select.
    test::selectViewRows(view(), {3});
    QVERIFY(!group->isEnabled());
  }

  void groupTagsAndNoteAreColumns() {
    const int group = test::columnNamed(m_model.get(), QStringLiteral("Group"));
    const int tags = test::columnNamed(m_model.get(), QStringLiteral("Tags"));
    const int note = test::columnNamed(m_model.get(), QStringLiteral("Note"));
    QVERIFY(group >= 0 && tags >= 0 && note >= 0);
    QCOMPARE(m_model->index(0, group).data().toString(), QStringLiteral("spirals twins"));
    // Tags and the note are edited in place; tags are split at commas.
    QVERIFY(m_model->flags(m_model->index(0, tags)) & Qt::ItemIsEditable);
    QVERIFY(m_model->setData(m_model->index(0, tags), QStringLiteral("demo, keep ,"), Qt::EditRole));
    QCOMPARE(byId(1)->tags, (QStringList{"demo", "keep"}));
    QCOMPARE(m_model->index(0, tags).data().toString(), QStringLiteral("demo, keep"));
    QVERIFY(m_model->setData(m_model->index(0, note), QStringLiteral("the one to show"), Qt::EditRole));
    QCOMPARE(byId(1)->note, QStringLiteral("the one to show"));
  }

  void filterMatchesNameModeGroupTagsNoteAndStatus() {
    auto* filter = m_panel->findChild<QLineEdit*>(QStringLiteral("runsFilter"));
    QVERIFY(filter);
    byId(1)->tags = QStringList{"keeper"};
    byId(3)->note = QStringLiteral("Slow on this laptop");
    auto shown = [this] {
      QList<int> ids;
      for (int row = 0; row < view()->model()->rowCount(); ++row) {
        test::selectViewRows(view(), {row});
        ids << m_panel->selectedRunId();
      }
      return ids;
    };
    QTest::keyClicks(filter, QStringLiteral("bf16"));  // mode and name
    QCOMPARE(shown(), (QList<int>{3}));
    filter->clear();
    QTest::keyClicks(filter, QStringLiteral("KEEPER"));  // a tag, any case
    QCOMPARE(shown(), (QList<int>{1}));
    filter->clear();
    QTest::keyClicks(filter, QStringLiteral("laptop"));  // the note
    QCOMPARE(shown(), (QList<int>{3}));
    filter->clear();
    QTest::keyClicks(filter, QStringLiteral("running"));  // the status
    QCOMPARE(shown(), (QList<int>{4}));
    filter->clear();
    QTest::keyClicks(filter, QStringLiteral("twins fp16"));  // every word must match
    QCOMPARE(shown(), (QList<int>{2}));
    filter->clear();
    QCOMPARE(view()->model()->rowCount(), 4);
    // Selecting through the filter picks the right run.
    m_panel->selectRun(4);
    QCOMPARE(m_panel->selectedRunId(), 4);
  }
};

QTEST_MAIN(TestRunsPanel)
#include "tst_runs_panel.moc"
