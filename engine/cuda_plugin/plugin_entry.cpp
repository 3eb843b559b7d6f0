// The one symbol libampstudio-cuda.so exports (see cuda_plugin_interface.h). Everything else in
// the plugin, its copy of the engine core included, is hidden by its version script, so the
// program's engine and the plugin's never resolve to each other's functions.
#include "engine/backend/cuda_plugin_interface.h"

extern "C" __attribute__((visibility("default"))) const amp::CudaProvider* amp_cuda_provider_v1() {
  const amp::CudaProvider* provider = &amp::builtInCudaProvider();
  // The plugin's registry probes through its own backend, never by loading a plugin.
  amp::linkCudaProvider(provider);
  return provider;
}
