// The grain rule every OpenMP loop of the CPU backend follows: how many threads a loop of
// `units` iterations of `workPerUnit` each gets.
//
// Why a grain: handing a loop to a team costs a wake-up of every thread (microseconds) and a
// barrier at its end, and on a shared machine (a video call, a second run, a build) a woken
// thread may wait a whole scheduler slice, milliseconds, for a core while the others wait at the
// barrier for it. The underflow preset's fp32 step is 0.2 ms of work in ops of a few thousand
// elements: fanned out to threads beside a busy process it took 132 ms. So work below the grain
// runs on the calling thread (no team at all), and larger work takes one thread per grain of it
// (PyTorch's at::parallel_for does the same with its grain size of 32768), never more threads
// than units or than omp_get_max_threads() (which the trainer sets to the run's share of the
// CPUs: kernels/cpu/cpu_budget.h). Use:
//   const int threads = cpu::loopThreads(rows, width);
//   #pragma omp parallel for num_threads(threads) if (threads > 1)
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace amp::cpu {

// Elementary operations (elements touched, or multiply-adds) a thread does before a second one
// pays for its wake-up.
constexpr std::int64_t kGrainWork = 1 << 15;

// The rule itself, for any thread limit (the tests give one).
constexpr int loopThreadsFor(std::int64_t units, std::int64_t workPerUnit, int maxThreads) {
  if (units <= 1 || maxThreads <= 1) return 1;
  const std::int64_t work = units * std::max<std::int64_t>(1, workPerUnit);
  if (work < 2 * kGrainWork) return 1;  // a second thread would get less than a grain
  const std::int64_t grains = work / kGrainWork;
  return int(std::min<std::int64_t>({grains, units, maxThreads}));
}

// A further limit on our own loops, set by the training thread for its step (0: none): the
// trainer's thread tuner (engine/train/step_thread_tuner.h) lowers it on a busy machine. Our loops
// give the same bits on any thread count, so the tuner may change it between steps; oneDNN's
// GEMMs and convolutions may not (a K split over 2 threads adds in another order), so they keep
// the OpenMP limit, which stays the run's share for the whole run.
inline thread_local int t_loopThreadCap = 0;

// The most threads one of our loops may take on the calling thread.
inline int maxLoopThreads() {
  const int omp = omp_get_max_threads();
  return t_loopThreadCap > 0 ? std::min(omp, t_loopThreadCap) : omp;
}

// The threads this loop gets on the calling thread's limits.
inline int loopThreads(std::int64_t units, std::int64_t workPerUnit = 1) {
  return loopThreadsFor(units, workPerUnit, maxLoopThreads());
}

}  // namespace amp::cpu
