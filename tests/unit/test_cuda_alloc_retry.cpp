// The CUDA allocator's answer to an out-of-memory device (engine/backend/cuda_alloc_retry.h),
// driven by a pretend device: a free-byte count, a general cache and a step graph's cache. The
// point of issue 41: memory a step graph holds must come back to eager work (evaluation between
// replays) before an allocation fails, and only when the cheaper retry did not do.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "engine/backend/cuda_alloc_retry.h"

using amp::cudabk::AllocRetry;
using amp::cudabk::allocateWithRetry;

namespace {

struct PretendDevice {
  std::size_t free = 0, cached = 0, graphCached = 0;
  bool graph = false;
  std::vector<std::string> log;

  AllocRetry retryFor(std::size_t bytes) {
    AllocRetry r;
    r.attempt = [this, bytes] {
      log.push_back("try");
      if (bytes > free) return false;
      free -= bytes;
      return true;
    };
    r.emptyCache = [this] {
      log.push_back("empty");
      free += cached;
      cached = 0;
    };
    r.dropGraph = [this] {
      if (!graph) return false;
      log.push_back("drop");
      graph = false;
      cached += graphCached;  // the graph's blocks join the general cache
      graphCached = 0;
      return true;
    };
    return r;
  }
};

}  // namespace

TEST(CudaAllocRetry, FreeMemoryNeedsNoRetry) {
  PretendDevice d{100, 50, 50, true, {}};
  EXPECT_TRUE(allocateWithRetry(d.retryFor(80)));
  EXPECT_EQ(d.log, (std::vector<std::string>{"try"}));
  EXPECT_TRUE(d.graph);
}

TEST(CudaAllocRetry, TheGeneralCacheGoesBeforeTheGraph) {
  PretendDevice d{10, 90, 50, true, {}};
  EXPECT_TRUE(allocateWithRetry(d.retryFor(80)));
  EXPECT_EQ(d.log, (std::vector<std::string>{"try", "empty", "try"}));
  EXPECT_TRUE(d.graph) << "the graph was dropped though the cache sufficed";
}

// The case: evaluation between replays needs what only the graph's cache holds.
TEST(CudaAllocRetry, TheGraphIsDroppedBeforeAnAllocationFails) {
  PretendDevice d{10, 20, 60, true, {}};
  EXPECT_TRUE(allocateWithRetry(d.retryFor(80)));
  EXPECT_EQ(d.log, (std::vector<std::string>{"try", "empty", "try", "drop", "empty", "try"}));
  EXPECT_FALSE(d.graph);
  EXPECT_EQ(d.free, 10u);
}

TEST(CudaAllocRetry, WithoutAGraphTheSecondRefusalIsFinal) {
  PretendDevice d{10, 20, 0, false, {}};
  EXPECT_FALSE(allocateWithRetry(d.retryFor(80)));
  EXPECT_EQ(d.log, (std::vector<std::string>{"try", "empty", "try"}));
}

TEST(CudaAllocRetry, TooLargeEvenWithoutTheGraphFails) {
  PretendDevice d{10, 20, 30, true, {}};
  EXPECT_FALSE(allocateWithRetry(d.retryFor(80)));
  EXPECT_FALSE(d.graph);  // dropped, and the trainer records a new one at its next steady step
  EXPECT_EQ(d.free, 60u);
}

// A graph under way (a capture, a replay not yet launched) is not dropped: dropGraph says no.
TEST(CudaAllocRetry, AGraphThatCannotBeDroppedIsKept) {
  PretendDevice d{10, 20, 60, true, {}};
  AllocRetry r = d.retryFor(80);
  r.dropGraph = [] { return false; };
  EXPECT_FALSE(allocateWithRetry(r));
  EXPECT_TRUE(d.graph);
}
