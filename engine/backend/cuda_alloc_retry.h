// What the CUDA backend's caching allocator does when the device refuses an allocation outside a
// step graph's capture (cuda_backend_memory.cpp), as host logic a CPU test can drive
// (tests/unit/test_cuda_alloc_retry.cpp). No CUDA types.
//
// Why three tries. Freed blocks stay cached (cudaFree would synchronise the device), so a
// refusal first gives the general cache back and tries again, as PyTorch's allocator does. But
// once a step graph exists, the blocks it captured are its own (a replay rewrites them): freed
// tensors that held them go to the graph's cache, which eager work never takes, so evaluation or
// a diagnosis between replays could run out of memory with graphs on where the same run fits
// eagerly. So the last resort drops the graph (its blocks go back to the general cache, which is
// emptied again) and tries once more; the trainer records a new graph at its next steady step.
#pragma once

#include <functional>

namespace amp::cudabk {

struct AllocRetry {
  // One cudaMalloc: true when it gave memory or failed for another reason than memory (the
  // caller reports that one), false when the device is out of memory.
  std::function<bool()> attempt;
  // Gives the general cache's free blocks back to the device (synchronising first).
  std::function<void()> emptyCache;
  // Drops the step graph when one is held and nothing of a step is under way, handing its blocks
  // to the general cache: true when it dropped one.
  std::function<bool()> dropGraph;
};

// attempt; else emptyCache and attempt; else, if dropGraph drops a graph, emptyCache and attempt.
// The result of the last attempt.
inline bool allocateWithRetry(const AllocRetry& r) {
  if (r.attempt()) return true;
  r.emptyCache();
  if (r.attempt()) return true;
  if (!r.dropGraph || !r.dropGraph()) return false;
  r.emptyCache();
  return r.attempt();
}

}  // namespace amp::cudabk
