// Which backends exist and can run here, without building one just to ask: the CPU always; the
// CUDA backend when this build has it and the CUDA runtime finds a usable device. The GPU list is
// probed once per process (device count and properties; no CUDA context is created), so the UI
// and `ampstudio-cli devices` can call it freely. "auto" means the GPU when one is usable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace amp {

struct GpuDevice {
  int ordinal = 0;
  std::string name;
  int ccMajor = 0, ccMinor = 0;    // compute capability
  std::int64_t memoryBytes = 0;    // total device memory
  std::string text() const;        // "cuda:0  NVIDIA H100 80GB HBM3  sm_90  79.1 GiB"
};

struct GpuInventory {
  bool built = false;         // this build has the CUDA backend
  int driverVersion = 0;      // CUDA version the driver supports (12040 = 12.4), 0 without one
  int runtimeVersion = 0;     // CUDA runtime this build uses
  std::vector<GpuDevice> devices;  // usable devices only
  std::string unavailableReason;   // one line when none is usable, else empty
  bool usable() const { return !devices.empty(); }
  // The devices, one per line, with the driver; or the reason none is usable.
  std::vector<std::string> describe() const;
};

// Probed on first call, then cached for the process; a copy, since a lost GPU context
// (markGpuContextLost, from any thread) changes it.
GpuInventory gpuInventory();

// After a sticky CUDA error (illegal address, launch failure, ECC, ...) the process's CUDA
// context is unusable until the process ends. withGpuContextLost is the inventory then: no usable
// device, and a reason naming the error and saying to restart. markGpuContextLost applies it to
// this process's inventory, so backend=auto picks the CPU and backend=cuda refuses in one line.
GpuInventory withGpuContextLost(GpuInventory inv, const std::string& error);
void markGpuContextLost(const std::string& error);

// Whether this build has GPU code a device of compute capability ccMajor.ccMinor can run, given
// the built architectures as CMAKE_CUDA_ARCHITECTURES spells them, separated by spaces or
// semicolons ("75 80 86 89 90", "90-real", "86-virtual", "90a"). "XY" embeds sm_XY code (runs on
// XY up to X9) and compute_XY PTX (JIT-compiled on any later device); "-real" only the former,
// "-virtual" only the latter; an "a"/"f" suffix is for that exact device. Empty when the device
// can run this build (also for "all", "all-major", "native" or an empty list: not decidable
// here); otherwise the one-line reason, with the rebuild to do.
std::string missingArchitectureReason(int ccMajor, int ccMinor, const std::string& builtArchitectures);

struct BackendOptions {
  bool tf32 = false;  // fp32 GEMMs on the GPU may use TF32 tensor cores
  // 16-bit GEMMs on the GPU may reduce split-K partials in the output's dtype (PyTorch's default)
  bool reducedPrecisionReduction = false;
};

// "cpu" | "cuda" | "cuda:N" | "auto" (the GPU when one is usable, else the CPU). Throws
// std::runtime_error with a one-line reason when the backend cannot be made.
std::unique_ptr<Backend> makeBackend(const std::string& name, const BackendOptions& options = {});
// What "auto" (or any name) resolves to here: "cpu" or "cuda".
std::string resolveBackendName(const std::string& name);

// The CUDA backend's side of the registry (engine/backend/cuda_devices.cpp, CUDA builds only),
// reached through a CudaProvider (cuda_plugin_interface.h), never called by the core.
GpuInventory probeCudaDevices();
std::unique_ptr<Backend> makeCudaBackend(int ordinal, const BackendOptions& options);

}  // namespace amp
