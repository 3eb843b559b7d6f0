// How many OpenMP threads a CPU training step uses, chosen by timing the steps themselves.
//
// A step is hundreds of parallel loops, each ending at a barrier where the threads wait for the
// slowest of them. On a quiet machine two threads make a GPT step about 1.6x faster than one. On
// a shared one (a build, a video call, another run) one of the two is often descheduled for a
// whole scheduler slice while the other waits at the barrier: measured on 2 vCPUs beside a
// two-job build, the gpt preset's bf16 step took 3,067 ms on two threads and 869 ms on one. No
// fixed count is right for both, and the load changes while a run trains, so the trainer asks
// this tuner before each step and tells it how long the step took:
//
//  - probing: the candidate counts (the run's share of the CPUs, half of it, one) take turns on
//    plain steps, A B A B, so a change of load falls on all of them alike;
//  - then the fastest mean wins (more threads unless fewer are at least 5% faster) and trains
//    until the next probe, which comes after 20 plain steps, then 40, 80, up to 320 while the
//    choice stays the same, and after 2 plain steps in a row 1.5x slower than the winner's probe
//    time (the load rose).
//
// Only plain steps are timed (the caller says which): histogram, trace and warm-up steps do more
// work and run on the current choice. The count it picks limits our own loops only, which give
// the same bits on any count (chunked reductions added in chunk order, attention's matrices one
// per thread); oneDNN's GEMMs keep the run's share throughout, since their K split follows their
// thread count. So a run's numbers never depend on the load (test_step_thread_tuner checks it).
// No OpenMP and no clock here: the trainer feeds the times, so the tests can.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace amp {

class StepThreadTuner {
 public:
  static constexpr int kProbeRounds = 2;        // timed steps per candidate in a probe
  static constexpr int kFirstExploitSteps = 20;  // plain steps on the winner before re-probing
  static constexpr int kMaxExploitSteps = 320;
  static constexpr double kFewerMustBeFaster = 0.95;  // fewer threads win only when >= 5% faster
  static constexpr double kSlowdownToReprobe = 1.5;

  // The threads for the next step, at most `limit` (the run's share of the CPUs; a change of it
  // starts a new probe). `timed`: the step is a plain one whose time record() will compare.
  int next(int limit, bool timed);
  // The step that next() answered took `seconds` on `threads` threads.
  void record(int threads, double seconds, bool timed);

  // Tests: every step on `threads` (at most the limit); 0 tunes again.
  void force(int threads) { m_forced = threads; }

  int current() const { return m_current; }
  bool probing() const { return m_probing; }
  // The last probe's decision in words ("1 thread: 869 ms a step against 3067 ms on 2"), or ""
  // before the first; decisions() counts them, so a caller can report each new one once.
  const std::string& lastDecision() const { return m_lastDecision; }
  std::int64_t decisions() const { return m_decisions; }

  // The counts a probe compares for a limit: the limit, half of it (from 4 up) and 1.
  static std::vector<int> candidatesFor(int limit);

 private:
  void startProbe();
  void decide();

  int m_forced = 0;
  int m_limit = 0;
  int m_current = 0;
  bool m_probing = false;
  std::vector<int> m_candidates;
  std::vector<std::vector<double>> m_samples;  // per candidate
  std::size_t m_turn = 0;                      // probe steps timed so far
  double m_winnerSeconds = 0;                  // the winner's mean in its probe
  int m_exploitLength = kFirstExploitSteps;
  int m_exploited = 0;
  int m_slowInARow = 0;
  std::string m_lastDecision;
  std::int64_t m_decisions = 0;
};

}  // namespace amp
