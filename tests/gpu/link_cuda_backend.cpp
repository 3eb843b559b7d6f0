// The GPU programs link the CUDA backend in (they are carried to machines without Qt or an
// install), so the registry uses it directly instead of loading libampstudio-cuda.so.
#include "engine/backend/cuda_plugin_interface.h"

namespace {
const bool kLinked = (amp::linkCudaProvider(&amp::builtInCudaProvider()), true);
}  // namespace
