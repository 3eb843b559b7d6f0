// ampstudio-cli sub-commands. Each returns the process exit code: 0 ok, 1 run failed
// (e.g. diverged and configured to stop), 2 bad input (one line on stderr naming the problem).
#pragma once

#include <string>
#include <vector>

namespace amp::cli {

using Args = std::vector<std::string>;

int cliMain(int argc, char** argv);
int cmdRun(const Args& args);
int cmdBench(const Args& args);
int cmdCompare(const Args& args);
int cmdConvert(const Args& args);
int cmdExport(const Args& args);
int cmdDevices(const Args& args);

}  // namespace amp::cli
