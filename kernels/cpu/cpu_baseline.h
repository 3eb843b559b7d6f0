// The programs are built for a baseline ISA (CMake's AMP_CPU_BASELINE, x86-64-v3 by default).
// On an older CPU the first vector instruction would kill the process with SIGILL, possibly in a
// static initialiser before main(). cpu_baseline.cpp therefore checks from a constructor that
// runs before every static initialiser of ours, in a file compiled for plain x86-64 that uses
// only C library calls, and exits with one line naming what is missing.
#pragma once

namespace amp::cpu {

// Null when this CPU runs the build, else the one-line explanation (a static buffer). main()
// calls it too, which also makes the linker keep the constructor's object file.
const char* cpuBaselineProblem();

}  // namespace amp::cpu
