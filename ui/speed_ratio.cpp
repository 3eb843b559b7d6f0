#include "ui/speed_ratio.h"

#include <QCoreApplication>
#include <vector>

#include "ui/run_data.h"

namespace amp::ui {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("SpeedRatio", text); }

QString times(double x) { return QStringLiteral("%1×").arg(x, 0, 'f', 2); }

// A noisy figure keeps two significant digits at most: "~1.3×", "~0.36×", "~421×".
QString roughly(double x) {
  const QString digits = x >= 10 ? QString::number(x, 'f', 0) : x >= 1 ? QString::number(x, 'f', 1)
                                                                       : QString::number(x, 'g', 2);
  return QStringLiteral("~%1×").arg(digits);
}

std::vector<double> stepTimes(const RunData& r) {
  return std::vector<double>(r.series.stepMs.begin(), r.series.stepMs.end());
}

}  // namespace

bool trainedInTurns(const RunData& a, const RunData& b) {
  return a.turnSet != 0 && a.turnSet == b.turnSet && a.turnBlockSteps > 0 && a.turnBlockSteps == b.turnBlockSteps;
}

SpeedRatio speedRatioOf(const RunData& run, const RunData& baseline) {
  return speedRatio(stepTimes(baseline), stepTimes(run), trainedInTurns(run, baseline) ? run.turnBlockSteps : 0);
}

QString speedRatioText(const SpeedRatio& s, const QString& against) {
  if (!(s.ratio > 0)) return {};
  if (!s.noisy()) return times(s.ratio) + against;
  return roughly(s.ratio) + against + tr(" (noisy)");
}

QString speedRatioExplanation(const SpeedRatio& s, const QString& baselineName) {
  if (!(s.ratio > 0)) return {};
  QStringList lines;
  if (s.paired)
    lines << tr("Timed in turns with %1 (a block of steps each, one at a time), compared round by round: the "
                "median of %2 rounds' ratios, quartiles %3–%4.")
                 .arg(baselineName)
                 .arg(s.samples)
                 .arg(times(s.low), times(s.high));
  else
    lines << tr("Not timed in turns with %1: the ratio of the two runs' median step times; their quartiles "
                "allow %2–%3.")
                 .arg(baselineName, times(s.low), times(s.high));
  switch (s.noise) {
    case SpeedNoise::None: break;
    case SpeedNoise::TooFew:
      lines << (s.paired ? tr("Too noisy to conclude: %1 round(s) of turns paired, %2 needed.")
                         : tr("Too noisy to conclude: %1 timed step(s), %2 needed."))
                   .arg(s.samples)
                   .arg(kMinPairedRounds);
      break;
    case SpeedNoise::Spread:
      lines << tr("Too noisy to conclude: the rounds' ratios lie %1 apart between their quartiles (%2 at most): "
                  "the machine's load swamped the difference.")
                   .arg(times(s.high / s.low), times(kMaxPairedSpread));
      break;
    case SpeedNoise::BaselineSpread:
    case SpeedNoise::RunSpread:
      lines << tr("Too noisy to conclude: %1's step times lie %2 apart between their quartiles (%3 at most): the "
                  "machine's load moved while it trained.")
                   .arg(s.noise == SpeedNoise::BaselineSpread ? baselineName : tr("this run"))
                   .arg(times(s.noise == SpeedNoise::BaselineSpread ? s.baselineSpread : s.runSpread),
                        times(kMaxPairedSpread));
      break;
    case SpeedNoise::Straddles:
      lines << (s.paired ? tr("Too noisy to conclude: the rounds' quartiles lie on both sides of 1×, faster in "
                              "some rounds and slower in others.")
                         : tr("Too noisy to conclude: the quartiles' range lies on both sides of 1×, so neither "
                              "run is clearly the faster."));
      break;
  }
  if (s.noisy()) {
    if (s.noise == SpeedNoise::TooFew)
      lines << tr("Let the runs train longer, or run them again with more steps.");
    else if (s.paired)
      lines << tr("Run them again on a quieter machine (close other programs), or with more steps.");
    else
      lines << tr("Run them again on a quieter machine, or in turns (start them as a lesson, or with "
                  "ampstudio-cli compare), so that a change of load falls on both alike.");
  } else if (!s.paired) {
    lines << tr("A load that changed between the two runs would still read as a speed-up: runs started as a "
                "lesson (or ampstudio-cli compare) train in turns, which rules that out.");
  }
  return lines.join(QLatin1Char('\n'));
}

}  // namespace amp::ui
