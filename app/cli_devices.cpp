// `ampstudio-cli devices`: the backends this build can use here. The CPU always; the GPUs the
// CUDA runtime finds (name, compute capability, memory, driver), or one line saying why none is
// usable. Exit code 0 either way: having no GPU is not an error.
#include <cstdio>
#include <cstring>

#include "app/cli_main.h"
#include "engine/backend/backend_registry.h"
#include "engine/config/config_schema.h"  // shownValue

namespace amp::cli {

int cmdDevices(const Args& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::puts("usage: ampstudio-cli devices\n"
                "Lists the compute devices: the CPU, and each usable CUDA GPU (name, compute\n"
                "capability, memory, driver) or why none is usable. backend=auto picks the GPU.");
      return 0;
    }
    printError("devices", "unknown option " + shownValue(a));
    return 2;
  }
  std::printf("cpu     %s\n", makeCpuBackend()->description().c_str());
  for (const std::string& line : gpuInventory().describe()) std::printf("%s\n", line.c_str());
  std::printf("backend=auto uses: %s\n", resolveBackendName("auto").c_str());
  return 0;
}

}  // namespace amp::cli
