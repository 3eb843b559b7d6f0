// Lifecycle: a long session must not leak. 100 runs started and stopped through the window (each
// then deleted as the user deletes runs), and 100 open / clear cycles of a saved experiment,
// must leave resident memory within 5 MB of where it was after a warm-up, and no thread, file
// descriptor or QObject (widget, worker, chart item) behind. The warm-up fills what is allocated once and kept (fonts, chart caches,
// oneDNN's primitive cache, libgomp's and Qt's thread pools), so what the cycles add is a leak.
#include <QAction>
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <malloc.h>

#include "app/gui_files.h"
#include "app/gui_run_controller.h"
#include "app/gui_session.h"
#include "gui_session_fixture.h"
#include "gui_test_util.h"
#include "ui/main_window.h"
#include "ui/runs_panel.h"

using namespace amp;

namespace {

// Under ThreadSanitizer (tests/sanitize/run_tsan.sh) the cycles are there for their threads'
// start and stop, not for memory: its shadow memory and its allocator, which keeps freed blocks
// and ignores malloc_trim, make RSS meaningless, and each cycle is several times slower. Threads,
// fds, QObjects and files are still counted.
#if defined(__SANITIZE_THREAD__)  // GCC
#define AMP_LIFECYCLE_UNDER_TSAN 1
#elif defined(__has_feature)  // Clang
#if __has_feature(thread_sanitizer)
#define AMP_LIFECYCLE_UNDER_TSAN 1
#endif
#endif
#ifdef AMP_LIFECYCLE_UNDER_TSAN
constexpr bool kCheckRss = false;
constexpr int kWarmUpCycles = 5;
constexpr int kCycles = 30;
#else
constexpr bool kCheckRss = true;
constexpr int kWarmUpCycles = 10;
constexpr int kCycles = 100;
#endif
constexpr long kMaxRssGrowthKb = 5 * 1024;

// What a leak shows as, read from /proc/self (Linux only, as is the rest of the app's CI).
struct Resources {
  long rssKb = 0;
  int threads = 0;
  int fds = 0;
  int objects = 0;  // QObjects under the session: windows, widgets, workers, chart items
  int checkpointFiles = 0;  // under the app's checkpoint folder (an opened run's is unpacked there)
};

long vmRssKb() {
  QFile f(QStringLiteral("/proc/self/status"));
  if (!f.open(QIODevice::ReadOnly)) return -1;
  for (const QByteArray& line : f.readAll().split('\n'))
    if (line.startsWith("VmRSS:")) return line.mid(6).trimmed().split(' ').first().toLong();
  return -1;
}

int filesUnder(const QString& dir) {
  int n = 0;
  for (QDirIterator it(dir, QDir::Files, QDirIterator::Subdirectories); it.hasNext(); it.next()) ++n;
  return n;
}

int entries(const char* dir) {
  return int(QDir(QString::fromLatin1(dir)).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::System).size());
}

// What the app's event loop does between two user actions: queued signals, repaints and the
// deleteLater()s (finished workers, the charts' removed series). processEvents() alone never
// runs a deferred delete posted at its own loop level, so without this a cycle's objects would
// pile up until the end and what they fragment would read as growth the app never has.
void settle() {
  for (int i = 0; i < 2; ++i) {
    QCoreApplication::processEvents();
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
  }
}

// QTRY_* polls every 50 ms, a cycle's run takes a few: poll more often, so 100 cycles stay short.
template <class Pred>
bool waitUntil(Pred done, int timeoutMs = 10000) {
  QDeadlineTimer deadline(timeoutMs);
  while (!done()) {
    if (deadline.hasExpired()) return false;
    QTest::qWait(2);
  }
  return true;
}

Resources measure(std::initializer_list<const QObject*> roots) {
  settle();
  malloc_trim(0);  // hand freed heap pages back to the system: RSS then shows what is held
  Resources r;
  r.rssKb = vmRssKb();
  r.threads = entries("/proc/self/task");
  r.fds = entries("/proc/self/fd");  // the listing's own descriptor counts each time alike
  for (const QObject* root : roots) r.objects += int(root->findChildren<QObject*>().size());
  r.checkpointFiles =
      filesUnder(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/checkpoints"));
  return r;
}

QString describe(const Resources& r) {
  return QStringLiteral("RSS %1 kB, %2 threads, %3 fds, %4 objects, %5 checkpoint files")
      .arg(r.rssKb).arg(r.threads).arg(r.fds).arg(r.objects).arg(r.checkpointFiles);
}

// Empty when nothing leaked; otherwise one line per resource that grew.
QString leaks(const Resources& before, const Resources& after) {
  QStringList out;
  if (before.rssKb < 0 || after.rssKb < 0) out << QStringLiteral("VmRSS unreadable");
  if (kCheckRss && after.rssKb - before.rssKb >= kMaxRssGrowthKb)
    out << QStringLiteral("RSS grew by %1 kB (limit %2 kB)").arg(after.rssKb - before.rssKb).arg(kMaxRssGrowthKb);
  // Fewer is fine (an idle pool thread may have expired), more is a thread not joined.
  if (after.threads > before.threads)
    out << QStringLiteral("%1 more threads").arg(after.threads - before.threads);
  if (after.fds > before.fds) out << QStringLiteral("%1 more open fds").arg(after.fds - before.fds);
  // A QObject kept by its parent (a finished worker never deleted, a removed run's chart series)
  // is freed when the session ends: RSS alone would take many cycles to show it.
  if (after.objects > before.objects)
    out << QStringLiteral("%1 more QObjects").arg(after.objects - before.objects);
  // A checkpoint the app unpacked for a run it opened is the app's to delete with the run.
  if (after.checkpointFiles > before.checkpointFiles)
    out << QStringLiteral("%1 more checkpoint files").arg(after.checkpointFiles - before.checkpointFiles);
  if (out.isEmpty()) return {};
  return out.join(QStringLiteral("; ")) + QStringLiteral(" (before: %1; after: %2)").arg(describe(before), describe(after));
}

}  // namespace

class TestLifecycle : public test::SessionFixture {
  Q_OBJECT

 private:
  QTemporaryDir m_tmp;

  Resources measureSession() const { return measure({m_session.get(), window(), controller()}); }

  // Every run selected in the runs panel and deleted (the question answered), as the user
  // removes them ("Archive finished" would keep them).
  void clearFinished() {
    QList<int> ids;
    for (const ui::RunData* r : controller()->runs()) ids << r->id;
    window()->runsPanel()->selectRuns(ids);
    test::answerNextMessageBox(QStringLiteral("Delete"));
    window()->runsPanel()->removeSelectedRuns();
    QCOMPARE(controller()->runs().size(), 0);
  }

  // One run started from the window and stopped through the controller's Stop, then cleared.
  // Even cycles start running (a run far longer than the cycle), odd ones start paused (Step):
  // the two ways a worker thread waits for Stop (between steps, and on the pause condition).
  void startStopCycle(int i) {
    if (i % 2 == 0)
      window()->actions().start->trigger();
    else
      window()->actions().step->trigger();  // nothing active: starts paused, one step
    ui::RunData* run = lastRun();
    QVERIFY(run);
    // A drain on demand: the controller's timer may wait up to a second after a costly redraw.
    QVERIFY(waitUntil([&] {
      controller()->drainNow();
      return run->series.size() >= 1;
    }));
    window()->actions().stop->trigger();
    // Stopped is set in onRunEnded, after it has wait()ed for the worker's thread.
    QVERIFY(waitUntil([&] { return run->status == ui::RunStatus::Stopped; }));
    QCOMPARE(controller()->activeCount(), 0);
    clearFinished();
    settle();
  }

  void openClearCycle(const QString& ampx, int runs) {
    QCOMPARE(m_session->files()->openRuns(ampx), runs);
    QCOMPARE(controller()->runs().size(), runs);
    settle();  // the window lays out and draws what it opened
    clearFinished();
    settle();
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_tmp.isValid());
  }
  void init() { QVERIFY(openSession()); }
  void cleanup() { m_session.reset(); }

  void startStopCyclesLeakNothing() {
    test::apply(panel(), test::tinySpirals(1000000));
    QVERIFY2(panel()->isValid(), qPrintable(panel()->problem()));
    for (int i = 0; i < kWarmUpCycles; ++i) {
      startStopCycle(i);
      if (QTest::currentTestFailed()) return;
    }
    const Resources before = measureSession();
    for (int i = 0; i < kCycles; ++i) {
      startStopCycle(i);
      if (QTest::currentTestFailed()) return;
    }
    const Resources after = measureSession();
    qInfo("start/stop x%d: before %s; after %s", kCycles, qPrintable(describe(before)), qPrintable(describe(after)));
    const QString problem = leaks(before, after);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
  }

  void openCloseCyclesLeakNothing() {
    constexpr int kRuns = 4;
    // Finished runs in three precisions (varied series) and one that wrote checkpoints (the file
    // embeds its last one, which opening unpacks), saved once.
    test::apply(panel(), test::tinySpirals(30));
    window()->actions().twin->trigger();
    RunConfig checkpointed = panel()->config();
    checkpointed.checkpoint.every = 10;  // not in the panel: queued as the window would
    controller()->enqueue(checkpointed);
    QCOMPARE(controller()->runs().size(), kRuns);
    for (const ui::RunData* r : controller()->runs())
      QTRY_COMPARE_WITH_TIMEOUT(r->status, ui::RunStatus::Finished, 30000);
    QVERIFY(!lastRun()->checkpointPath.isEmpty());
    const QString trainedCheckpoints = gui::RunController::checkpointDir(*lastRun());
    const QString ampx = m_tmp.filePath(QStringLiteral("lifecycle.ampx"));
    m_session->files()->saveExperimentFile(ampx);
    clearFinished();
    QVERIFY(QDir(trainedCheckpoints).removeRecursively());

    for (int i = 0; i < kWarmUpCycles; ++i) {
      openClearCycle(ampx, kRuns);
      if (QTest::currentTestFailed()) return;
    }
    const Resources before = measureSession();
    for (int i = 0; i < kCycles; ++i) {
      openClearCycle(ampx, kRuns);
      if (QTest::currentTestFailed()) return;
    }
    const Resources after = measureSession();
    qInfo("open/clear x%d: before %s; after %s", kCycles, qPrintable(describe(before)), qPrintable(describe(after)));
    const QString problem = leaks(before, after);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
  }
};

QTEST_MAIN(TestLifecycle)
#include "tst_lifecycle.moc"
