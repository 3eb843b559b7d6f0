#include "engine/backend/backend_registry.h"

#include "engine/backend/cuda_plugin_interface.h"

#include <cctype>
#include <cstdio>
#include <mutex>
#include <sstream>
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

namespace {
std::mutex& inventoryMutex() {
  static std::mutex m;
  return m;
}

GpuInventory& inventoryRecord() {  // callers hold inventoryMutex()
  static GpuInventory inventory = [] {
    std::string whyNot;
    if (const CudaProvider* p = cudaProvider(&whyNot)) return p->probe();
    GpuInventory none;
    none.unavailableReason = whyNot;
    return none;
  }();
  return inventory;
}

// The provider when its registry is another copy of this file (the plugin's): the inventory
// and its marks live there. nullptr when the backend is linked in (or absent).
const CudaProvider* foreignRegistry() {
  const CudaProvider* p = cudaProvider(nullptr);
  return p && p->inventory != &gpuInventory ? p : nullptr;
}
}  // namespace

GpuInventory gpuInventory() {
  if (const CudaProvider* p = foreignRegistry()) return p->inventory();
  std::lock_guard lock(inventoryMutex());
  return inventoryRecord();
}

GpuInventory withGpuContextLost(GpuInventory inv, const std::string& error) {
  if (!inv.usable() && inv.unavailableReason.find("context is lost") != std::string::npos)
    return inv;  // the first loss names the error that caused it
  inv.devices.clear();
  inv.unavailableReason =
      error + ": the GPU context is lost; restart AMP Studio to use the GPU again";
  return inv;
}

void markGpuContextLost(const std::string& error) {
  if (const CudaProvider* p = foreignRegistry()) return p->markLost(error);
  std::lock_guard lock(inventoryMutex());
  GpuInventory& inv = inventoryRecord();
  inv = withGpuContextLost(std::move(inv), error);
}

std::string missingArchitectureReason(int ccMajor, int ccMinor, const std::string& builtArchitectures) {
  std::string list = builtArchitectures;
  for (char& ch : list)
    if (ch == ';' || ch == ',') ch = ' ';
  std::istringstream in(list);
  std::string token, built;
  bool any = false;
  const int device = ccMajor * 10 + ccMinor;
  while (in >> token) {
    std::size_t i = 0;
    while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i]))) ++i;
    if (i == 0) return {};  // all, all-major, native: not decidable here
    any = true;
    const int arch = std::stoi(token.substr(0, i));
    std::string rest = token.substr(i);
    const bool specific = !rest.empty() && (rest[0] == 'a' || rest[0] == 'f');
    if (specific) rest.erase(0, 1);
    const bool real = rest != "-virtual", ptx = rest != "-real";
    built += (built.empty() ? "" : ", ") + std::string("sm_") + token;
    const bool sassRuns = real && (specific ? device == arch
                                            : ccMajor == arch / 10 && ccMinor >= arch % 10);
    const bool ptxRuns = ptx && (specific ? device == arch : device >= arch);
    if (sassRuns || ptxRuns) return {};
  }
  if (!any) return {};
  const std::string sm = "sm_" + std::to_string(ccMajor) + std::to_string(ccMinor);
  return "this build has no code for " + sm + " (built for " + built +
         "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(device) +
         " (or a list that includes it)";
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
  const CudaProvider* provider = cudaProvider(nullptr);
  if (!provider) throw std::runtime_error("the CUDA backend cannot run here: " + inv.unavailableReason);
  return provider->make(ordinal, options);
}

}  // namespace amp
