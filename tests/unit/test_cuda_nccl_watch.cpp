// The NCCL path's waits (engine/backend/cuda_nccl_watch.h), driven by pretend polls: a wait
// ends when NCCL is done, aborts the communicator once when NCCL reports an error or the run's
// timeout passes, and never lasts for ever (issue 41: a dead or stopped rank hung the others).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "engine/backend/cuda_nccl_watch.h"

using namespace amp::cudabk;

TEST(CudaNcclWatch, DoneAfterAFewPollsWithoutAbort) {
  int polls = 0, aborts = 0;
  const WatchOutcome o = watchUntilDone(
      [&](std::string&) { return ++polls < 5 ? Progress::Pending : Progress::Done; }, 10.0, [&] { ++aborts; });
  EXPECT_TRUE(o.done);
  EXPECT_FALSE(o.timedOut);
  EXPECT_EQ(polls, 5);
  EXPECT_EQ(aborts, 0);
}

TEST(CudaNcclWatch, AnErrorAbortsOnceAndSaysWhat) {
  int aborts = 0;
  const WatchOutcome o = watchUntilDone(
      [&](std::string& e) {
        e = "remote process exited or there was a network error";
        return Progress::Failed;
      },
      10.0, [&] { ++aborts; });
  EXPECT_FALSE(o.done);
  EXPECT_FALSE(o.timedOut);
  EXPECT_EQ(aborts, 1);
  const std::string line = watchFailure(1, "the NCCL all-reduce of the gradients", o, 10.0);
  EXPECT_EQ(line,
            "rank 1: the NCCL all-reduce of the gradients failed: remote process exited or there was a network "
            "error; the NCCL communicator was aborted");
}

TEST(CudaNcclWatch, APendingWaitEndsAtTheTimeoutAndAborts) {
  int aborts = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const WatchOutcome o = watchUntilDone([](std::string&) { return Progress::Pending; }, 0.2, [&] { ++aborts; });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(o.done);
  EXPECT_TRUE(o.timedOut);
  EXPECT_EQ(aborts, 1);
  EXPECT_GE(s, 0.2);
  EXPECT_LT(s, 2.0);
  EXPECT_NE(watchFailure(0, "NCCL's set-up", o, 0.2).find("did not complete within 0.2 s (dist.timeout_s)"),
            std::string::npos);
}

TEST(CudaNcclWatch, NoLimitWaitsUntilDone) {
  int polls = 0;
  const WatchOutcome o = watchUntilDone(
      [&](std::string&) { return ++polls < 2000 ? Progress::Pending : Progress::Done; }, 0, nullptr);
  EXPECT_TRUE(o.done);
  EXPECT_EQ(polls, 2000);
}

// Set-up takes half the run's timeout, so a rank whose peer failed reaches the host agreement
// before the host transport's own watchdog ends it.
TEST(CudaNcclWatch, TheSetUpGetsHalfTheRunsTimeout) {
  EXPECT_EQ(ncclInitTimeout(300), 150);
  EXPECT_EQ(ncclInitTimeout(0), 0);
}
