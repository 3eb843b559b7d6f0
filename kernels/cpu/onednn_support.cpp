#include "kernels/cpu/onednn_support.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>

#include "kernels/cpu/chunked.h"
#include "kernels/cpu/convert.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace amp::cpu {

namespace {
std::atomic<bool> g_forceBf16Emulation{false};
}  // namespace

const char* elemTypeName(ElemType t) {
  switch (t) {
    case ElemType::F32: return "fp32";
    case ElemType::BF16: return "bf16";
    case ElemType::F16: return "fp16";
  }
  return "?";
}

dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

std::string onednnIsaName() {
  using dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case cpu_isa::sse41: return "SSE4.1";
    case cpu_isa::avx: return "AVX";
    case cpu_isa::avx2: return "AVX2";
    case cpu_isa::avx2_vnni: return "AVX2-VNNI";
    case cpu_isa::avx512_mic:
    case cpu_isa::avx512_mic_4ops: return "AVX-512 (Xeon Phi)";
    case cpu_isa::avx512_core: return "AVX-512";
    case cpu_isa::avx512_core_vnni: return "AVX-512 VNNI";
    case cpu_isa::avx512_core_bf16: return "AVX512-BF16";
    case cpu_isa::avx512_core_amx: return "AMX";
    default: break;
  }
  return "x86-64";
}

void setForceBf16Emulation(bool force) {
  g_forceBf16Emulation.store(force, std::memory_order_relaxed);
}
bool forceBf16Emulation() { return g_forceBf16Emulation.load(std::memory_order_relaxed); }

std::byte* scratchArena(std::size_t bytes) {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<std::byte[], Free> buffer;
  thread_local std::size_t capacity = 0;
  if (bytes > capacity) {
    buffer.reset();
    buffer.reset(static_cast<std::byte*>(std::aligned_alloc(64, alignScratch(bytes))));
    if (!buffer) {
      capacity = 0;
      throw std::bad_alloc();
    }
    capacity = bytes;
  }
  return buffer.get();
}

void widenToF32(ElemType t, const void* src, float* dst, std::size_t n) {
  const auto* half = static_cast<const std::uint16_t*>(src);
  const bool bf16 = t == ElemType::BF16;
  forEachChunk(static_cast<std::int64_t>(n), [&](std::int64_t at, std::int64_t len) {
    if (bf16)
      convertBf16ToF32(half + at, dst + at, static_cast<std::size_t>(len));
    else
      convertF16ToF32(half + at, dst + at, static_cast<std::size_t>(len));
  });
}

void narrowFromF32(ElemType t, const float* src, void* dst, std::size_t n) {
  auto* half = static_cast<std::uint16_t*>(dst);
  const bool bf16 = t == ElemType::BF16;
  forEachChunk(static_cast<std::int64_t>(n), [&](std::int64_t at, std::int64_t len) {
    if (bf16)
      convertF32ToBf16(src + at, half + at, static_cast<std::size_t>(len));
    else
      convertF32ToF16(src + at, half + at, static_cast<std::size_t>(len));
  });
}

void throwComputeError(const std::string& op, const std::string& what, const char* libraryMessage) {
  throw ComputeLibraryError(op + " failed for " + what + " on this CPU (oneDNN ISA " +
                            onednnIsaName() + "): " + libraryMessage);
}

}  // namespace amp::cpu
