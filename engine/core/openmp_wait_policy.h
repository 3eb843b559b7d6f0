// How long OpenMP's idle threads spin in the app and the CLI, set before libgomp starts.
//
// libgomp's default lets a thread that finished its share of a loop spin on the CPU for up to
// 300,000 iterations (milliseconds) waiting for the next loop. On a quiet machine that saves a
// wake-up; beside another busy process (a second run, a video call) the spinning threads take the
// cores the working ones need: the underflow preset's fp32 step went from 0.2 ms to 132 ms beside
// a second `ampstudio-cli run`. Not spinning at all (OMP_WAIT_POLICY=passive) cures that but
// costs a sleep and a wake-up between every two loops: on a quiet 2-vCPU VM the same step took
// 1.2-1.4 ms instead of 0.45-0.6 (tests/bench/busy_underflow.sh). A short spin
// (GOMP_SPINCOUNT=10000, about a tenth of a millisecond) keeps both: quiet 0.5 ms, busy 0.4 ms.
//
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it is loaded, before main() runs,
// so setting them in main() is too late: the program sets GOMP_SPINCOUNT and executes itself
// again (/proc/self/exe, same arguments), once. A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT
// wins (nothing is changed), and a marker variable makes a second re-execution impossible.
// (Setting the variable from the executable's .preinit_array, which runs before libgomp's
// constructor, does not work: glibc's own initialisation, which runs after it, restores the
// environment the program started with.) A program started through the dynamic loader
// (`ld.so --library-path DIR PROGRAM`, as installer/package_test.sh hides NVIDIA's libraries)
// is not executed again: /proc/self/exe is then the loader. It keeps libgomp's default waiting.
#pragma once

#include <functional>
#include <string>

namespace amp {

// Set in the re-executed process's environment: it never re-executes again.
inline constexpr const char* kWaitPolicyMarker = "AMPSTUDIO_OMP_WAIT_SET";
// The spin our programs set: iterations of libgomp's wait loop before a thread sleeps.
inline constexpr const char* kShortSpinCount = "10000";

// What main() should do given its environment (lookup returns nullptr for an unset variable):
// true when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set (the user chose nothing) and the
// marker is absent (this is not already the re-executed process).
bool shouldReexecForShortSpin(const std::function<const char*(const char*)>& lookup);

// Called first thing in main(): when shouldReexecForShortSpin(getenv), sets
// GOMP_SPINCOUNT=kShortSpinCount and the marker and execv()s /proc/self/exe with argv. Returns
// only when nothing needed doing or the re-execution failed (the program then runs on as
// before, with libgomp's default waiting).
void ensureShortOpenMpSpin(char** argv);

// True when the kernel ran the dynamic loader as the program (`ld.so PROGRAM ...`).
bool startedThroughTheDynamicLoader();

}  // namespace amp
