// Aggregates a run's step metrics into the figures tables show: final loss and accuracy, skipped
// steps, median step time, epoch times, peak memory by category.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/train/step_metrics.h"

namespace amp {

struct RunSummary {
  std::string status = "running";  // running | finished | diverged | stopped | failed
  std::int64_t steps = 0;
  double finalLoss = 0;            // mean of the last min(10, steps) losses
  std::optional<double> finalTestLoss, finalTestAcc;
  std::int64_t skippedSteps = 0;
  std::vector<std::int64_t> skippedAt;  // first 1000
  float finalScale = 1;
  double medianStepMs = 0;         // after the first 3 steps (warm-up)
  double medianSamplesPerS = 0;
  std::vector<double> epochSeconds;  // training time of each completed epoch (no evaluation)
  double medianGemmGflops = 0;
  MemorySnapshot peakMemory;       // per category: max over the run
  double meanLostUpdateFrac = 0;
  // Data-parallel runs (engine/dist): the ranks and the median all-reduce time (with the wait for
  // the slowest rank), after the same warm-up as medianStepMs.
  int ranks = 1;
  double medianAllreduceMs = 0;
  std::string divergence;
  // The model's files at the end (engine/io/model_files.h; 0 = not measured): the resumable
  // checkpoint, and the weights alone in the run's compute dtype (weightsDtype).
  std::int64_t checkpointBytes = 0;
  std::int64_t weightsBytes = 0;
  std::string weightsDtype;
};

class RunSummaryBuilder {
 public:
  void add(const StepMetrics& m);
  RunSummary summary() const;  // the figures so far (sorts the step times: not per step)
  std::int64_t skippedSteps() const { return m_s.skippedSteps; }

 private:
  RunSummary m_s;
  std::vector<double> m_stepMs, m_samples, m_gflops, m_allreduceMs, m_lastLosses;
  double m_epochAccum = 0;
  int m_epoch = 0;
  double m_lostSum = 0;
};

double median(std::vector<double> v);

}  // namespace amp
