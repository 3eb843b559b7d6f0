// Side-by-side tables of several runs (run with a multi-variant preset, compare): printed for
// people and written as JSON for tools.
#pragma once

#include <QJsonObject>
#include <string>
#include <vector>

#include "app/cli_experiment.h"

namespace amp::cli {

struct LabelledResult {
  std::string label;
  RunResult result;
};

// Prints the table; ratios are against the first run whose mode is fp32 (if any).
void printComparison(const std::vector<LabelledResult>& runs, std::FILE* out);
QJsonObject comparisonToJson(const std::vector<LabelledResult>& runs);

}  // namespace amp::cli
