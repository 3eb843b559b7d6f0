#include "app/gui_lesson_speed.h"

#include <QCoreApplication>
#include <vector>

#include "engine/train/speed_turns.h"
#include "ui/run_data.h"

namespace amp::gui {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("LessonConclusion", text); }

QString times(double q) { return QStringLiteral("%1x").arg(q, 0, 'f', 2); }

}  // namespace

SpeedFigure speedAgainst(const ui::RunData& run, const ui::RunData* fp32, int turnBlockSteps, double threshold) {
  SpeedFigure s;
  if (!fp32 || &run == fp32) return s;
  if (turnBlockSteps > 0) {
    const std::vector<double> base(fp32->series.stepMs.begin(), fp32->series.stepMs.end());
    const std::vector<double> own(run.series.stepMs.begin(), run.series.stepMs.end());
    const PairedSpeed p = pairedSpeed(base, own, turnBlockSteps, threshold);
    s.paired = true;
    s.rounds = p.rounds;
    s.ratio = p.ratio;
    s.low = p.low;
    s.high = p.high;
    s.noisy = p.noisy;
    return s;
  }
  const double b = fp32->summary.summary().medianStepMs, own = run.summary.summary().medianStepMs;
  s.ratio = b > 0 && own > 0 ? b / own : 0;
  return s;
}

QString speedText(const SpeedFigure& s) {
  if (!s.paired) return tr("%1 fp32's speed").arg(times(s.ratio));
  return tr("%1 fp32's speed, rounds %2-%3").arg(times(s.ratio), times(s.low), times(s.high));
}

}  // namespace amp::gui
