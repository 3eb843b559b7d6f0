#include "engine/train/step_thread_tuner.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace amp {

std::vector<int> StepThreadTuner::candidatesFor(int limit) {
  limit = std::max(1, limit);
  std::vector<int> c{limit};
  if (limit >= 4) c.push_back(limit / 2);
  if (limit > 1) c.push_back(1);
  return c;
}

int StepThreadTuner::next(int limit, bool timed) {
  limit = std::max(1, limit);
  if (m_forced > 0) return std::min(m_forced, limit);
  if (limit != m_limit) {  // first step, or the share changed (another run started or ended)
    m_limit = limit;
    m_candidates = candidatesFor(limit);
    m_current = limit;
    m_exploitLength = kFirstExploitSteps;
    startProbe();
  }
  if (m_probing && timed) return m_candidates[m_turn % m_candidates.size()];
  return m_current;
}

void StepThreadTuner::startProbe() {
  m_probing = m_candidates.size() > 1;
  m_samples.assign(m_candidates.size(), {});
  m_turn = 0;
  m_exploited = 0;
  m_slowInARow = 0;
}

void StepThreadTuner::record(int threads, double seconds, bool timed) {
  if (!timed || !(seconds >= 0)) return;
  if (m_probing) {
    const std::size_t i = m_turn % m_candidates.size();
    if (threads != m_candidates[i]) return;  // not the step next() planned (limit changed)
    m_samples[i].push_back(seconds);
    if (++m_turn == m_candidates.size() * kProbeRounds) decide();
    return;
  }
  if (threads != m_current || m_candidates.size() < 2) return;
  m_slowInARow = seconds > kSlowdownToReprobe * m_winnerSeconds ? m_slowInARow + 1 : 0;
  if (m_slowInARow >= 2) {  // the load rose: the winner may not be the winner any more
    m_exploitLength = kFirstExploitSteps;
    startProbe();
    return;
  }
  if (++m_exploited >= m_exploitLength) startProbe();
}

void StepThreadTuner::decide() {
  std::vector<double> mean(m_candidates.size());
  for (std::size_t i = 0; i < mean.size(); ++i)
    mean[i] = std::accumulate(m_samples[i].begin(), m_samples[i].end(), 0.0) / double(m_samples[i].size());
  // Candidates run from most threads to fewest: a smaller count must beat the best so far by 5%.
  std::size_t best = 0;
  for (std::size_t i = 1; i < mean.size(); ++i)
    if (mean[i] < kFewerMustBeFaster * mean[best]) best = i;
  const bool same = m_candidates[best] == m_current;
  m_current = m_candidates[best];
  m_winnerSeconds = mean[best];
  m_probing = false;
  m_exploited = 0;
  m_slowInARow = 0;
  // The same answer again: the load is steady, so probe less often.
  m_exploitLength = same && m_decisions > 0 ? std::min(2 * m_exploitLength, kMaxExploitSteps)
                                            : kFirstExploitSteps;
  std::string text = std::to_string(m_current) + (m_current == 1 ? " thread: " : " threads: ");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f ms a step", mean[best] * 1e3);
  text += buf;
  for (std::size_t i = 0; i < mean.size(); ++i) {
    if (i == best) continue;
    std::snprintf(buf, sizeof buf, "%s %.1f ms on %d", i == (best == 0 ? 1u : 0u) ? " against" : ",",
                  mean[i] * 1e3, m_candidates[i]);
    text += buf;
  }
  m_lastDecision = text;
  ++m_decisions;
}

}  // namespace amp
