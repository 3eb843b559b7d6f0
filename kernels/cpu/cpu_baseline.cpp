#include "kernels/cpu/cpu_baseline.h"

#include <errno.h>   // program_invocation_short_name
#include <stdio.h>
#include <string.h>
#include <unistd.h>

namespace amp::cpu {

const char* cpuBaselineProblem() {
#if defined(AMP_CPU_BASELINE) && defined(__x86_64__)
  static char message[256];
  const char* baseline = AMP_CPU_BASELINE;
  __builtin_cpu_init();
  bool ok = true;
#if defined(__clang__)
  // Clang (14) knows no level names here, and not F16C, MOVBE or LZCNT: the features it can
  // test. No CPU has AVX2, FMA and BMI1/2 without those three (Intel Haswell, AMD Zen onwards).
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
#else
  const bool v3 = __builtin_cpu_supports("x86-64-v3");
  const bool v4 = __builtin_cpu_supports("x86-64-v4");
#endif
  if (strcmp(baseline, "x86-64-v3") == 0) ok = v3;
  else if (strcmp(baseline, "x86-64-v4") == 0) ok = v4;
  if (!ok) {
    snprintf(message, sizeof message,
             "this build needs an %s CPU (AVX2, FMA, BMI2, F16C%s) and this one lacks part of it; "
             "rebuild with cmake -DAMP_CPU_BASELINE= for generic x86-64",
             baseline, strcmp(baseline, "x86-64-v4") == 0 ? ", AVX-512" : "");
    return message;
  }
#endif
  return nullptr;
}

namespace {

// Priority 101 runs before all default-priority static initialisers of this program.
__attribute__((constructor(101))) void refuseAnOlderCpu() {
  if (const char* problem = cpuBaselineProblem()) {
    fprintf(stderr, "%s: %s\n", program_invocation_short_name, problem);
    _exit(2);
  }
}

}  // namespace

}  // namespace amp::cpu
