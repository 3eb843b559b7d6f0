// Chart export for `ampstudio-cli export --format png|svg|pdf` (rendered offscreen with the
// desktop app's dashboard when the GUI library is built).
#pragma once

#include <string>
#include <vector>

#include "engine/io/run_record.h"

namespace amp::cli {

int usageError(const std::string& what);  // one line on stderr, returns 2
int exportCharts(const std::vector<RunRecord>& runs, const std::string& format,
                 const std::string& output);

}  // namespace amp::cli
