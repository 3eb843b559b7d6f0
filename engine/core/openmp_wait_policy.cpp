#include "engine/core/openmp_wait_policy.h"

#include <sys/auxv.h>
#include <unistd.h>

#include <cstdlib>

namespace amp {

bool shouldReexecForShortSpin(const std::function<const char*(const char*)>& lookup) {
  if (lookup(kWaitPolicyMarker)) return false;  // already re-executed: never loop
  // The user's own choice, whatever it is (active included), stays.
  return !lookup("OMP_WAIT_POLICY") && !lookup("GOMP_SPINCOUNT");
}

bool startedThroughTheDynamicLoader() {
  // Started normally, the kernel maps the program and its interpreter (ld.so) and tells the
  // program where the interpreter lies (AT_BASE). Started as `ld.so [options] PROGRAM`, the
  // kernel ran ld.so as the program itself: it has no interpreter, AT_BASE is 0, and
  // /proc/self/exe is ld.so, which executed again would take argv[1] for the program to load
  // (and would have lost its options: --library-path, --inhibit-cache).
  return getauxval(AT_BASE) == 0;
}

void ensureShortOpenMpSpin(char** argv) {
  if (!argv || !argv[0]) return;
  if (!shouldReexecForShortSpin([](const char* name) { return std::getenv(name); })) return;
  if (startedThroughTheDynamicLoader()) return;  // runs on with libgomp's default waiting
  if (setenv("GOMP_SPINCOUNT", kShortSpinCount, 1) != 0 || setenv(kWaitPolicyMarker, "1", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // No /proc (a chroot) or the binary is gone: run on with the default policy, and do not
  // leave the variables behind for child processes to mistake as the user's choice.
  unsetenv("GOMP_SPINCOUNT");
  unsetenv(kWaitPolicyMarker);
}

}  // namespace amp
