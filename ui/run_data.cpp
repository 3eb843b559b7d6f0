#include "ui/run_data.h"

#include <QHash>

namespace amp::ui {

QString runStatusName(RunStatus s) {
  switch (s) {
    case RunStatus::Queued: return QStringLiteral("queued");
    case RunStatus::Running: return QStringLiteral("running");
    case RunStatus::Paused: return QStringLiteral("paused");
    case RunStatus::Finished: return QStringLiteral("finished");
    case RunStatus::Stopped: return QStringLiteral("stopped");
    case RunStatus::Diverged: return QStringLiteral("diverged");
    case RunStatus::Failed: return QStringLiteral("failed");
  }
  return {};
}

void RunData::loadRecord(const RunRecord& r) {
  name = r.name.isEmpty() ? QString::fromStdString(r.config.displayName()) : r.name;
  config = r.config;
  totalSteps = r.config.train.steps > 0 ? r.config.train.steps
                                        : (r.steps.empty() ? 0 : r.steps.back().step);
  status = r.status == QStringLiteral("diverged") ? RunStatus::Diverged
           : r.status == QStringLiteral("stopped") || r.status == QStringLiteral("running")
               ? RunStatus::Stopped
           : r.status == QStringLiteral("failed") ? RunStatus::Failed
                                                   : RunStatus::Finished;
  for (const StepMetrics& m : r.steps) append(m);
  // Histograms are stored apart from the steps; each frame shows the scale its step used.
  QHash<qint64, float> scaleAt;
  for (const StepMetrics& m : r.steps) scaleAt.insert(m.step, m.scale);
  for (const auto& [step, h] : r.histograms) {
    if (histograms.empty() || histograms.back().step != step)
      histograms.push_back({step, scaleAt.value(step, 1.0f), {}});
    histograms.back().records.push_back(h);
  }
  events = r.events;
  checkpointPath = r.checkpointPath;
  // The model files' sizes, where the run's summary measured them (compare, checkpoint.at_end,
  // or the app itself).
  checkpointBytes = static_cast<std::int64_t>(r.summary.value("checkpoint_bytes").toDouble());
  weightsBytes = static_cast<std::int64_t>(r.summary.value("weights_bytes").toDouble());
  weightsDtype = r.summary.value("weights_dtype").toString();
  computePath = r.summary.value("compute_path").toString();
  for (const char* k : {"source", "imported_scalars"})
    if (r.summary.contains(k)) external[k] = r.summary[k];
  group = r.group;
  tags = r.tags;
  note = r.note;
}

void RunData::append(const StepMetrics& m) {
  const double s = double(m.step);
  series.step.append(s);
  series.loss.append(m.loss);
  series.scale.append(m.scale);
  series.growthTracker.append(m.growthTracker);
  series.gradNorm.append(m.gradNorm);
  series.lr.append(m.lr);
  series.stepMs.append(m.stepMs);
  series.samplesPerS.append(m.samplesPerS);
  series.lostUpdateFrac.append(m.lostUpdateFrac);
  series.wallS.append((series.wallS.isEmpty() ? 0.0 : series.wallS.last()) + m.stepMs / 1000.0);
  // Epochs completed at the end of the step; without the epoch length, whole epochs only.
  series.epoch.append(batchesPerEpoch > 0 ? s / double(batchesPerEpoch) : m.epoch + (m.epochEnd ? 1.0 : 0.0));
  if (m.skipped) {
    series.skippedStep.append(s);
    series.skippedScale.append(m.scale);
  }
  // An evaluation with a loss, an accuracy or both (a TensorBoard log may have the accuracy
  // alone: the table showed it, the accuracy chart did not).
  if (m.testLoss || m.testAcc) {
    series.testStep.append(s);
    series.testLoss.append(m.testLoss ? *m.testLoss : qQNaN());
    series.testAcc.append(m.testAcc ? *m.testAcc : qQNaN());
  }
  for (int i = 0; i < kMemCategoryCount; ++i) {
    series.memCurrent[i].append(double(m.memory.current[i]));
    series.memPeak[i].append(double(m.memory.peak[i]));
  }
  if (m.memory.deviceTotal > 0) {
    series.deviceTotal = double(m.memory.deviceTotal);
    series.deviceFree = double(m.memory.deviceFree);
  }
  if (!m.histograms.empty()) histograms.push_back({m.step, m.scale, m.histograms});
  summary.add(m);
  steps.push_back(m);
  steps.back().histograms.clear();  // kept once, in `histograms`
}

}  // namespace amp::ui
