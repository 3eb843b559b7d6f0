// Finding and loading the CUDA plugin (see cuda_plugin_interface.h). dlopen with RTLD_LOCAL: the
// plugin's copy of the engine stays its own (it is linked with its symbols hidden, too), and
// RTLD_NOW so that a missing NVIDIA library is found here, with its name, and not at the first
// call into the GPU.
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/cuda_plugin_interface.h"

#if !defined(AMP_PLUGIN_RELATIVE_DIR) || !defined(AMP_PLUGIN_BUILD_DIR) || !defined(AMP_PLUGIN_BUILT)
#error "AMP_PLUGIN_RELATIVE_DIR, AMP_PLUGIN_BUILD_DIR and AMP_PLUGIN_BUILT come from engine/CMakeLists.txt"
#endif

namespace amp {

namespace {

std::mutex& providerMutex() {
  static std::mutex m;
  return m;
}
const CudaProvider* g_linked = nullptr;

std::string programFolder() {
  std::string buf(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return {};
  buf.resize(static_cast<std::size_t>(n));
  const auto slash = buf.rfind('/');
  return slash == std::string::npos ? std::string() : buf.substr(0, slash);
}

bool isFile(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

struct Loaded {
  const CudaProvider* provider = nullptr;
  std::string whyNot;
};

Loaded loadPlugin() {
  if (!AMP_PLUGIN_BUILT && !std::getenv("AMP_CUDA_PLUGIN"))
    return {nullptr, "this build has no CUDA backend (it was configured without the CUDA toolkit)"};
  const auto candidates = cudaPluginCandidates();
  std::string path;
  for (const std::string& c : candidates)
    if (isFile(c)) {
      path = c;
      break;
    }
  if (path.empty()) {
    std::string where;
    for (const std::string& c : candidates) where += (where.empty() ? "" : ", ") + c;
    return {nullptr, std::string("the CUDA backend is not installed (no ") + kCudaPluginFile + " in " + where +
                         "; the Debian package ampstudio-cuda has it)"};
  }
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    const std::string why = e ? e : "unknown dlopen error";
    // A library it needs is missing (the usual case): say which ones it needs and where from.
    const bool missing = why.find(path) == std::string::npos;
    return {nullptr, "the CUDA backend cannot load: " + why +
                         (missing ? " (it needs NVIDIA's CUDA 13 runtime, cuBLAS and cuDNN 9 on the library path)" : "")};
  }
  using Entry = const CudaProvider* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaPluginEntry));
  const CudaProvider* p = entry ? entry() : nullptr;
  if (!p) {
    dlclose(handle);
    return {nullptr, path + ": not an AMP Studio CUDA plugin (no " + kCudaPluginEntry + ")"};
  }
  if (std::strcmp(p->abi, AMP_CUDA_PROVIDER_ABI) != 0) {
    const std::string theirs = p->abi;
    // Its code may be running (static constructors); unloading it would be the riskier choice.
    return {nullptr, path + ": built by another AMP Studio (" + theirs + "; this program is " +
                         AMP_CUDA_PROVIDER_ABI + "): reinstall ampstudio and ampstudio-cuda of one version"};
  }
  return {p, {}};  // the handle stays open for the process
}

}  // namespace

std::vector<std::string> cudaPluginCandidates() {
  if (const char* env = std::getenv("AMP_CUDA_PLUGIN"); env && *env) return {env};
  std::vector<std::string> out;
  if (const std::string bin = programFolder(); !bin.empty())
    out.push_back(bin + "/" AMP_PLUGIN_RELATIVE_DIR "/" + kCudaPluginFile);
  out.push_back(std::string(AMP_PLUGIN_BUILD_DIR "/") + kCudaPluginFile);
  return out;
}

void linkCudaProvider(const CudaProvider* provider) {
  std::lock_guard lock(providerMutex());
  g_linked = provider;
}

const CudaProvider* cudaProvider(std::string* whyNot) {
  {
    std::lock_guard lock(providerMutex());
    if (g_linked) return g_linked;
  }
  static const Loaded loaded = loadPlugin();  // once per process, thread-safe
  if (!loaded.provider && whyNot) *whyNot = loaded.whyNot;
  return loaded.provider;
}

}  // namespace amp
