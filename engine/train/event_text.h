// The event log's sentences for a step ("step 812: non-finite gradient in 2.weight — step
// skipped, scale 65536 → 32768"), shared by the CLI and the app.
#pragma once

#include <string>
#include <vector>

#include "engine/train/step_metrics.h"

namespace amp {

std::vector<std::string> describeEvents(const StepMetrics& m, int growthInterval);
std::string formatScale(double scale);  // "65536", "0.5", "2^-20"

}  // namespace amp
