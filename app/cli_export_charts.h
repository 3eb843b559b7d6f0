// Chart export for `ampstudio-cli export --format png|svg|pdf` (rendered offscreen with the
// desktop app's dashboard when the GUI library is built), and the weights-only export.
#pragma once

#include <string>
#include <vector>

#include "engine/io/run_record.h"

namespace amp::cli {

int usageError(const std::string& what);  // one line on stderr, returns 2
int exportCharts(const std::vector<RunRecord>& runs, const std::string& format,
                 const std::string& output);
// export --weights (cli_export_weights.cpp): one run folder's latest checkpoint, or `checkpoint`.
int exportWeightsFile(const std::vector<std::string>& runDirs, const std::string& checkpoint,
                      const std::string& dtype, const std::string& output);

}  // namespace amp::cli
