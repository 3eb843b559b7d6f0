// Collapses a streak of skipped steps into one event line. A diverged run (lr=1e9) skips every
// step from the second on; a line per step buried everything else in the log. The streak's
// first step keeps its full line (it says why and what the scale did), the steps after it with
// the same cause become one line when the streak ends: "steps 3–150 skipped: non-finite loss".
// A streak of one follow-up keeps that step's own line; injected faults are never collapsed
// (each was asked for, and the overflow lesson's log should show each one).
#pragma once

#include <QString>
#include <QStringList>

#include "engine/train/step_metrics.h"

namespace amp::gui {

class SkipStreak {
 public:
  // The event lines of one step as they should be logged now (possibly with the line that
  // closes the streak before them). `lines` are describeEvents()'s for the step.
  QStringList add(const StepMetrics& m, const QStringList& lines);
  // The run ended: the line of a streak still open ("" lines when none).
  QStringList finish();

  // Why a skipped step was skipped, in the words of the collapsed line.
  static QString cause(const StepMetrics& m);

 private:
  QStringList close();

  QString m_cause;            // of the open streak; empty: none
  std::int64_t m_first = 0;   // first collapsed step (the one after the streak's full line)
  std::int64_t m_last = 0;
  QStringList m_heldLines;    // the single follow-up's own lines, if the streak stays that short
  float m_scaleFrom = 1, m_scaleTo = 1;
};

}  // namespace amp::gui
