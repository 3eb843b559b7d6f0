// How many CPUs this process can really use, and how many threads a run takes of them.
//
// OpenMP sizes its teams by omp_get_num_procs(), which sees the affinity mask (taskset, a
// container's cpuset) but not a cgroup CPU quota (docker --cpus=2, systemd CPUQuota=200%): on a
// 2-CPU quota of a 64-core host a team of 64 threads would share 2 CPUs' worth of time, each
// thread waiting for the others at every barrier. Runs that train at once (the app's "Max
// concurrent", data-parallel ranks on one machine) must also split the CPUs between them rather
// than each take all of them. No Qt, no OpenMP here: plain functions the tests can feed.
#pragma once

#include <string_view>

namespace amp::cpu {

// cgroup v2 `cpu.max` ("max 100000", or "150000 100000" = 1.5 CPUs): the quota in CPUs, or 0
// when there is none or the text is not understood.
double cpuQuotaFromCpuMax(std::string_view text);
// cgroup v1 `cpu.cfs_quota_us` ("-1" = none) over `cpu.cfs_period_us`: CPUs, or 0 for none.
double cpuQuotaFromCfs(std::string_view quotaText, std::string_view periodText);

// The CPUs a process may use given `affinityCpus` CPUs in its affinity mask, a cgroup quota of
// `quotaCpus` (0 = none; a fraction rounds up, as the JVM and .NET do: 1.5 CPUs run 2 threads)
// and OMP_NUM_THREADS's first value `ompNumThreads` (0 = unset: the user's own setting caps
// ours). At least 1.
int usableCpus(int affinityCpus, double quotaCpus, int ompNumThreads = 0);

// OMP_NUM_THREADS's first value ("4" or "4,2"), or 0 when unset or not a positive integer.
int ompNumThreadsFromEnv(const char* value);

// This process's usableCpus(): sched_getaffinity, the cgroup quota of its own cgroup (v2, or v1
// cpu controller) and OMP_NUM_THREADS. Read once, then cached.
int availableCpus();

// The threads each of `sharers` runs (or ranks) training at once on `available` CPUs gets:
// available / sharers, at least 1 (two runs on 2 CPUs take one each instead of two each).
int threadsPerRun(int available, int sharers);

}  // namespace amp::cpu
