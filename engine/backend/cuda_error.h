// CUDA runtime failures as exceptions naming the op, its shapes and the CUDA error string: the
// worker shows the message and marks the run failed; nothing calls exit().
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace amp {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline void checkCuda(cudaError_t e, const char* op, const std::string& detail = {}) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw CudaError(std::string("CUDA ") + op + (detail.empty() ? "" : " [" + detail + "]") + ": " +
                  cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")");
}

}  // namespace amp
