#include "engine/backend/backend_registry.h"

#include <cstdio>
#include <stdexcept>

namespace amp {

std::string GpuDevice::text() const {
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB", double(memoryBytes) / double(1ll << 30));
  return "cuda:" + std::to_string(ordinal) + "  " + name + "  sm_" + std::to_string(ccMajor) +
         std::to_string(ccMinor) + "  " + mem;
}

namespace {
std::string cudaVersionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

std::vector<std::string> GpuInventory::describe() const {
  if (!usable()) return {"no usable GPU: " + unavailableReason};
  std::vector<std::string> lines;
  for (const GpuDevice& d : devices) lines.push_back(d.text());
  lines.push_back("driver supports CUDA " + cudaVersionText(driverVersion) + "; runtime CUDA " +
                  cudaVersionText(runtimeVersion));
  return lines;
}

const GpuInventory& gpuInventory() {
  static const GpuInventory inventory = [] {
#if defined(AMP_HAVE_CUDA)
    return probeCudaDevices();
#else
    GpuInventory none;
    none.unavailableReason =
        "this build has no CUDA backend (it was configured without the CUDA toolkit)";
    return none;
#endif
  }();
  return inventory;
}

std::string resolveBackendName(const std::string& name) {
  if (name == "auto") return gpuInventory().usable() ? "cuda" : "cpu";
  if (name.rfind("cuda", 0) == 0) return "cuda";
  return name;
}

std::unique_ptr<Backend> makeBackend(const std::string& name, const BackendOptions& options) {
  const std::string resolved = resolveBackendName(name);
  if (resolved == "cpu") return makeCpuBackend();
  if (resolved != "cuda") throw std::runtime_error("unknown backend '" + name + "' (cpu | cuda | auto)");
  const GpuInventory& inv = gpuInventory();
  if (!inv.usable()) throw std::runtime_error("the CUDA backend cannot run here: " + inv.unavailableReason);
  int ordinal = inv.devices.front().ordinal;
  if (name.size() > 5 && name[4] == ':') {
    try {
      ordinal = std::stoi(name.substr(5));
    } catch (const std::exception&) {
      throw std::runtime_error("backend '" + name + "': expected cuda:N");
    }
    bool known = false;
    for (const GpuDevice& d : inv.devices) known = known || d.ordinal == ordinal;
    if (!known) throw std::runtime_error("backend '" + name + "': no usable device with that number");
  }
#if defined(AMP_HAVE_CUDA)
  return makeCudaBackend(ordinal, options);
#else
  (void)options;
  (void)ordinal;
  throw std::runtime_error("this build has no CUDA backend");
#endif
}

}  // namespace amp
