// CUDA runtime failures as exceptions naming the op, its shapes and the CUDA error string: the
// worker shows the message and marks the run failed; nothing calls exit().
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "engine/backend/backend_registry.h"

namespace amp {

// Errors that leave the process's CUDA context unusable: every later call fails with them until
// the process ends (the context cannot be reset while the backend's objects live).
inline bool isStickyCudaError(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
      return true;
    default:
      return false;
  }
}

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws a CudaError naming op, detail and the error. A sticky error also marks the GPU
// inventory lost for the session (auto falls back to the CPU, cuda refuses), and the message
// says so.
inline void checkCuda(cudaError_t e, const char* op, const std::string& detail = {}) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  std::string what = std::string("CUDA ") + op + (detail.empty() ? "" : " [" + detail + "]") +
                     ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
  if (isStickyCudaError(e)) {
    markGpuContextLost(what);
    what += ": the GPU context is lost; restart AMP Studio to use the GPU again";
  }
  throw CudaError(what);
}

}  // namespace amp
