// Fair timing for runs compared for speed (issue 38): they train in turn, a block of steps each,
// and their speed is compared block by block.
//
// A lesson's variants used to train one after another, so a build, a browser tab or a video call
// that started between two of them became a "speed-up" of one precision over another; run side
// by side, they shared the cores and each one's step time measured the other's too. In turns
// (A's block, B's block, C's block, A's block, ...) only one trains at a time, with the whole of
// the run's CPU share, and a change of load falls on neighbouring blocks of every run alike.
// The ratio of two runs' step times is then taken per round of blocks (A's block r against B's
// block r, timed seconds apart) and the rounds must agree before the speed says anything.
//
// While a run holds the turn the machine is its own: runs that take turns count as one where the
// CPUs are shared between runs training at once (the app's "Max concurrent").
//
// StepTurns is the token the runs share (thread-safe: one training thread per run in the app,
// one per variant in the CLI); pairedSpeed() the comparison, fed step times, with the rule that
// says "too noisy to conclude". No Qt and no clock here, so both are tested with fed values.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace amp {

class StepTurns {
 public:
  // `runs` runs take turns, `blockSteps` steps each (at least 1), run 0 first.
  StepTurns(int runs, int blockSteps);

  // `run` is ready to train (its trainer is built: data read, model made). No turn is taken
  // before every run still in the rotation is ready, so that the first blocks are not timed
  // beside another run's set-up.
  void ready(int run);
  // Blocks until it is `run`'s turn, or until stop() says to give up (polled every
  // `pollMs` milliseconds: a paused or cancelled run must not wait for the others' blocks).
  // True when the turn is `run`'s, false when stop() said to give up or `run` has left.
  bool waitTurn(int run, const std::function<bool()>& stop = {}, int pollMs = 20);
  // `run` trained one step of its turn; after blockSteps of them the turn passes on.
  void stepDone(int run);
  // `run` steps out (it pauses): it passes the turn if it holds it, and the turn goes round
  // without it until it next waits for one (a paused run that the rotation reached would hold
  // up the others for as long as it stays paused).
  void pass(int run);
  // `run` ended (finished, stopped, failed): it leaves the rotation for good, passing its turn.
  void leave(int run);

  int blockSteps() const { return m_blockSteps; }
  int current() const;  // whose turn it is; -1 once every run has left

  // The block size for runs of `steps` steps: about 8 rounds of blocks, 1 to 25 steps each, so
  // that the comparison has rounds to agree or disagree while a turn is long enough to warm up.
  static int blockStepsFor(std::int64_t steps);

 private:
  void passLocked();  // the next run still in the rotation gets the turn
  bool allReadyLocked() const;

  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  std::vector<bool> m_left, m_ready, m_away;
  int m_blockSteps;
  int m_current = 0;
  int m_stepsInBlock = 0;
};

// One run's speed against a baseline's, round by round of turns.
struct PairedSpeed {
  int rounds = 0;          // rounds both runs have a timed block in
  double ratio = 0;        // median of the rounds' ratios: baseline ms / run ms (2 = twice as fast)
  double low = 0, high = 0;  // the rounds' ratios: lower and upper quartile
  bool noisy = true;       // the rounds disagree (see pairedSpeed): no speed verdict
};

// The rounds must agree: fewer than kMinRounds rounds, quartiles further apart than
// kMaxSpread (the upper one more than 1.5 times the lower), or quartiles on both sides of
// `threshold` (the speed-up the verdict asks for; 1 = "faster at all") are too noisy to conclude.
constexpr int kMinPairedRounds = 3;
constexpr double kMaxPairedSpread = 1.5;

// stepMs: each run's step times, step 1 first, as trained in turns of `blockSteps` steps (round
// r holds steps r*blockSteps+1 .. (r+1)*blockSteps). Steps up to `warmup` are left out (the
// first steps set up caches and kernels), and each block counts by its median step time.
PairedSpeed pairedSpeed(const std::vector<double>& baselineMs, const std::vector<double>& runMs,
                        int blockSteps, double threshold = 1.0, int warmup = 3);

// Why a speed ratio says nothing (SpeedRatio::noise), in the order the rule looks.
enum class SpeedNoise {
  None,            // the figures agree: the ratio stands
  TooFew,          // fewer than kMinPairedRounds rounds (paired) or timed steps (either run)
  Spread,          // paired: the rounds' ratios' quartiles more than kMaxPairedSpread apart
  BaselineSpread,  // not paired: the baseline's own step times' quartiles that far apart
  RunSpread,       // not paired: the run's own step times' quartiles that far apart
  Straddles,       // the quartiles (paired) or the range they give (not) on both sides of the threshold
};

// One run's speed against a baseline's as every table and chart states it (the runs table's
// Speed-up column, the throughput chart's legend; issue 38: a bare ratio of medians read
// "fp16 421x fp32" on a shared machine).
//
// Runs that trained in turns with each other are compared round by round: pairedSpeed, its
// rule unchanged. Other runs (one after another, side by side, loaded from files) have no rounds
// to pair, so they are compared by their median step times (the ms/step column's: the first
// `warmup` steps left out where a run has more than twice that many), and the same rule is put
// to what they have: too noisy to conclude when
//   - either run has fewer than kMinPairedRounds timed steps,
//   - either run's own step times have quartiles more than kMaxPairedSpread apart (the load
//     moved while it trained), or
//   - the range the quartiles allow, from the baseline's lower quartile over the run's upper one
//     to the baseline's upper over the run's lower, lies on both sides of `threshold`.
// What no rule on the figures sees is a load that changed between two steady runs timed one
// after another: only turns catch that, which is why `paired` says how the ratio was taken.
struct SpeedRatio {
  bool paired = false;       // round by round of turns (else the medians' ratio)
  int samples = 0;           // paired: the rounds; else the fewer timed steps of the two runs
  double ratio = 0;          // baseline ms / run ms (2 = twice as fast); 0: not measured
  double low = 0, high = 0;  // paired: the rounds' quartiles; else the range from the quartiles
  // Not paired: each run's upper quartile step time over its lower one (1 = steady).
  double baselineSpread = 0, runSpread = 0;
  SpeedNoise noise = SpeedNoise::TooFew;
  bool noisy() const { return noise != SpeedNoise::None; }
};

// turnBlockSteps: the block of steps both runs trained in turns with (the same rotation), 0 when
// they did not take turns with each other.
SpeedRatio speedRatio(const std::vector<double>& baselineMs, const std::vector<double>& runMs,
                      int turnBlockSteps, double threshold = 1.0, int warmup = 3);

}  // namespace amp
