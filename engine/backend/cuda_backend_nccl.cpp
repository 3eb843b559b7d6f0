// Data-parallel gradients on GPUs: NCCL's all-reduce, as DDP does it, on the training stream
// (the NCCL side: cuda_nccl.cpp). A machine with CUDA but without NCCL still has the whole CUDA
// backend, and its ranks take the host path (data_parallel.cpp). The decision is the same on
// every rank, since a rank on NCCL and another on the host path would each wait for the other
// for ever; so is a failed set-up on any rank (every rank then takes the host path), and no
// wait for NCCL lasts longer than the run's dist.timeout_s (Communicator::timeoutSeconds).
//
// The average is the host path's (kernels/common/rank_average.h): 16-bit gradients are widened
// into fp32 copies (exact), summed in fp32, divided and rounded once back into the gradient, so
// pure-fp16 ranks never overflow in the sum where the average fits (issue 41). The copies cost
// twice a 16-bit gradient's bytes on the wire and at most kGroupFloats floats of memory at once.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_error.h"
#include "engine/backend/cuda_fast_paths.h"
#include "engine/backend/cuda_nccl.h"
#include "engine/backend/cuda_nccl_watch.h"

namespace amp {

namespace {

// Whether every rank reports `ok` (an all-reduce of the failures: the ranks decide together).
bool allRanks(Communicator& comm, bool ok, const char* what) {
  double failed = ok ? 0.0 : 1.0;
  comm.allReduceSum(std::span<double>(&failed, 1), what);
  return failed == 0.0;
}

// fp32 copies of 16-bit gradients made at once, at most (128 MiB).
constexpr std::int64_t kGroupFloats = std::int64_t(32) << 20;

}  // namespace

bool CudaBackend::allReduceOnDevice(std::span<Tensor* const> grads, Communicator& comm) {
  if (comm.size() <= 1) return false;
  refuseWhileCapturing("an all-reduce between ranks");
  if (!m_ncclDecided) {
    m_ncclDecided = true;
    useDevice();
    std::string why;
    std::shared_ptr<cudabk::NcclRanks> nccl;
    if (cudabk::fastPathEnabled("nccl")) nccl = cudabk::NcclRanks::load(&why);
    bool ok = nccl != nullptr;
    // One GPU per rank: every rank's device (its PCI bus id) differs from every other's.
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, m_device) != cudaSuccess) {
      cudaGetLastError();
      ok = false;
    }
    std::vector<std::uint8_t> all(std::size_t(comm.size()) * sizeof bus, 0);
    for (int r = 0; r < comm.size(); ++r) {
      std::vector<std::uint8_t> mine(sizeof bus);
      if (r == comm.rank()) std::memcpy(mine.data(), bus, sizeof bus);
      comm.broadcast(mine, r, "GPU placement of the ranks");
      std::memcpy(all.data() + std::size_t(r) * sizeof bus, mine.data(), sizeof bus);
    }
    for (int r = 0; r < comm.size(); ++r)
      if (r != comm.rank() && std::memcmp(all.data() + std::size_t(r) * sizeof bus, bus, sizeof bus) == 0) ok = false;
    if (!allRanks(comm, ok, "NCCL availability on every rank")) return false;
    std::vector<std::uint8_t> id;
    if (comm.rank() == 0) {
      try {
        id = nccl->uniqueId();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank 0: %s; gradients go through host memory and MPI\n", e.what());
        ok = false;
      }
    }
    if (!allRanks(comm, ok, "NCCL id on rank 0")) return false;
    id.resize(sizeof(ncclUniqueId), 0);  // rank 0's bytes below
    comm.broadcast(id, 0, "NCCL id");
    // A set-up that fails or times out on one rank ends in the agreement below on every rank: the
    // others' set-up times out too (half the run's timeout), before the host transport's does.
    const std::string failed = nccl->init(comm.rank(), comm.size(), id, cudabk::ncclInitTimeout(comm.timeoutSeconds()));
    if (!failed.empty()) std::fprintf(stderr, "%s; gradients go through host memory and MPI\n", failed.c_str());
    if (!allRanks(comm, nccl->ready(), "NCCL communicator on every rank")) return false;
    m_nccl = std::move(nccl);
  }
  if (!m_nccl) return false;
  useDevice();
  // fp32 gradients are summed in place; 16-bit ones through fp32 copies, a group at a time.
  std::vector<Tensor> wide;
  std::vector<cudabk::NcclAverageBuffer> group;
  std::int64_t copied = 0;
  auto flush = [&] {
    if (group.empty()) return;
    m_nccl->allReduceAverage(group, static_cast<float>(comm.size()), m_stream, comm.timeoutSeconds());
    group.clear();
    wide.clear();
    copied = 0;
  };
  for (Tensor* g : grads) {
    const int code = cudabk::floatCode(*g, "all-reduce");
    if (code == 0) {
      group.push_back({g->data<float>(), g->numel(), 0, g->rawData()});
      continue;
    }
    if (copied > 0 && copied + g->numel() > kGroupFloats) flush();
    wide.push_back(empty(g->shape(), DType::F32, MemCategory::Workspace, g->format()));
    castInto(*g, wide.back());  // exact
    group.push_back({wide.back().data<float>(), g->numel(), code, g->rawData()});
    copied += g->numel();
  }
  flush();
  return true;
}

}  // namespace amp
