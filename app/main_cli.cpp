// ampstudio-cli: the headless front end (run, bench, compare, convert, export).
#include <cstdio>

#include "app/cli_main.h"
#include "kernels/cpu/cpu_baseline.h"

int main(int argc, char** argv) {
  if (const auto problem = amp::cpu::cpuBaselineProblem()) {
    std::fprintf(stderr, "ampstudio-cli: %s\n", problem->c_str());
    return 2;
  }
  return amp::cli::cliMain(argc, argv);
}
