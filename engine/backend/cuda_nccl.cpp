// NCCL for the data-parallel ranks: loading, a non-blocking communicator watched under the run's
// timeout, and DDP's average (cuda_nccl.h says why each).
#include "engine/backend/cuda_nccl.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>
#include <type_traits>

#include "engine/backend/cuda_nccl_watch.h"
#include "engine/dist/communicator.h"

namespace amp::cudabk {

struct NcclRanks::Api {
  void* library = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRankConfig) commInitRankConfig = nullptr;
  decltype(&ncclCommGetAsyncError) commGetAsyncError = nullptr;
  decltype(&ncclCommAbort) commAbort = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclGroupStart) groupStart = nullptr;
  decltype(&ncclGroupEnd) groupEnd = nullptr;
  decltype(&ncclGetErrorString) errorString = nullptr;
  ~Api() {
    if (library) ::dlclose(library);
  }
};

namespace {
ncclComm_t asComm(void* c) { return static_cast<ncclComm_t>(c); }
}  // namespace

std::unique_ptr<NcclRanks> NcclRanks::load(std::string* why) {
  auto api = std::make_unique<Api>();
  api->library = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!api->library) {
    if (why) *why = "libnccl.so.2 was not found";
    return nullptr;
  }
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(api->library, name));
    return fn != nullptr;
  };
  // ncclCommInitRankConfig and non-blocking communicators: NCCL 2.14 and later.
  if (!(sym(api->getUniqueId, "ncclGetUniqueId") && sym(api->commInitRankConfig, "ncclCommInitRankConfig") &&
        sym(api->commGetAsyncError, "ncclCommGetAsyncError") && sym(api->commAbort, "ncclCommAbort") &&
        sym(api->commDestroy, "ncclCommDestroy") && sym(api->allReduce, "ncclAllReduce") &&
        sym(api->groupStart, "ncclGroupStart") && sym(api->groupEnd, "ncclGroupEnd") &&
        sym(api->errorString, "ncclGetErrorString"))) {
    if (why) *why = "libnccl.so.2 lacks non-blocking communicators (NCCL 2.14 or later has them)";
    return nullptr;
  }
  std::unique_ptr<NcclRanks> r(new NcclRanks);
  r->m_api = std::move(api);
  return r;
}

NcclRanks::~NcclRanks() {
  // A communicator still here had no failure: every all-reduce was waited for, so nothing of it
  // is queued and a plain destroy ends it.
  if (m_comm) m_api->commDestroy(asComm(m_comm));
  if (m_done) cudaEventDestroy(static_cast<cudaEvent_t>(m_done));
  cudaGetLastError();
}

void NcclRanks::abort() {
  // Also ends the device kernels still waiting on the other ranks, so the stream drains.
  if (m_comm) m_api->commAbort(asComm(m_comm));
  m_comm = nullptr;
}

std::vector<std::uint8_t> NcclRanks::uniqueId() {
  ncclUniqueId u;
  const ncclResult_t r = m_api->getUniqueId(&u);
  if (r != ncclSuccess)
    throw CommunicatorError(std::string("NCCL: making the communicator's id failed: ") + m_api->errorString(r));
  std::vector<std::uint8_t> bytes(sizeof u);
  std::memcpy(bytes.data(), &u, sizeof u);
  return bytes;
}

std::string NcclRanks::init(int rank, int size, std::span<const std::uint8_t> id, double timeoutS) {
  m_rank = rank;
  if (id.size() != sizeof(ncclUniqueId)) return "NCCL: the communicator's id has the wrong size";
  if (!m_done) {
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      return "NCCL: creating the all-reduce's event failed";
    }
    m_done = e;
  }
  ncclUniqueId u;
  std::memcpy(&u, id.data(), sizeof u);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every call returns at once; ncclCommGetAsyncError says when it is done
  ncclComm_t comm = nullptr;
  const ncclResult_t started = m_api->commInitRankConfig(&comm, size, u, rank, &config);
  m_comm = comm;
  WatchOutcome o;
  if (started != ncclSuccess && started != ncclInProgress) {
    o.error = m_api->errorString(started);
    abort();
  } else {
    o = watchUntilDone(
        [&](std::string& error) {
          ncclResult_t state = ncclSuccess;
          const ncclResult_t q = m_api->commGetAsyncError(asComm(m_comm), &state);
          if (q != ncclSuccess) state = q;
          if (state == ncclInProgress) return Progress::Pending;
          if (state == ncclSuccess) return Progress::Done;
          error = m_api->errorString(state);
          return Progress::Failed;
        },
        timeoutS, [&] { abort(); });
  }
  if (o.done) return "";
  m_broken = watchFailure(rank, "NCCL's set-up (ncclCommInitRankConfig of " + std::to_string(size) + " ranks)",
                          o, timeoutS);
  return m_broken;
}

void NcclRanks::allReduceAverage(std::span<const NcclAverageBuffer> buffers, float ranks,
                                 cuda::Stream stream, double timeoutS) {
  if (!m_comm)
    throw CommunicatorError(m_broken.empty() ? "rank " + std::to_string(m_rank) + ": NCCL has no communicator"
                                             : m_broken);
  const std::string what = "the NCCL all-reduce of the gradients";
  auto fail = [&](const WatchOutcome& o) {
    abort();
    m_broken = watchFailure(m_rank, what, o, timeoutS);
    throw CommunicatorError(m_broken);
  };
  // The communicator's own state: pending while a non-blocking call is still being queued.
  auto state = [&](std::string& error) {
    ncclResult_t s = ncclSuccess;
    const ncclResult_t q = m_api->commGetAsyncError(asComm(m_comm), &s);
    if (q != ncclSuccess) s = q;
    if (s == ncclInProgress) return Progress::Pending;
    if (s == ncclSuccess) return Progress::Done;
    error = m_api->errorString(s);
    return Progress::Failed;
  };
  ncclResult_t r = m_api->groupStart();
  for (const NcclAverageBuffer& b : buffers)
    if (r == ncclSuccess || r == ncclInProgress)
      r = m_api->allReduce(b.sum, b.sum, std::size_t(b.n), ncclFloat32, ncclSum, asComm(m_comm),
                           static_cast<cudaStream_t>(stream));
  const ncclResult_t ended = m_api->groupEnd();
  if (r == ncclSuccess || r == ncclInProgress) r = ended;
  if (r != ncclSuccess && r != ncclInProgress) {
    WatchOutcome o;
    o.error = m_api->errorString(r);
    fail(o);
  }
  // Non-blocking: the group is queued on the stream once the communicator says so.
  if (r == ncclInProgress) {
    const WatchOutcome queued = watchUntilDone(state, timeoutS, nullptr);
    if (!queued.done) fail(queued);
  }
  for (const NcclAverageBuffer& b : buffers)
    cuda::launchRankAverage(b.sum, b.n, ranks, b.dstCode, b.dst, stream);
  const auto done = static_cast<cudaEvent_t>(m_done);
  if (cudaEventRecord(done, static_cast<cudaStream_t>(stream)) != cudaSuccess) {
    WatchOutcome o;
    o.error = cudaGetErrorString(cudaGetLastError());
    fail(o);
  }
  // The device's end of the all-reduce (its kernels wait there for the other ranks), or NCCL's
  // report of a failure, or the deadline.
  const WatchOutcome o = watchUntilDone(
      [&](std::string& error) {
        const cudaError_t q = cudaEventQuery(done);
        if (q == cudaSuccess) return Progress::Done;
        if (q != cudaErrorNotReady) {
          cudaGetLastError();
          error = cudaGetErrorString(q);
          return Progress::Failed;
        }
        const Progress p = state(error);
        return p == Progress::Failed ? Progress::Failed : Progress::Pending;
      },
      timeoutS, nullptr);
  if (!o.done) fail(o);
}

}  // namespace amp::cudabk
