// NCCL for the CUDA backend's data-parallel ranks (cuda_backend_nccl.cpp decides when; this is
// how): the library loaded at run time (dlopen of libnccl.so.2, as PyTorch's wheels and NVIDIA's
// packages install it, so the plugin works without it), a non-blocking communicator whose every
// wait is watched under the run's dist.timeout_s (cuda_nccl_watch.h: a dead or stopped rank ends
// the job instead of hanging it), and DDP's average computed as the host path computes it
// (kernels/common/rank_average.h: sums in fp32, one division, one rounding). No CUDA or NCCL
// types here, so the GPU suite can drive it directly (its error handling on one GPU).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"

namespace amp::cudabk {

// One gradient's part of an average: `sum` (fp32, `n` values) is all-reduced in place, then
// sum / ranks is rounded into `dst` (dtype code 0 fp32, 1 fp16, 2 bf16; dst may be sum).
struct NcclAverageBuffer {
  float* sum = nullptr;
  std::int64_t n = 0;
  int dstCode = 0;
  void* dst = nullptr;
};

class NcclRanks {
 public:
  // The library and the entry points this needs (NCCL 2.14 or later: non-blocking
  // communicators), or null with the reason in *why.
  static std::unique_ptr<NcclRanks> load(std::string* why);
  ~NcclRanks();
  NcclRanks(const NcclRanks&) = delete;
  NcclRanks& operator=(const NcclRanks&) = delete;

  // ncclGetUniqueId's bytes (rank 0 makes them; the others get them over the host transport).
  std::vector<std::uint8_t> uniqueId();
  // Joins rank `rank` of `size` on the current device, waiting at most timeoutS (0: no limit;
  // cuda_nccl_watch.h's ncclInitTimeout gives the share of the run's timeout). "" when it
  // worked, else one line (the communicator aborted).
  std::string init(int rank, int size, std::span<const std::uint8_t> id, double timeoutS);
  bool ready() const { return m_comm != nullptr; }

  // Every buffer's sum over the ranks (fp32, on `stream`), then its average into dst, waiting
  // until the device has done it, at most timeoutS. Throws CommunicatorError (one line: rank,
  // what, why) when NCCL fails or the deadline passes; the communicator is then aborted, and
  // every later call throws too.
  void allReduceAverage(std::span<const NcclAverageBuffer> buffers, float ranks, cuda::Stream stream,
                        double timeoutS);

 private:
  NcclRanks() = default;
  struct Api;
  std::unique_ptr<Api> m_api;
  void* m_comm = nullptr;   // ncclComm_t
  void* m_done = nullptr;   // cudaEvent_t recorded after each average
  int m_rank = 0;
  std::string m_broken;     // why the communicator was aborted
  void abort();
};

}  // namespace amp::cudabk
