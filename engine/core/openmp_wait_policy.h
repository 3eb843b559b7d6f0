// Passive waiting for OpenMP threads in the app and the CLI, set before libgomp starts.
//
// libgomp's default lets a thread that finished its share of a loop spin on the CPU (for up to
// 300,000 iterations, or forever under OMP_WAIT_POLICY=active) waiting for the next loop. On a
// quiet machine that saves a wake-up; beside another busy process (a second run, a video call)
// the spinning threads take the cores the working ones need: the underflow preset's fp32 step
// went from 0.2 ms to 132 ms beside a second `ampstudio-cli run`. libgomp reads
// OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it is loaded, before main() runs, so setting
// them in main() is too late: the program sets OMP_WAIT_POLICY=passive and executes itself
// again (/proc/self/exe, same arguments), once. A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT
// wins (nothing is changed), and a marker variable makes a second re-execution impossible.
#pragma once

#include <functional>
#include <string>

namespace amp {

// Set in the re-executed process's environment: it never re-executes again.
inline constexpr const char* kWaitPolicyMarker = "AMPSTUDIO_OMP_WAIT_POLICY_SET";

// What main() should do given its environment (lookup returns nullptr for an unset variable):
// true when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set (the user chose nothing) and the
// marker is absent (this is not already the re-executed process).
bool shouldReexecForPassiveWaiting(const std::function<const char*(const char*)>& lookup);

// Called first thing in main(): when shouldReexecForPassiveWaiting(getenv), sets
// OMP_WAIT_POLICY=passive and the marker and execv()s /proc/self/exe with argv. Returns only
// when nothing needed doing or the re-execution failed (the program then runs on as before,
// with libgomp's default waiting).
void ensurePassiveOpenMpWaiting(char** argv);

}  // namespace amp
