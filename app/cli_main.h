// ampstudio-cli sub-commands. Each returns the process exit code: 0 ok, 1 run failed
// (e.g. diverged and configured to stop), 2 bad input (one line on stderr naming the problem).
#pragma once

#include <string>
#include <vector>

namespace amp::cli {

using Args = std::vector<std::string>;

int cliMain(int argc, char** argv);

// Prints "ampstudio-cli COMMAND: WHAT" as one line on stderr: control characters in `what`
// (a newline in a path or value) are escaped and a message over 2000 characters is cut, so
// scripts reading stderr line by line always get one line per error.
void printError(const std::string& command, const std::string& what);
int cmdRun(const Args& args);
int cmdBench(const Args& args);
int cmdCompare(const Args& args);
int cmdConvert(const Args& args);
int cmdExport(const Args& args);
int cmdDevices(const Args& args);

}  // namespace amp::cli
