#include "engine/core/openmp_wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace amp {

bool shouldReexecForPassiveWaiting(const std::function<const char*(const char*)>& lookup) {
  if (lookup(kWaitPolicyMarker)) return false;  // already re-executed: never loop
  // The user's own choice, whatever it is (active included), stays.
  return !lookup("OMP_WAIT_POLICY") && !lookup("GOMP_SPINCOUNT");
}

void ensurePassiveOpenMpWaiting(char** argv) {
  if (!argv || !argv[0]) return;
  if (!shouldReexecForPassiveWaiting([](const char* name) { return std::getenv(name); })) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0 || setenv(kWaitPolicyMarker, "1", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // No /proc (a chroot) or the binary is gone: run on with the default policy, and do not
  // leave the variables behind for child processes to mistake as the user's choice.
  unsetenv("OMP_WAIT_POLICY");
  unsetenv(kWaitPolicyMarker);
}

}  // namespace amp
