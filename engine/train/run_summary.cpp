#include "engine/train/run_summary.h"

#include <algorithm>

namespace amp {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void RunSummaryBuilder::add(const StepMetrics& m) {
  // An epoch's time is complete at its last batch (the run's last epoch included; a run that
  // stops mid-epoch reports only whole epochs). Metrics read back from metrics.jsonl (a resumed
  // run's history) carry no end marks: there a change of epoch closes the previous one.
  if (m.epoch != m_epoch && m_epochAccum > 0) {
    m_s.epochSeconds.push_back(m_epochAccum / 1e3);
    m_epochAccum = 0;
  }
  m_epoch = m.epoch;
  m_epochAccum += m.stepMs;
  if (m.epochEnd) {
    m_s.epochSeconds.push_back(m_epochAccum / 1e3);
    m_epochAccum = 0;
  }
  m_s.steps = m.step;
  m_stepMs.push_back(m.stepMs);
  m_samples.push_back(m.samplesPerS);
  m_gflops.push_back(m.gemmGflops);
  m_allreduceMs.push_back(m.allreduceMs);
  m_s.ranks = std::max(m_s.ranks, m.ranks);
  m_lastLosses.push_back(m.loss);
  if (m_lastLosses.size() > 10) m_lastLosses.erase(m_lastLosses.begin());
  if (m.skipped) {
    ++m_s.skippedSteps;
    if (m_s.skippedAt.size() < 1000) m_s.skippedAt.push_back(m.step);
  }
  m_s.finalScale = m.scaleAfter;
  if (m.testLoss) m_s.finalTestLoss = m.testLoss;
  if (m.testAcc) m_s.finalTestAcc = m.testAcc;
  for (int i = 0; i < kMemCategoryCount; ++i)
    m_s.peakMemory.peak[i] = std::max(m_s.peakMemory.peak[i], m.memory.peak[i]);
  m_s.peakMemory.totalPeak = std::max(m_s.peakMemory.totalPeak, m.memory.totalPeak);
  m_s.peakMemory.current = m.memory.current;
  m_s.peakMemory.totalCurrent = m.memory.totalCurrent;
  m_s.peakMemory.deviceTotal = m.memory.deviceTotal;
  m_s.peakMemory.deviceFree = m.memory.deviceFree;
  m_lostSum += m.lostUpdateFrac;
  if (m.diverged) {
    m_s.status = "diverged";
    m_s.divergence = m.divergence;
  }
}

RunSummary RunSummaryBuilder::summary() const {
  RunSummary s = m_s;
  auto tail = [](const std::vector<double>& v) {
    // Skip warm-up steps (primitive creation, first allocations) when there are enough.
    return v.size() > 6 ? std::vector<double>(v.begin() + 3, v.end()) : v;
  };
  s.medianStepMs = median(tail(m_stepMs));
  s.medianSamplesPerS = median(tail(m_samples));
  s.medianGemmGflops = median(tail(m_gflops));
  s.medianAllreduceMs = median(tail(m_allreduceMs));
  double sum = 0;
  for (double l : m_lastLosses) sum += l;
  s.finalLoss = m_lastLosses.empty() ? 0 : sum / double(m_lastLosses.size());
  s.meanLostUpdateFrac = s.steps ? m_lostSum / double(s.steps) : 0;
  return s;
}

}  // namespace amp
