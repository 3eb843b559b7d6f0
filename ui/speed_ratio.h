// A run's speed against another's as the app shows it: the runs table's Speed-up column and the
// throughput chart's legend say the same figure in the same words (issue 38: on a shared machine
// a bare ratio of medians read "fp16 421x fp32"). The figure and the rule that calls it too
// noisy to conclude are the engine's (engine/train/speed_turns.h: speedRatio); here only which
// runs are paired and how it reads.
#pragma once

#include <QString>

#include "engine/train/speed_turns.h"

namespace amp::ui {

struct RunData;

// The two runs trained in turns with each other (one rotation, one block size).
bool trainedInTurns(const RunData& a, const RunData& b);

// `run`'s speed against `baseline`'s: round by round where they trained in turns, else by their
// median step times with their quartiles (ratio 0 where either has no timed step).
SpeedRatio speedRatioOf(const RunData& run, const RunData& baseline);

// "1.30×", or "~1.3× (noisy)" where the figures are too noisy to conclude; `against` goes after
// the sign ("1.30× fp32", "~1.3× fp32 (noisy)"). Empty when not measured.
QString speedRatioText(const SpeedRatio& s, const QString& against = {});

// How the figure was taken and, when it is noisy, what disagreed and what to do; plain text,
// a sentence a line. `baselineName`: the run it is measured against.
QString speedRatioExplanation(const SpeedRatio& s, const QString& baselineName);

}  // namespace amp::ui
