// How the NCCL path (cuda_backend_nccl.cpp) waits for NCCL without ever waiting for ever, as host
// logic a CPU test can drive (tests/unit/test_cuda_nccl_watch.cpp). No CUDA or NCCL types.
//
// Why (issue 41). A blocking ncclCommInitRank, or an all-reduce whose kernel waits on the
// device for a rank that died or was stopped, hangs the surviving ranks for ever: NCCL has no
// timeout of its own, and the MPI watchdog (app/cli_ranks.cpp) only sees MPI's collectives. So
// the communicator is non-blocking (ncclConfig_t::blocking = 0), and every wait is a poll of
// "is it done?" (ncclCommGetAsyncError, and an event recorded after the all-reduce) under the
// run's dist.timeout_s; an error or the deadline aborts the communicator (ncclCommAbort, which
// also ends the device kernels still waiting) and the rank reports one line.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

namespace amp::cudabk {

enum class Progress { Done, Pending, Failed };

struct WatchOutcome {
  bool done = false;      // finished in time without an error
  bool timedOut = false;  // still pending at the deadline
  std::string error;      // what the poll reported, when it failed
};

// Polls until Done or Failed (poll fills `error` then), or until timeoutS has passed (0 or less:
// no limit). A failure or a timeout calls abort() once before returning. Sleeps grow from a few
// microseconds (an all-reduce's usual end is soon) to 1 ms, so a long wait costs no core.
inline WatchOutcome watchUntilDone(const std::function<Progress(std::string& error)>& poll,
                                   double timeoutS, const std::function<void()>& abort) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto pause = std::chrono::microseconds(2);
  WatchOutcome out;
  for (;;) {
    const Progress p = poll(out.error);
    if (p == Progress::Done) {
      out.done = true;
      return out;
    }
    if (p == Progress::Failed) break;
    if (timeoutS > 0 && std::chrono::duration<double>(Clock::now() - start).count() >= timeoutS) {
      out.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(1)) pause *= 2;
  }
  if (abort) abort();
  return out;
}

// The deadline of NCCL's set-up: half the run's timeout, so that ranks whose peer failed its
// set-up (and went on to the host agreement that follows it) still meet them there before the
// host transport's own watchdog gives up on them. No limit stays no limit.
inline double ncclInitTimeout(double runTimeoutS) { return runTimeoutS > 0 ? runTimeoutS / 2 : 0; }

// One line for a watch that did not end well: which rank, what, and why.
inline std::string watchFailure(int rank, const std::string& what, const WatchOutcome& o, double timeoutS) {
  if (o.timedOut) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", timeoutS);
    return "rank " + std::to_string(rank) + ": " + what + " did not complete within " + text +
           " s (dist.timeout_s): another rank died or stopped; the NCCL communicator was aborted";
  }
  return "rank " + std::to_string(rank) + ": " + what + " failed: " + o.error +
         "; the NCCL communicator was aborted";
}

}  // namespace amp::cudabk
