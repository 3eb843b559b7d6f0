// Data-parallel gradients on GPUs: NCCL's all-reduce, as DDP does it, on the training stream, so
// the step stays free of host round trips. NCCL is found at run time (dlopen of libnccl.so.2, as
// PyTorch's wheels and NVIDIA's packages install it): a machine with CUDA but without NCCL still
// has the whole CUDA backend, and its ranks take the host path (data_parallel.cpp). The
// decision is the same on every rank, since a rank on NCCL and another on the host path would
// each wait for the other for ever.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_error.h"
#include "engine/backend/cuda_fast_paths.h"

namespace amp {

struct CudaBackend::Nccl {
  void* library = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRank) commInitRank = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclGroupStart) groupStart = nullptr;
  decltype(&ncclGroupEnd) groupEnd = nullptr;
  decltype(&ncclGetErrorString) errorString = nullptr;
  ncclComm_t comm = nullptr;

  // NCCL's entry points, or false (no library, or one without them).
  bool load() {
    library = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!library) return false;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(library, name));
      return fn != nullptr;
    };
    return sym(getUniqueId, "ncclGetUniqueId") && sym(commInitRank, "ncclCommInitRank") &&
           sym(commDestroy, "ncclCommDestroy") && sym(allReduce, "ncclAllReduce") &&
           sym(groupStart, "ncclGroupStart") && sym(groupEnd, "ncclGroupEnd") &&
           sym(errorString, "ncclGetErrorString");
  }
  ~Nccl() {
    if (comm && commDestroy) commDestroy(comm);
    if (library) ::dlclose(library);
  }
};

namespace {

// Whether every rank reports `ok` (an all-reduce of the failures: the ranks decide together).
bool allRanks(Communicator& comm, bool ok, const char* what) {
  double failed = ok ? 0.0 : 1.0;
  comm.allReduceSum(std::span<double>(&failed, 1), what);
  return failed == 0.0;
}

ncclDataType_t ncclType(const Tensor& t) {
  switch (t.dtype()) {
    case DType::F16: return ncclHalf;
    case DType::BF16: return ncclBfloat16;
    default: return ncclFloat32;
  }
}

}  // namespace

bool CudaBackend::allReduceOnDevice(std::span<Tensor* const> grads, Communicator& comm) {
  if (comm.size() <= 1) return false;
  if (!m_ncclDecided) {
    m_ncclDecided = true;
    useDevice();
    auto nccl = std::shared_ptr<Nccl>(new Nccl);
    bool ok = cudabk::fastPathEnabled("nccl") && nccl->load();
    // One GPU per rank: every rank's device (its PCI bus id) differs from every other's.
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, m_device) != cudaSuccess) ok = false;
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
    std::vector<std::uint8_t> id(sizeof(ncclUniqueId), 0);
    if (comm.rank() == 0) {
      ncclUniqueId u;
      ok = nccl->getUniqueId(&u) == ncclSuccess;
      std::memcpy(id.data(), &u, sizeof u);
    }
    if (!allRanks(comm, ok, "NCCL id on rank 0")) return false;
    comm.broadcast(id, 0, "NCCL id");
    ncclUniqueId u;
    std::memcpy(&u, id.data(), sizeof u);
    const ncclResult_t r = nccl->commInitRank(&nccl->comm, comm.size(), u, comm.rank());
    if (r != ncclSuccess) {
      std::fprintf(stderr, "rank %d: NCCL: %s; gradients go through host memory and MPI\n", comm.rank(),
                   nccl->errorString(r));
      nccl->comm = nullptr;
    }
    if (!allRanks(comm, nccl->comm != nullptr, "NCCL communicator on every rank")) return false;
    m_nccl = std::move(nccl);
  }
  if (!m_nccl) return false;
  useDevice();
  const float inverse = 1.0f / static_cast<float>(comm.size());
  m_nccl->groupStart();
  for (Tensor* g : grads)
    if (m_nccl->allReduce(g->rawData(), g->rawData(), std::size_t(g->numel()), ncclType(*g), ncclSum, m_nccl->comm,
                          m_stream) != ncclSuccess)
      throw std::runtime_error("NCCL all-reduce of the gradients failed on rank " + std::to_string(comm.rank()));
  if (m_nccl->groupEnd() != ncclSuccess)
    throw std::runtime_error("NCCL all-reduce of the gradients failed on rank " + std::to_string(comm.rank()));
  // DDP's average. A multiplication by 1/N: exact for a power-of-two N (the host path divides).
  for (Tensor* g : grads) scaleInPlace(*g, inverse);
  return true;
}

}  // namespace amp
