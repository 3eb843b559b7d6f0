// ampstudio-cli: the headless front end (run, bench, compare, convert, export).
#include <cstdio>

#include "app/cli_main.h"
#include "engine/core/openmp_wait_policy.h"
#include "kernels/cpu/cpu_baseline.h"

int main(int argc, char** argv) {
  // Before anything else: it may execute this program again (engine/core/openmp_wait_policy.h).
  amp::ensureShortOpenMpSpin(argv);
  if (const char* problem = amp::cpu::cpuBaselineProblem()) {  // normally refused before main
    std::fprintf(stderr, "ampstudio-cli: %s\n", problem);
    return 2;
  }
  return amp::cli::cliMain(argc, argv);
}
