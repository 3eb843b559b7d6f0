// The CUDA backend as a CudaProvider: what the plugin's entry point returns, and what the GPU
// test programs link in directly. Its inventory and marks are this copy of the registry's.
#include "engine/backend/cuda_plugin_interface.h"

namespace amp {

const CudaProvider& builtInCudaProvider() {
  static const CudaProvider provider{AMP_CUDA_PROVIDER_ABI, &probeCudaDevices, &makeCudaBackend, &gpuInventory,
                                     &markGpuContextLost};
  return provider;
}

}  // namespace amp
