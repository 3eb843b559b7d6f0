// How a program reaches the CUDA backend without linking NVIDIA's libraries: the backend lives in
// a plugin, libampstudio-cuda.so, that the registry loads the first time it is asked about GPUs.
// A machine without the CUDA runtime, cuBLAS or cuDNN then runs everything on the CPU and says
// why no GPU is usable, instead of failing to start; the Debian package ships the plugin apart
// (ampstudio-cuda), so the CPU package depends only on what Debian has.
//
// Programs that link the backend in (the GPU test suite and benchmark, carried to machines
// without Qt) register it with linkCudaProvider before asking, and nothing is loaded.
//
// The plugin carries its own copy of the engine core (static), so the inventory and its
// context-loss marks must live in one copy only: the provider's. A program whose provider came
// from the plugin forwards gpuInventory and markGpuContextLost to it (backend_registry.cpp).
#pragma once

#include <memory>
#include <string>

#include "engine/backend/backend_registry.h"

namespace amp {

// Objects of the engine's own types cross between program and plugin, so both must come from
// one build: the plugin is refused when its stamp differs (another version or compiler).
#define AMP_CUDA_PROVIDER_ABI "ampstudio-cuda-provider/1/" AMP_PROJECT_VERSION_TEXT "/" __VERSION__

struct CudaProvider {
  const char* abi;                   // AMP_CUDA_PROVIDER_ABI of the build that made it
  GpuInventory (*probe)();           // the devices, probed now (cuda_devices.cpp)
  std::unique_ptr<Backend> (*make)(int ordinal, const BackendOptions& options);
  GpuInventory (*inventory)();       // gpuInventory of the provider's copy of the registry
  void (*markLost)(const std::string& error);  // markGpuContextLost of that copy
};

// The symbol the plugin exports; returns its provider, or nullptr when this build has no
// CUDA backend.
inline constexpr const char* kCudaPluginEntry = "amp_cuda_provider_v1";
inline constexpr const char* kCudaPluginFile = "libampstudio-cuda.so";

// Uses `provider` (linked into this program) from now on; call before the first gpuInventory().
void linkCudaProvider(const CudaProvider* provider);

// The provider: the linked one, else the plugin, loaded once (thread-safe). nullptr when there is
// none, with the one-line reason in *whyNot (not installed, a library it needs is missing, built
// by another version).
const CudaProvider* cudaProvider(std::string* whyNot);

// Where the plugin is looked for, in order: $AMP_CUDA_PLUGIN (a file), then the library folder
// next to this program's bin/ folder, then the build tree's.
std::vector<std::string> cudaPluginCandidates();

// The backend linked into this program (CUDA builds: engine/backend/cuda_provider.cpp).
const CudaProvider& builtInCudaProvider();

}  // namespace amp
