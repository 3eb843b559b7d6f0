// Threading that holds up on a shared machine (issue 38): the CPUs a process may use (affinity
// mask, cgroup quota, OMP_NUM_THREADS), each run's share of them, the grain below which a loop
// runs on one thread, and the environment rule of the re-execution that makes OpenMP's idle threads
// spin only briefly in the app and the CLI.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <map>
#include <string>

#include "engine/config/config_schema.h"
#include "engine/core/openmp_wait_policy.h"
#include "engine/train/trainer.h"
#include "kernels/cpu/chunked.h"
#include "kernels/cpu/cpu_budget.h"
#include "kernels/cpu/parallel_grain.h"

using namespace amp;

TEST(CpuBudget, CgroupV2QuotaIsReadInCpus) {
  EXPECT_DOUBLE_EQ(cpu::cpuQuotaFromCpuMax("200000 100000\n"), 2.0);
  EXPECT_DOUBLE_EQ(cpu::cpuQuotaFromCpuMax("150000 100000"), 1.5);
  EXPECT_EQ(cpu::cpuQuotaFromCpuMax("max 100000\n"), 0.0);  // no limit
  EXPECT_EQ(cpu::cpuQuotaFromCpuMax(""), 0.0);              // no file
  EXPECT_EQ(cpu::cpuQuotaFromCpuMax("garbage"), 0.0);
}

TEST(CpuBudget, CgroupV1QuotaIsReadInCpus) {
  EXPECT_DOUBLE_EQ(cpu::cpuQuotaFromCfs("50000\n", "100000\n"), 0.5);
  EXPECT_EQ(cpu::cpuQuotaFromCfs("-1\n", "100000\n"), 0.0);  // no limit
  EXPECT_EQ(cpu::cpuQuotaFromCfs("", ""), 0.0);
}

TEST(CpuBudget, UsableCpusIsTheSmallestOfMaskQuotaAndOmpNumThreads) {
  EXPECT_EQ(cpu::usableCpus(64, 0), 64);     // no quota: the affinity mask
  EXPECT_EQ(cpu::usableCpus(64, 2.0), 2);    // docker --cpus=2 on a 64-core host
  EXPECT_EQ(cpu::usableCpus(64, 1.5), 2);    // a fraction rounds up
  EXPECT_EQ(cpu::usableCpus(64, 0.25), 1);   // never below one
  EXPECT_EQ(cpu::usableCpus(2, 8.0), 2);     // taskset -c 0,1 under a larger quota
  EXPECT_EQ(cpu::usableCpus(8, 0, 3), 3);    // the user's OMP_NUM_THREADS caps ours
  EXPECT_EQ(cpu::usableCpus(2, 0, 16), 2);   // but does not raise it past the mask
  EXPECT_EQ(cpu::usableCpus(0, 0), 1);
  EXPECT_EQ(cpu::ompNumThreadsFromEnv("4,2"), 4);
  EXPECT_EQ(cpu::ompNumThreadsFromEnv("3"), 3);
  EXPECT_EQ(cpu::ompNumThreadsFromEnv(nullptr), 0);
  EXPECT_EQ(cpu::ompNumThreadsFromEnv("abc"), 0);
  EXPECT_EQ(cpu::ompNumThreadsFromEnv("0"), 0);
  EXPECT_GE(cpu::availableCpus(), 1);
  EXPECT_LE(cpu::availableCpus(), omp_get_num_procs());
}

TEST(CpuBudget, RunsTrainingAtOnceShareTheCpus) {
  EXPECT_EQ(cpu::threadsPerRun(2, 1), 2);
  EXPECT_EQ(cpu::threadsPerRun(2, 2), 1);  // two runs on 2 cores: one each, not two each
  EXPECT_EQ(cpu::threadsPerRun(2, 3), 1);  // at least one
  EXPECT_EQ(cpu::threadsPerRun(16, 3), 5);
  EXPECT_EQ(cpu::threadsPerRun(1, 0), 1);
}

TEST(CpuBudget, TrainerTakesItsShareUnlessTrainThreadsIsSet) {
  RunConfig c;
  for (auto [k, v] : std::map<std::string, std::string>{{"model.name", "recipe_mlp"},
                                                        {"model.width", "16"},
                                                        {"data.name", "synthetic"},
                                                        {"data.batches", "2"},
                                                        {"train.batch_size", "8"},
                                                        {"train.steps", "2"}})
    setConfigValue(c, k, v);
  Trainer t(c);
  const int cpus = cpu::availableCpus();
  EXPECT_EQ(t.stepThreads(), cpus);
  t.setConcurrentRuns(2);
  EXPECT_EQ(t.stepThreads(), std::max(1, cpus / 2));
  t.setConcurrentRuns(1000);
  EXPECT_EQ(t.stepThreads(), 1);
  // The step itself runs under that limit.
  t.step();
  EXPECT_EQ(omp_get_max_threads(), 1);

  setConfigValue(c, "train.threads", "3");
  Trainer own(c);
  own.setConcurrentRuns(4);
  EXPECT_EQ(own.stepThreads(), 3);  // the user's choice wins
}

TEST(ParallelGrain, SmallWorkStaysOnOneThread) {
  EXPECT_EQ(cpu::loopThreadsFor(1, 1 << 30, 8), 1);            // one unit cannot be split
  EXPECT_EQ(cpu::loopThreadsFor(1000, 1, 8), 1);               // far below the grain
  EXPECT_EQ(cpu::loopThreadsFor(40000, 1, 8), 1);              // past the old 32768 threshold, still one grain
  EXPECT_EQ(cpu::loopThreadsFor(64, 128, 8), 1);               // 64 rows of 128: 8192 elements
  EXPECT_EQ(cpu::loopThreadsFor(2 * cpu::kGrainWork, 1, 8), 2);  // one thread per grain
  EXPECT_EQ(cpu::loopThreadsFor(1 << 24, 1, 8), 8);            // never more than the limit
  EXPECT_EQ(cpu::loopThreadsFor(3, 1 << 20, 8), 3);            // nor more than the units
  EXPECT_EQ(cpu::loopThreadsFor(1 << 24, 1, 1), 1);
}

// forEachChunk (the elementwise ops' loop) obeys the grain: on the old rule (all threads past
// 32768 elements) 40000 elements ran on every thread of the team.
TEST(ParallelGrain, ChunkedLoopsFanOutOnlyPastTheGrain) {
  omp_set_num_threads(4);
  auto widestTeam = [](std::int64_t n) {
    std::atomic<int> widest{0};
    cpu::forEachChunk(n, [&](std::int64_t, std::int64_t) {
      const int team = omp_get_num_threads();
      int seen = widest.load();
      while (team > seen && !widest.compare_exchange_weak(seen, team)) {
      }
    });
    return widest.load();
  };
  EXPECT_EQ(widestTeam(40000), 1);
  EXPECT_EQ(widestTeam(2 * cpu::kGrainWork), 2);
  EXPECT_EQ(widestTeam(1 << 22), 4);
}

TEST(WaitPolicy, ReexecutesOnlyWhenTheUserChoseNothingAndNeverTwice) {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_TRUE(shouldReexecForShortSpin(env({})));
  EXPECT_TRUE(shouldReexecForShortSpin(env({{"OMP_NUM_THREADS", "2"}})));
  // The user's own policy wins, whatever it is.
  EXPECT_FALSE(shouldReexecForShortSpin(env({{"OMP_WAIT_POLICY", "active"}})));
  EXPECT_FALSE(shouldReexecForShortSpin(env({{"OMP_WAIT_POLICY", "passive"}})));
  EXPECT_FALSE(shouldReexecForShortSpin(env({{"GOMP_SPINCOUNT", "10000"}})));
  // The re-executed process never re-executes again, even if the policy got lost.
  EXPECT_FALSE(shouldReexecForShortSpin(env({{kWaitPolicyMarker, "1"}})));
  // This test program was started by the kernel with its interpreter (the loader case is
  // cli_contract's: the CLI run as `ld.so ampstudio-cli devices`).
  EXPECT_FALSE(startedThroughTheDynamicLoader());
}
