// The charts inside the main window: selecting a run in the runs table points the histogram,
// memory and layers panels at it (issue item 2: they kept showing the session's first run), and
// clicking a run's legend entry unticks it in the runs table, which hides it from every chart.
#include <QStandardPaths>
#include <QTest>
#include <memory>

#include "ui/charts/chart_legend.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/histogram_view.h"
#include "ui/charts/layer_grid_panel.h"
#include "ui/charts/loss_chart.h"
#include "ui/charts/memory_chart.h"
#include "ui/charts/synthetic_runs.h"
#include "ui/main_window.h"
#include "ui/run_data.h"
#include "ui/runs_model.h"
#include "ui/runs_panel.h"
#include "ui/theme.h"

using namespace amp;
using namespace amp::ui;

class TestChartsWiring : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<RunData>> m_runs;
  std::unique_ptr<MainWindow> m_window;

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void init() {
    m_window = std::make_unique<MainWindow>(/*persistSettings=*/false);
    m_window->resize(1920, 1080);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    m_runs.clear();
    const char* names[] = {"lesson A · fp32", "lesson A · fp16", "lesson B · bf16"};
    for (int i = 0; i < 3; ++i) {
      auto run = std::make_unique<RunData>();
      run->id = i + 1;
      fillSyntheticRun(*run, {.name = QString::fromUtf8(names[i]),
                              .steps = 300,
                              .histogramEvery = 50,
                              .evalEvery = 100,
                              .seed = std::uint64_t(i + 1),
                              .color = runColor(i)});
      m_window->addRun(run.get());
      m_runs.push_back(std::move(run));
    }
  }
  void cleanup() { m_window.reset(); }

  void selectedRunDrivesTheSingleRunPanels() {
    Dashboard* d = m_window->dashboard();
    d->refresh();
    // The newest run was selected when it was added.
    QCOMPARE(d->focusRun(), 3);
    m_window->runsPanel()->selectRun(1);
    QCOMPARE(d->focusRun(), 1);
    QCOMPARE(d->histogramView()->selectedRun(), 1);
    QCOMPARE(d->memoryChart()->selectedRun(), 1);
    QCOMPARE(d->layerGrid()->selectedRun(), 1);
    d->showChart(QStringLiteral("histogram"));
    d->refresh();
    QTRY_VERIFY2(d->histogramView()->captionText().startsWith(QStringLiteral("lesson A · fp32")),
                 qPrintable(d->histogramView()->captionText()));
  }

  void legendClickHidesTheRun() {
    Dashboard* d = m_window->dashboard();
    d->showChart(QStringLiteral("loss"));
    d->refresh();
    ChartView* view = d->lossChart()->chartView();
    ChartLegend* legend = view->runLegend();
    QTRY_VERIFY(!legend->entryRect(1).isEmpty());
    QCOMPARE(legend->entries()[1].runId, 2);
    const QPoint at = view->mapFromScene(legend->mapToScene(legend->entryRect(1).center()));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, at);
    RunsModel* model = m_window->runsModel();
    QCOMPARE(model->data(model->index(model->rowOf(2), RunsModel::Name), Qt::CheckStateRole).toInt(),
             int(Qt::Unchecked));
    QVERIFY(!m_runs[1]->visible);
    d->refresh();
    QVERIFY(view->runLegend()->entries()[1].hidden);
    // And back.
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {},
                      view->mapFromScene(legend->mapToScene(legend->entryRect(1).center())));
    QVERIFY(m_runs[1]->visible);
  }
};

QTEST_MAIN(TestChartsWiring)
#include "tst_charts_wiring.moc"
