// A run that cannot fit in memory fails at once with the estimate and the memory available, as
// the GUI shows a run's failure, instead of trying and reporting "std::bad_alloc".
#include <QSignalSpy>
#include <QTest>

#include "app/gui_training_worker.h"
#include "engine/config/config_schema.h"
#include "engine/train/memory_estimate.h"
#include "gui_test_util.h"

using namespace amp;
using namespace amp::gui;

namespace {
RunConfig configOf(const std::vector<std::pair<std::string, std::string>>& kv) {
  RunConfig c;
  for (const auto& [k, v] : kv) setConfigValue(c, k, v);
  return c;
}
}  // namespace

class TestMemoryRefusal : public QObject {
  Q_OBJECT

 private slots:
  void aHugeModelFailsWithTheEstimateBeforeAnyStep() {
    // 1e12 parameters: terabytes of weights, gradients and Adam state.
    auto kv = test::tinySpirals(5);
    kv.push_back({"model.hidden", "1000000,1000000"});
    TrainingWorker w(configOf(kv));
    QSignalSpy ended(&w, &TrainingWorker::runEnded);
    w.start();
    QTRY_COMPARE_WITH_TIMEOUT(ended.size(), 1, 10000);
    QCOMPARE(ended[0][0].toInt(), int(RunOutcome::Failed));
    const QString why = ended[0][1].toString();
    QVERIFY2(why.contains(QStringLiteral("model.hidden=1000000,1000000")), qPrintable(why));
    QVERIFY2(why.contains(QStringLiteral("needs ≈")), qPrintable(why));
    QVERIFY2(why.contains(QStringLiteral("Adam state")), qPrintable(why));
    QVERIFY2(why.contains(QStringLiteral("available")), qPrintable(why));
    QVERIFY2(!why.contains(QStringLiteral("bad_alloc")), qPrintable(why));
    QVERIFY(w.buffer().drain().steps.empty());  // refused before training a step
  }

  void theEstimateBesideStartNamesItsParts() {
    // What the app shows beside its Start button for the tiny lesson: small, and itemised.
    RunConfig c;
    for (const auto& [k, v] : test::tinySpirals(5)) setConfigValue(c, k, v);
    const MemoryEstimate e = estimateMemory(c);
    QCOMPARE(e.parameterCount, 2 * 16 + 16 + 16 * 16 + 16 + 16 * 2 + 2);
    const QString summary = QString::fromStdString(e.summary());
    QVERIFY2(summary.startsWith(QStringLiteral("≈ ")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("Adam state")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("activations")), qPrintable(summary));
  }
};

QTEST_MAIN(TestMemoryRefusal)
#include "tst_memory_refusal.moc"
