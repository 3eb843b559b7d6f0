// Plausible made-up runs (no training needed) for chart previews, the chart tests and the
// redraw benchmark: a decaying noisy loss with a few spikes, a dynamic loss scale that halves on
// overflow and doubles after each growth interval (fp16), throughput, memory by category,
// periodic evaluations and exponent histograms.
#pragma once

#include <QColor>
#include <QString>
#include <cstdint>

#include "engine/config/run_config.h"

namespace amp::ui {

struct RunData;

struct SyntheticRunOptions {
  QString name = QStringLiteral("run");
  PrecisionMode mode = PrecisionMode::Fp32;
  std::int64_t steps = 5000;
  int histogramEvery = 50;  // 0 = none
  int evalEvery = 500;      // 0 = no test set
  int growthInterval = 2000;
  int spikes = 3;              // loss spikes at random steps
  int histogramSamples = 400;  // values drawn per recorded tensor
  std::uint64_t seed = 1;
  QColor color;
};

// Appends opt.steps steps to `run` (through RunData::append) and sets its name, colour, config.
void fillSyntheticRun(RunData& run, const SyntheticRunOptions& opt);

}  // namespace amp::ui
