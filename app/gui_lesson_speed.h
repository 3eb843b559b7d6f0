// A lesson run's speed against fp32's, as its conclusion states it. Runs that trained in turns
// (a lesson's variants in the app: engine/train/speed_turns.h) are compared round by round of
// blocks, and a comparison whose rounds disagree says so instead of a speed-up; runs that
// trained one after another (loaded from files) compare their median step times, which a
// change of load between them can move.
#pragma once

#include <QString>

namespace amp::ui {
struct RunData;
}

namespace amp::gui {

struct SpeedFigure {
  double ratio = 0;        // fp32's step time over the run's (1.8 = 1.8x fp32's speed); 0: not measured
  bool paired = false;     // from rounds of turns
  int rounds = 0;          // paired: the rounds both runs have a timed block in
  double low = 0, high = 0;  // paired: the rounds' ratios, lower and upper quartile
  bool noisy = false;      // paired, and the rounds disagree (speed_turns.h's rule): no verdict
};

// `run` against `fp32` (0 ratio for fp32 itself, or where either has no timed step).
// turnBlockSteps: the block the runs trained in turns with, 0 when they did not. threshold: the
// speed-up the verdict asks for, which the rounds must not straddle.
SpeedFigure speedAgainst(const ui::RunData& run, const ui::RunData* fp32, int turnBlockSteps,
                         double threshold = 1.0);

// "1.82x fp32's speed", and for paired figures the rounds' quartiles: "1.82x fp32's speed,
// rounds 1.75x-1.90x".
QString speedText(const SpeedFigure& s);

}  // namespace amp::gui
