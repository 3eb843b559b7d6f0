#include "kernels/cpu/cpu_baseline.h"

namespace amp::cpu {

std::optional<std::string> cpuBaselineProblem() {
#if defined(AMP_CPU_BASELINE) && (defined(__x86_64__) || defined(_M_X64))
  const std::string baseline = AMP_CPU_BASELINE;
  if (baseline != "x86-64-v3" && baseline != "x86-64-v4") return std::nullopt;
  __builtin_cpu_init();
  std::string missing;
  // The features x86-64-v3 adds that GCC actually emits in vectorised loops.
  if (!__builtin_cpu_supports("avx2")) missing += " AVX2";
  if (!__builtin_cpu_supports("fma")) missing += " FMA";
  if (!__builtin_cpu_supports("bmi2")) missing += " BMI2";
  if (!__builtin_cpu_supports("f16c")) missing += " F16C";
  if (baseline == "x86-64-v4" && !__builtin_cpu_supports("avx512bw")) missing += " AVX512BW";
  if (!missing.empty())
    return "this build of AMP Studio needs a " + baseline + " CPU, and this one lacks" + missing +
           "; rebuild with -DAMP_CPU_BASELINE= (empty) for a generic x86-64 build";
#endif
  return std::nullopt;
}

}  // namespace amp::cpu
