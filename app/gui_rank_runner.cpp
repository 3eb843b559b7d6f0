// TrainingWorker::runOnRanks: a data-parallel run in the app. The ranks are processes of their
// own (Open MPI's mpirun starts `ampstudio-cli run`, as a user would); this thread starts them,
// follows the folder rank 0 writes, and feeds each new whole line to the charts. The facts the
// charts need before the first step (total steps, steps per epoch, the model, a test set) come
// from a Trainer built here and dropped before the ranks start, so nothing is guessed.
#include <signal.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <map>
#include <utility>

#include "app/gui_training_worker.h"
#include "engine/dist/mpirun_command.h"
#include "engine/io/checkpoint.h"
#include "engine/io/config_json.h"
#include "engine/io/metrics_json.h"
#include "engine/io/run_record.h"
#include "engine/train/trainer.h"

namespace amp::gui {

namespace {

// New whole lines of a file that grows (a run's JSON lines): the bytes after `offset` up to the
// last newline; a line still being written waits for the next read.
QList<QByteArray> newLines(const QString& path, qint64& offset) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly) || !f.seek(offset)) return {};
  const QByteArray data = f.readAll();
  const qsizetype end = data.lastIndexOf('\n');
  if (end < 0) return {};
  offset += end + 1;
  QList<QByteArray> lines = data.left(end).split('\n');
  lines.removeIf([](const QByteArray& l) { return l.trimmed().isEmpty(); });
  return lines;
}

QString lastLine(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
  return lines.isEmpty() ? QString() : QString::fromUtf8(lines.back()).trimmed();
}

}  // namespace

void TrainingWorker::runOnRanks() {
  // Destroyed last, after the trainer and every signal emitted below (see m_runReturned).
  MarkReturned markReturned{this};
  const int ranks = m_config.dist.ranks;
  const QString mpirun = QString::fromStdString(findMpirun());
  const QString cli = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("ampstudio-cli"));
  if (mpirun.isEmpty()) {
    emit runEnded(int(RunOutcome::Failed),
                  tr("%1 ranks need Open MPI's mpirun, which is not installed (apt-get install openmpi-bin); "
                     "set Ranks to 1 to train in this process").arg(ranks));
    return;
  }
  if (!QFileInfo(cli).isExecutable()) {
    emit runEnded(int(RunOutcome::Failed), tr("%1: not found; the ranks run ampstudio-cli from the app's own folder").arg(cli));
    return;
  }
  if (!m_resumeFrom.isEmpty()) {
    emit runEnded(int(RunOutcome::Failed), tr("resuming a run on %1 ranks from the app is not supported: "
                                              "ampstudio-cli run --resume CKPT --ranks %1 does it").arg(ranks));
    return;
  }
  qint64 totalSteps = 0, stepsPerEpoch = 1;
  QStringList summary;
  QString computePath, backendName;
  try {
    Trainer t(m_config);  // validates the config and tells the charts what to expect
    const DType compute = m_config.computeDtype();
    backendName = QString::fromStdString(t.backend().name());
    computePath = QString::fromStdString(std::string(dtypeName(compute)) + " " + t.backend().computePath(compute));
    totalSteps = t.totalSteps();
    stepsPerEpoch = std::max<qint64>(1, t.batchesPerEpoch() / std::max(1, m_config.train.accumulation));
    for (const auto& line : t.modelSummary()) summary << QString::fromStdString(line);
    emit testSetKnown(t.hasTestSet());
  } catch (const std::exception& e) {
    emit runEnded(int(RunOutcome::Failed), QString::fromStdString(e.what()));
    return;
  }
  // The ranks' folder: beside the run's checkpoints (kept with the run, deleted with it), or a
  // temporary one.
  QTemporaryDir tmp;
  const QString base = !m_checkpointDir.isEmpty() ? m_checkpointDir : tmp.path();
  const QString dir = QDir(base).filePath(QStringLiteral("ranks"));
  QDir(dir).removeRecursively();
  if (!QDir().mkpath(dir)) {
    emit runEnded(int(RunOutcome::Failed), tr("%1: cannot create the ranks' folder").arg(dir));
    return;
  }
  RunConfig config = m_config;
  if (m_keepFinalState) config.checkpoint.atEnd = true;  // Export weights and Resume work for it too
  const QString configPath = QDir(dir).filePath(QStringLiteral("ranks-config.json"));
  try {
    writeFileAtomically(configPath, QJsonDocument(configToJson(config)).toJson());
  } catch (const std::exception& e) {
    emit runEnded(int(RunOutcome::Failed), QString::fromStdString(e.what()));
    return;
  }
  const QString out = QDir(dir).filePath(QStringLiteral("run"));
  QStringList args;
  const std::vector<std::string> command = mpirunCommand(mpirun.toStdString(), ranks);
  for (std::size_t i = 1; i < command.size(); ++i) args << QString::fromStdString(command[i]);
  args << cli << QStringLiteral("run") << configPath << QStringLiteral("--out") << out << QStringLiteral("--quiet");
  QProcess proc;
  proc.setProgram(mpirun);
  proc.setArguments(args);
  proc.setStandardOutputFile(QProcess::nullDevice());
  const QString stderrPath = QDir(dir).filePath(QStringLiteral("ranks-stderr.log"));
  proc.setStandardErrorFile(stderrPath);
  proc.start();
  if (!proc.waitForStarted(10000)) {
    emit runEnded(int(RunOutcome::Failed), tr("could not start %1: %2").arg(mpirun, proc.errorString()));
    return;
  }
  emit runStarted(totalSteps, stepsPerEpoch, backendName,
                  tr("%1 ranks through Open MPI (mpirun), each on its shard of every batch").arg(ranks),
                  computePath, summary);

  qint64 metricsAt = 0, histogramsAt = 0;
  std::map<std::int64_t, std::vector<HistogramRecord>> histograms;  // by step, until its line comes
  std::string divergence;
  auto follow = [&] {
    for (const QByteArray& line : newLines(QDir(out).filePath(kRunHistogramsFile), histogramsAt)) {
      const QJsonObject o = QJsonDocument::fromJson(line).object();
      try {
        histograms[o["step"].toInteger()].push_back(histogramFromJson(o));
      } catch (const std::exception&) {
        // A histogram the reader refuses is left out; the step's scalars still come.
      }
    }
    bool signal = false;
    for (const QByteArray& line : newLines(QDir(out).filePath(kRunMetricsFile), metricsAt)) {
      StepMetrics m = stepMetricsFromJson(QJsonDocument::fromJson(line).object());
      if (auto it = histograms.find(m.step); it != histograms.end()) {
        m.histograms = std::move(it->second);
        histograms.erase(it);
      }
      if (m.diverged && divergence.empty()) divergence = m.divergence;
      m_metricsJsonl += line + '\n';
      signal |= m_buffer.push(std::move(m));
    }
    if (signal) emit metricsReady();
  };
  while (!proc.waitForFinished(100)) {
    follow();
    if (cancelled()) {
      // mpirun passes SIGTERM on to the ranks; rank 0's lines so far stay whole (each written
      // whole), and the charts keep them.
      ::kill(pid_t(proc.processId()), SIGTERM);
      if (!proc.waitForFinished(10000)) proc.kill();
      follow();
      emit runEnded(int(RunOutcome::Stopped), {});
      return;
    }
  }
  follow();
  const int code = proc.exitStatus() == QProcess::NormalExit ? proc.exitCode() : -1;
  if (code != 0 && code != 1) {
    // The ranks' own one-line reason where there is one ("ampstudio-cli run: ..."), else mpirun's
    // line naming the rank that died ("mpirun noticed that process rank 1 ... exited on signal 9").
    QString why;
    QFile f(stderrPath);
    if (f.open(QIODevice::ReadOnly))
      for (const QByteArray& l : f.readAll().split('\n'))
        if (l.startsWith("ampstudio-cli") || l.startsWith("rank ") || l.startsWith("mpirun noticed"))
          why = QString::fromUtf8(l).trimmed();
    if (why.isEmpty()) why = lastLine(stderrPath);
    emit runEnded(int(RunOutcome::Failed), tr("the %1 ranks ended with exit code %2: %3").arg(ranks).arg(code).arg(why));
    return;
  }
  const QString finalState = QDir(out).filePath(QStringLiteral("checkpoints/") + checkpointFileName(totalSteps));
  if (m_keepFinalState && QFileInfo::exists(finalState)) emit finalStateKept(finalState);
  if (code == 1 || !divergence.empty())
    emit runEnded(int(RunOutcome::Diverged), QString::fromStdString(divergence));
  else
    emit runEnded(int(RunOutcome::Finished), ranksReport(out));
}

// One line for the event log from rank 0's summary.json and last step: whether the replicas are
// identical, each rank's throughput, and the all-reduce's share of the step.
QString TrainingWorker::ranksReport(const QString& out) {
  QJsonObject s;
  try {
    s = QJsonDocument::fromJson(readFileBytes(QDir(out).filePath(kRunSummaryFile))).object();
  } catch (const std::exception&) {
    return {};
  }
  QStringList perRank;
  QFile metrics(QDir(out).filePath(kRunMetricsFile));
  if (metrics.open(QIODevice::ReadOnly)) {
    const QList<QByteArray> lines = metrics.readAll().trimmed().split('\n');
    const QJsonArray per = QJsonDocument::fromJson(lines.back()).object()["rank_samples_per_s"].toArray();
    for (qsizetype r = 0; r < per.size(); ++r)
      perRank << tr("rank %1 %2/s").arg(r).arg(QString::number(per[r].toDouble(), 'g', 3));
  }
  return tr("%1: replicas %2 at the end; last step %3; all-reduce %4 ms of a step (%5%)")
      .arg(s["distributed"].toString(), s["ranks_identical"].toBool() ? tr("identical") : tr("DIFFERENT"),
           perRank.join(QStringLiteral(", ")), QString::number(s["median_allreduce_ms"].toDouble(), 'g', 3))
      .arg(QString::number(100 * s["allreduce_share"].toDouble(), 'f', 0));
}

}  // namespace amp::gui
