#include "ui/run_data.h"

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
  if (m.skipped) {
    series.skippedStep.append(s);
    series.skippedScale.append(m.scale);
  }
  if (m.testLoss) {
    series.testStep.append(s);
    series.testLoss.append(*m.testLoss);
    series.testAcc.append(m.testAcc ? *m.testAcc : qQNaN());
  }
  for (int i = 0; i < kMemCategoryCount; ++i) {
    series.memCurrent[i].append(double(m.memory.current[i]));
    series.memPeak[i].append(double(m.memory.peak[i]));
  }
  if (!m.histograms.empty()) histograms.push_back({m.step, m.scale, m.histograms});
  summary.add(m);
  steps.push_back(m);
  steps.back().histograms.clear();  // kept once, in `histograms`
}

}  // namespace amp::ui
