#include "engine/train/speed_turns.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/train/run_summary.h"  // median

namespace amp {

StepTurns::StepTurns(int runs, int blockSteps)
    : m_left(std::size_t(std::max(runs, 0)), false), m_ready(m_left.size(), false), m_away(m_left.size(), false), m_blockSteps(std::max(blockSteps, 1)),
      m_current(runs > 0 ? 0 : -1) {}

int StepTurns::blockStepsFor(std::int64_t steps) {
  return int(std::clamp<std::int64_t>(steps / 8, 1, 25));
}

int StepTurns::current() const {
  std::lock_guard lock(m_mutex);
  return m_current;
}

void StepTurns::ready(int run) {
  std::lock_guard lock(m_mutex);
  if (run < 0 || std::size_t(run) >= m_ready.size()) return;
  m_ready[std::size_t(run)] = true;
  m_changed.notify_all();
}

bool StepTurns::allReadyLocked() const {
  for (std::size_t i = 0; i < m_left.size(); ++i)
    if (!m_left[i] && !m_ready[i]) return false;
  return true;
}

bool StepTurns::waitTurn(int run, const std::function<bool()>& stop, int pollMs) {
  std::unique_lock lock(m_mutex);
  if (run < 0 || std::size_t(run) >= m_left.size() || m_left[std::size_t(run)]) return false;
  m_away[std::size_t(run)] = false;  // back in the rotation
  for (;;) {
    if (m_left[std::size_t(run)]) return false;
    // The holder stepped out while every other run had too: the first one back takes the turn.
    if (m_current >= 0 && m_current != run && m_away[std::size_t(m_current)]) {
      m_current = run;
      m_stepsInBlock = 0;
    }
    if (m_current == run && allReadyLocked()) return true;
    if (stop) {
      // The caller's own stop condition (cancel, pause) is not ours to be notified of: poll it,
      // outside the lock (it takes the caller's).
      lock.unlock();
      const bool giveUp = stop();
      lock.lock();
      if (giveUp) return false;
      if (m_current == run && allReadyLocked()) continue;
    }
    m_changed.wait_for(lock, std::chrono::milliseconds(std::max(pollMs, 1)));
  }
}

void StepTurns::passLocked() {
  m_stepsInBlock = 0;
  const int n = int(m_left.size());
  // The next run that takes turns; one that stepped out only when every run has (the first to
  // come back then takes the turn from it: waitTurn).
  for (const bool skipAway : {true, false})
    for (int i = 1; i <= n; ++i) {
      const std::size_t next = std::size_t((m_current + i) % n);
      if (!m_left[next] && !(skipAway && m_away[next])) {
        m_current = int(next);
        m_changed.notify_all();
        return;
      }
    }
  m_current = -1;  // everyone has left
  m_changed.notify_all();
}

void StepTurns::stepDone(int run) {
  std::lock_guard lock(m_mutex);
  if (run != m_current) return;
  if (++m_stepsInBlock >= m_blockSteps) passLocked();
}

void StepTurns::pass(int run) {
  std::lock_guard lock(m_mutex);
  if (run < 0 || std::size_t(run) >= m_away.size()) return;
  m_away[std::size_t(run)] = true;
  if (run == m_current) passLocked();
}

void StepTurns::leave(int run) {
  std::lock_guard lock(m_mutex);
  if (run < 0 || std::size_t(run) >= m_left.size() || m_left[std::size_t(run)]) return;
  m_left[std::size_t(run)] = true;
  if (run == m_current) passLocked();
  m_changed.notify_all();  // the others may have waited for this one to be ready
}

namespace {

// The median step time of each round's block, warm-up steps left out; NaN where a round has no
// timed step (the run ended before it, or its block was all warm-up).
std::vector<double> blockMedians(const std::vector<double>& stepMs, int blockSteps, int warmup) {
  std::vector<double> out;
  for (std::size_t begin = 0; begin < stepMs.size(); begin += std::size_t(blockSteps)) {
    std::vector<double> block;
    for (std::size_t i = begin; i < std::min(stepMs.size(), begin + std::size_t(blockSteps)); ++i)
      if (int(i) >= warmup && stepMs[i] > 0 && std::isfinite(stepMs[i])) block.push_back(stepMs[i]);
    out.push_back(block.empty() ? std::nan("") : median(block));
  }
  return out;
}

// The q-quantile of sorted values, linearly interpolated (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * double(sorted.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos)), hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

// The rule on a ratio's quartiles, paired or not: `samples` rounds (or timed steps), the
// quartiles `low` and `high`.
SpeedNoise quartileNoise(int samples, double low, double high, double threshold) {
  if (samples < kMinPairedRounds) return SpeedNoise::TooFew;
  if (high > kMaxPairedSpread * low) return SpeedNoise::Spread;
  if (low < threshold && high >= threshold) return SpeedNoise::Straddles;
  return SpeedNoise::None;
}

// A run's timed step times, sorted: those the ms/step column's median takes (RunSummary: the
// first `warmup` left out where there are more than twice as many), less unmeasured ones.
std::vector<double> timedSteps(const std::vector<double>& stepMs, int warmup) {
  const std::size_t skip = stepMs.size() > 2 * std::size_t(std::max(warmup, 0)) ? std::size_t(std::max(warmup, 0)) : 0;
  std::vector<double> out;
  for (std::size_t i = skip; i < stepMs.size(); ++i)
    if (stepMs[i] > 0 && std::isfinite(stepMs[i])) out.push_back(stepMs[i]);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

PairedSpeed pairedSpeed(const std::vector<double>& baselineMs, const std::vector<double>& runMs,
                        int blockSteps, double threshold, int warmup) {
  const int k = std::max(blockSteps, 1);
  const std::vector<double> base = blockMedians(baselineMs, k, warmup), own = blockMedians(runMs, k, warmup);
  std::vector<double> ratios;
  for (std::size_t r = 0; r < std::min(base.size(), own.size()); ++r)
    if (std::isfinite(base[r]) && std::isfinite(own[r])) ratios.push_back(base[r] / own[r]);
  PairedSpeed out;
  out.rounds = int(ratios.size());
  if (ratios.empty()) return out;
  std::sort(ratios.begin(), ratios.end());
  out.ratio = quantile(ratios, 0.5);
  out.low = quantile(ratios, 0.25);
  out.high = quantile(ratios, 0.75);
  out.noisy = quartileNoise(out.rounds, out.low, out.high, threshold) != SpeedNoise::None;
  return out;
}

SpeedRatio speedRatio(const std::vector<double>& baselineMs, const std::vector<double>& runMs, int turnBlockSteps,
                      double threshold, int warmup) {
  SpeedRatio out;
  if (turnBlockSteps > 0) {
    const PairedSpeed p = pairedSpeed(baselineMs, runMs, turnBlockSteps, threshold, warmup);
    out.paired = true;
    out.samples = p.rounds;
    out.ratio = p.ratio;
    out.low = p.low;
    out.high = p.high;
    out.noise = quartileNoise(p.rounds, p.low, p.high, threshold);
    return out;
  }
  const std::vector<double> base = timedSteps(baselineMs, warmup), own = timedSteps(runMs, warmup);
  out.samples = int(std::min(base.size(), own.size()));
  if (base.empty() || own.empty()) return out;  // not measured: ratio 0, too few
  out.ratio = quantile(base, 0.5) / quantile(own, 0.5);
  const double b1 = quantile(base, 0.25), b3 = quantile(base, 0.75);
  const double r1 = quantile(own, 0.25), r3 = quantile(own, 0.75);
  out.low = b1 / r3;
  out.high = b3 / r1;
  out.baselineSpread = b3 / b1;
  out.runSpread = r3 / r1;
  if (out.samples < kMinPairedRounds) out.noise = SpeedNoise::TooFew;
  else if (out.baselineSpread > kMaxPairedSpread) out.noise = SpeedNoise::BaselineSpread;
  else if (out.runSpread > kMaxPairedSpread) out.noise = SpeedNoise::RunSpread;
  else if (out.low < threshold && out.high >= threshold) out.noise = SpeedNoise::Straddles;
  else out.noise = SpeedNoise::None;
  return out;
}

}  // namespace amp
