// Device enumeration for the registry: the CUDA runtime's device count and properties, and one
// line saying why no device is usable. cudaGetDeviceCount leaves the count untouched when it
// fails (error 35 without a driver), so the error decides, never the count.
#include <cuda_runtime.h>

#include "engine/backend/backend_registry.h"
#include "engine/backend/cuda_backend.h"

namespace amp {

namespace {
// The oldest compute capability the backend supports (Turing); which devices this build has
// code for is decided from the architectures it was compiled for (cmake/AmpCuda.cmake).
constexpr int kMinComputeCapability = 75;
#if !defined(AMP_CUDA_ARCHITECTURES)
#error "AMP_CUDA_ARCHITECTURES (the built CUDA architectures) comes from cmake/AmpCuda.cmake"
#endif

std::string versionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

GpuInventory probeCudaDevices() {
  GpuInventory inv;
  inv.built = true;
  cudaRuntimeGetVersion(&inv.runtimeVersion);
  if (cudaDriverGetVersion(&inv.driverVersion) != cudaSuccess) inv.driverVersion = 0;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (e == cudaErrorInsufficientDriver && inv.driverVersion == 0)
      inv.unavailableReason = "no NVIDIA driver is installed (the CUDA backend needs one)";
    else if (e == cudaErrorInsufficientDriver)
      inv.unavailableReason = "the NVIDIA driver (CUDA " + versionText(inv.driverVersion) +
                              ") is older than this build's CUDA runtime (" +
                              versionText(inv.runtimeVersion) + "); update the driver";
    else if (e == cudaErrorNoDevice)
      inv.unavailableReason = "the NVIDIA driver finds no CUDA device";
    else
      inv.unavailableReason = std::string("CUDA reports: ") + cudaGetErrorString(e);
    return inv;
  }
  std::string skipped;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    GpuDevice d{i, prop.name, prop.major, prop.minor, static_cast<std::int64_t>(prop.totalGlobalMem)};
    if (prop.major * 10 + prop.minor < kMinComputeCapability) {
      skipped = d.name + " has compute capability " + std::to_string(prop.major) + "." +
                std::to_string(prop.minor) + "; this build needs 7.5 (Turing) or newer";
      continue;
    }
    if (std::string why = missingArchitectureReason(prop.major, prop.minor, AMP_CUDA_ARCHITECTURES);
        !why.empty()) {
      skipped = d.name + ": " + why;
      continue;
    }
    inv.devices.push_back(d);
  }
  if (inv.devices.empty())
    inv.unavailableReason = skipped.empty() ? "the NVIDIA driver finds no CUDA device" : skipped;
  return inv;
}

std::unique_ptr<Backend> makeCudaBackend(int ordinal, const BackendOptions& options) {
  return std::make_unique<CudaBackend>(ordinal, options.tf32, options.reducedPrecisionReduction);
}

}  // namespace amp
