// The programs are built for a baseline ISA (CMake's AMP_CPU_BASELINE, x86-64-v3 by default).
// On an older CPU the first vector instruction would kill the process with SIGILL; main() asks
// here first and prints one line instead. This file and the main() files are compiled for plain
// x86-64 so that the check itself runs everywhere.
#pragma once

#include <optional>
#include <string>

namespace amp::cpu {

// Nothing when this CPU runs the build; otherwise a one-line explanation naming what is missing.
std::optional<std::string> cpuBaselineProblem();

}  // namespace amp::cpu
